// Object integrity: which objects the store still needs (everything a Snapshot or Changeset
// reachable from environments, sessions and checkpoints refers to), which of those are missing,
// and `verify`, which re-hashes every object, moves corrupt ones to the quarantine and then lists
// what is missing, so a repair (a re-import) knows what to bring back.
import { readdir } from 'node:fs/promises';
import { isDigest, type Digest } from '../model/canonical-json.js';
import { isPdbError } from '../model/errors.js';
import type { ObjectStore } from '../model/object-store.js';
import type { Changeset, Snapshot } from '../model/snapshot.js';
import { envHead } from './environments.js';
import { SESSION_NAME_PATTERN, readSession, type StoreContext } from './records.js';

/** An object the store needs but does not have (or has with wrong bytes), and who needs it. */
export interface ObjectProblem {
  digest: Digest;
  /** Who refers to it: "environment main", "lib/a.ts in Snapshot sha256:...". */
  ref: string;
}

export interface VerifyResult {
  checked: number;
  /** Objects whose bytes did not match their name; moved to the quarantine. */
  corrupt: Digest[];
  /** Objects referred to by a reachable Snapshot or Changeset but absent (the corrupt ones among them). */
  missing: ObjectProblem[];
  /** Where corrupt objects were moved. */
  quarantine: string;
}

/** The roots: environment heads, session bases and last checkpoints (damaged records are skipped: doctor reports them). */
async function roots(ctx: StoreContext): Promise<ObjectProblem[]> {
  const out: ObjectProblem[] = [];
  for (const f of (await readdir(ctx.store.paths.environments).catch(() => [] as string[])).sort()) {
    const env = f.endsWith('.json') ? f.slice(0, -5) : '';
    if (!SESSION_NAME_PATTERN.test(env)) continue;
    const head = await envHead(ctx.store, env).catch(() => null);
    if (head) out.push({ digest: head, ref: `environment ${env}` });
  }
  for (const name of (await readdir(ctx.store.paths.sessions).catch(() => [] as string[])).sort()) {
    if (!SESSION_NAME_PATTERN.test(name)) continue;
    const rec = await readSession(ctx.store, name).catch(() => null);
    if (!rec) continue;
    out.push({ digest: rec.base, ref: `session ${name} (base)` });
    if (rec.lastCheckpoint) {
      out.push({ digest: rec.lastCheckpoint.snapshot, ref: `session ${name} (checkpoint)` });
      out.push({ digest: rec.lastCheckpoint.changeset, ref: `session ${name} (changeset)` });
    }
  }
  return out;
}

/** Read a document; null when it is missing, corrupt or not JSON (each reported by the caller's checks). */
function readDoc<T>(store: ObjectStore, digest: Digest): T | 'missing' | 'corrupt' | null {
  try {
    return store.getDocument<T>(digest);
  } catch (err) {
    if (isPdbError(err, 'E_OBJECT_MISSING')) return 'missing';
    if (isPdbError(err, 'E_OBJECT_CORRUPT')) return 'corrupt';
    return null;
  }
}

/**
 * Walk every reachable document once: missing objects (documents and file bytes) and documents
 * whose bytes are wrong. File objects are only checked for presence here; verify re-hashes them.
 */
export async function checkReachable(ctx: StoreContext): Promise<{ missing: ObjectProblem[]; corrupt: ObjectProblem[] }> {
  const missing = new Map<Digest, string>();
  const corrupt: ObjectProblem[] = [];
  const seen = new Set<Digest>();
  const queue = await roots(ctx);
  const files = new Map<Digest, string>();
  while (queue.length > 0) {
    const { digest, ref } = queue.shift()!;
    if (seen.has(digest)) continue;
    seen.add(digest);
    const doc = readDoc<Partial<Snapshot & Changeset>>(ctx.store, digest);
    if (doc === 'missing') missing.set(digest, ref);
    else if (doc === 'corrupt') corrupt.push({ digest, ref });
    if (!doc || typeof doc !== 'object') continue;
    if (isDigest(doc.base)) queue.push({ digest: doc.base, ref: `base of ${digest}` });
    if (isDigest(doc.result)) queue.push({ digest: doc.result, ref: `result of ${digest}` });
    for (const e of Array.isArray(doc.entries) ? doc.entries : [])
      if (e.kind === 'file' && !files.has(e.digest)) files.set(e.digest, `${e.path} in Snapshot ${digest}`);
  }
  for (const [digest, ref] of files) if (!ctx.store.has(digest) && !missing.has(digest)) missing.set(digest, ref);
  return { missing: [...missing].map(([digest, ref]) => ({ digest, ref })).sort((a, b) => a.digest.localeCompare(b.digest)), corrupt };
}

/** Re-hash every object (corrupt ones go to the quarantine), then list what reachable documents miss. */
export async function verifyStore(ctx: StoreContext): Promise<VerifyResult> {
  const { checked, corrupt } = await ctx.store.verifyAll({ quarantine: true });
  const { missing } = await checkReachable(ctx);
  return { checked, corrupt, missing, quarantine: ctx.store.paths.quarantine };
}
