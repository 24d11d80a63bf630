// What the store keeps: the roots from which gc marks (and verify checks) every reachable object.
//
// - every environment's head and its published history (`<env>.history.jsonl`, append-only: every
//   head it ever had, so published work is never collected; the `previous` of the head file too);
// - every session's base, last checkpoint and its last `history.keep` checkpoints (`checkpoints.jsonl`,
//   sessions/history/keep.ts; default 100; a pdb-env.json that cannot be read keeps them all);
// - the last import of every source (its tree index), so `create --from` of an unchanged source
//   stays a stat walk after a gc;
// - the base of a create still running (its intent), and the Changeset of an apply not yet finished;
// - every pinned digest (`pdb-env pin`).
//
// A session whose record cannot be read could refer to anything: while one exists, the set is
// incomplete and gc sweeps nothing.
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isDigest, type Digest } from '../../model/canonical-json.js';
import { isPdbError } from '../../model/errors.js';
import { readTreeIndex } from '../../model/scan/tree-index.js';
import { envFile, envHead, historyFile } from '../records/environments.js';
import { historyKeep } from '../history/keep.js';
import { listPins } from './pins.js';
import { readCheckpointLog, readSession, type StoreContext } from '../records/session-record.js';
import { SESSION_NAME_PATTERN } from '../records/names.js';

export interface Root {
  digest: Digest;
  /** Who refers to it: "environment main", "session a (base)". */
  ref: string;
  /** A Snapshot whose materialized bases are kept too (heads, session bases, last imports, pins). */
  keepsBases: boolean;
}

export interface Roots {
  roots: Root[];
  /** Why the set may miss something (a damaged session record); gc sweeps nothing then. */
  incomplete: string[];
  /** Source tree indexes whose source directory is gone (gc removes them, and they keep nothing). */
  orphanIndexes: string[];
}

/** Digests named in a JSON-lines file under `keys` (a line cut short by a crash is skipped). */
async function digestsInLog(file: string, keys: string[]): Promise<Digest[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const out: Digest[] = [];
  for (const line of text.split('\n')) {
    try {
      const doc = JSON.parse(line) as Record<string, unknown>;
      for (const k of keys) if (isDigest(doc[k])) out.push(doc[k]);
    } catch {
      // an empty or half-written line
    }
  }
  return out;
}

async function envRoots(ctx: StoreContext, out: Roots): Promise<void> {
  for (const f of (await readdir(ctx.store.paths.environments).catch(() => [] as string[])).sort()) {
    const env = f.endsWith('.json') ? f.slice(0, -5) : '';
    if (!SESSION_NAME_PATTERN.test(env)) continue;
    const head = await envHead(ctx.store, env).catch((err: unknown) => {
      if (!isPdbError(err, 'E_RECORD_CORRUPT')) throw err;
      out.incomplete.push(`the head of environment ${env} cannot be read`);
      return null;
    });
    if (head) out.roots.push({ digest: head, ref: `environment ${env}`, keepsBases: true });
    const previous = await readFile(envFile(ctx.store, env), 'utf8')
      .then((t) => (JSON.parse(t) as { previous?: unknown }).previous)
      .catch(() => null);
    if (isDigest(previous)) out.roots.push({ digest: previous, ref: `environment ${env} (previous head)`, keepsBases: false });
    for (const d of await digestsInLog(historyFile(ctx.store, env), ['head', 'previous']))
      out.roots.push({ digest: d, ref: `environment ${env} (history)`, keepsBases: false });
  }
}

async function sessionRoots(ctx: StoreContext, out: Roots): Promise<void> {
  for (const name of (await readdir(ctx.store.paths.sessions).catch(() => [] as string[])).sort()) {
    if (!SESSION_NAME_PATTERN.test(name)) continue;
    let rec;
    try {
      rec = await readSession(ctx.store, name);
    } catch (err) {
      if (isPdbError(err, 'E_SESSION_NOT_FOUND')) continue; // discarded meanwhile, or not a directory
      if (!isPdbError(err, 'E_RECORD_CORRUPT')) throw err;
      out.incomplete.push(`the record of session ${name} cannot be read`);
      continue;
    }
    out.roots.push({ digest: rec.base, ref: `session ${name} (base)`, keepsBases: true });
    if (rec.lastCheckpoint) {
      out.roots.push({ digest: rec.lastCheckpoint.snapshot, ref: `session ${name} (checkpoint)`, keepsBases: false });
      out.roots.push({ digest: rec.lastCheckpoint.changeset, ref: `session ${name} (changeset)`, keepsBases: false });
    }
    let keep: number;
    try {
      keep = historyKeep(rec.sourceDir);
    } catch {
      keep = Infinity; // a history.keep that is not a number: nothing of the history is collected
    }
    for (const d of await readCheckpointLog(ctx.store, name, keep))
      out.roots.push({ digest: d, ref: `session ${name} (earlier checkpoint)`, keepsBases: false });
  }
}

async function sourceRoots(ctx: StoreContext, out: Roots): Promise<void> {
  for (const f of (await readdir(ctx.store.paths.sources).catch(() => [] as string[])).sort()) {
    if (!f.endsWith('.index')) continue;
    const file = join(ctx.store.paths.sources, f);
    const index = readTreeIndex(file);
    if (!index?.header.snapshot) continue;
    if (index.header.source && !existsSync(index.header.source)) out.orphanIndexes.push(file);
    else
      out.roots.push({ digest: index.header.snapshot, ref: `the last import of ${index.header.source ?? 'a source'}`, keepsBases: true });
  }
}

/** Every root of the store, with what makes the set incomplete. */
export async function collectRoots(ctx: StoreContext): Promise<Roots> {
  const out: Roots = { roots: [], incomplete: [], orphanIndexes: [] };
  await envRoots(ctx, out);
  await sessionRoots(ctx, out);
  await sourceRoots(ctx, out);
  for (const i of await ctx.journal.list()) {
    if (i.live && isDigest(i.detail.base)) out.roots.push({ digest: i.detail.base, ref: `a running ${i.op}`, keepsBases: true });
    // An apply, running or unfinished, needs its Changeset and the bytes on both sides of it (to finish or to roll back).
    if (i.op === 'apply' && isDigest(i.detail.changeset))
      out.roots.push({ digest: i.detail.changeset, ref: `an unfinished apply (${i.id})`, keepsBases: false });
    // A restore, running or unfinished, needs the tree it restores to (and the one it left, its safety checkpoint).
    if (i.op === 'restore')
      for (const k of ['target', 'safety'])
        if (isDigest(i.detail[k]))
          out.roots.push({ digest: i.detail[k] as Digest, ref: `an unfinished restore (${i.id})`, keepsBases: false });
  }
  for (const digest of await listPins(ctx.store)) out.roots.push({ digest, ref: 'a pin', keepsBases: true });
  return out;
}
