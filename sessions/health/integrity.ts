// Object integrity: which objects the store still needs (everything a Snapshot or Changeset
// reachable from environments, sessions and checkpoints refers to), which of those are missing,
// and `verify`, which re-hashes every object, moves corrupt ones to the quarantine and then lists
// what is missing, so a repair (a re-import) knows what to bring back.
import { readdir } from 'node:fs/promises';
import { isDigest, type Digest } from '../../model/canonical-json.js';
import { isPdbError } from '../../model/errors.js';
import type { ObjectStore } from '../../model/store/object-store.js';
import type { Change, Changeset, Entry, Snapshot } from '../../model/snapshot.js';
import type { StoreContext } from '../records/session-record.js';
import { envHead, snapshotProblem } from '../records/environments.js';
import { SESSION_NAME_PATTERN } from '../records/names.js';
import { collectRoots, type Root } from './roots.js';

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
  /** Environment heads that do not name a Snapshot (a Changeset, a file object). */
  badHeads: Array<{ env: string; digest: Digest; problem: string }>;
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

export interface Reachable {
  missing: ObjectProblem[];
  corrupt: ObjectProblem[];
  /** Every object the roots reach (documents and file bytes), present or not. */
  reached: Set<Digest>;
}

/**
 * Walk every reachable document once, from `roots` (default: the store's): missing objects
 * (documents and file bytes) and documents whose bytes are wrong. File objects are only checked
 * for presence here; verify re-hashes them.
 */
export async function checkReachable(ctx: StoreContext, roots?: Root[]): Promise<Reachable> {
  const missing = new Map<Digest, string>();
  const corrupt: ObjectProblem[] = [];
  const seen = new Set<Digest>();
  const queue: Array<{ digest: Digest; ref: string }> = [...(roots ?? (await collectRoots(ctx)).roots)];
  const files = new Map<Digest, string>();
  const parts = new Map<Digest, string>();
  const fileEntry = (e: Entry | null | undefined, ref: () => string) => {
    if (e?.kind === 'file' && isDigest(e.digest) && !files.has(e.digest)) files.set(e.digest, `${e.path} in ${ref()}`);
  };
  while (queue.length > 0) {
    const { digest, ref } = queue.pop()!;
    if (seen.has(digest)) continue;
    seen.add(digest);
    const doc = readDoc<Partial<Snapshot & Changeset>>(ctx.store, digest);
    if (doc === 'missing') missing.set(digest, ref);
    else if (doc === 'corrupt') corrupt.push({ digest, ref });
    // A document stored as chunks reaches its list and chunks too (model/store/chunks.ts).
    for (const part of ctx.store.chunkParts(digest)) if (!parts.has(part)) parts.set(part, `a chunk of ${digest} (${ref})`);
    if (!doc || typeof doc !== 'object') continue;
    if (isDigest(doc.base)) queue.push({ digest: doc.base, ref: `base of ${digest}` });
    if (isDigest(doc.result)) queue.push({ digest: doc.result, ref: `result of ${digest}` });
    for (const e of Array.isArray(doc.entries) ? doc.entries : []) fileEntry(e, () => `Snapshot ${digest}`);
    for (const c of Array.isArray(doc.changes) ? (doc.changes as Change[]) : []) {
      fileEntry(c?.before, () => `Changeset ${digest}`);
      fileEntry(c?.after, () => `Changeset ${digest}`);
    }
  }
  for (const [digest, ref] of parts) {
    seen.add(digest);
    if (!ctx.store.hasPart(digest) && !missing.has(digest)) missing.set(digest, ref);
  }
  for (const [digest, ref] of files) {
    seen.add(digest);
    if (!ctx.store.has(digest) && !missing.has(digest)) missing.set(digest, ref);
  }
  return {
    missing: [...missing].map(([digest, ref]) => ({ digest, ref })).sort((a, b) => a.digest.localeCompare(b.digest)),
    corrupt,
    reached: seen,
  };
}

/** Re-hash every object (corrupt ones go to the quarantine), then list what reachable documents miss. */
export async function verifyStore(ctx: StoreContext): Promise<VerifyResult> {
  const { checked, corrupt } = await ctx.store.verifyAll({ quarantine: true });
  const { missing } = await checkReachable(ctx);
  const badHeads: VerifyResult['badHeads'] = [];
  for (const f of (await readdir(ctx.store.paths.environments).catch(() => [] as string[])).sort()) {
    const env = f.endsWith('.json') ? f.slice(0, -5) : '';
    if (!SESSION_NAME_PATTERN.test(env)) continue;
    const digest = await envHead(ctx.store, env).catch(() => null); // an unreadable head file: doctor reports it
    const problem = digest && snapshotProblem(ctx.store, digest);
    if (digest && problem) badHeads.push({ env, digest, problem: `the head of environment ${env} ${problem}` });
  }
  return { checked, corrupt, missing, quarantine: ctx.store.paths.quarantine, badHeads };
}
