// Publish that cannot lose work: a checkpoint is published only onto the head it was built on
// (E_STALE_BASE otherwise), and `--rebase` carries a session's changes onto a newer head by a
// path-level three-way merge. A path changed on one side only is taken from that side; changed the
// same way on both, it is fine; changed differently on both (a delete against a modify, a retype
// against anything below it) is a conflict, and then nothing changes.
import type { Digest } from '../../model/canonical-json.js';
import { PdbError } from '../../model/errors.js';
import { SNAPSHOT_VERSION, createChangeset, diffEntries, entryKey, sortEntries, type Entry, type Snapshot } from '../../model/snapshot.js';
import { openOperation } from '../locks/operation.js';
import { appendCheckpointLog, readSession, writeSession, type StoreContext } from '../records/session-record.js';

export interface MergeResult {
  entries: Entry[];
  conflicts: string[];
}

const keyOf = (e: Entry | undefined): string => (e ? entryKey(e) : 'absent');

/** The parent directory of a contract path, or null at the top. */
function parentOf(path: string): string | null {
  const i = path.lastIndexOf('/');
  return i < 0 ? null : path.slice(0, i);
}

/**
 * Three-way merge of `ours` and `theirs`, both descended from `base`, at path level. Conflicts are
 * the paths changed differently on both sides, plus every entry the merge would leave without a
 * directory above it (and that parent): a retype or delete on one side under which the other side
 * added or kept something.
 */
export function mergeEntries(base: Entry[], ours: Entry[], theirs: Entry[]): MergeResult {
  const theirMap = new Map(theirs.map((e) => [e.path, e]));
  const baseMap = new Map(base.map((e) => [e.path, e]));
  const conflicts = new Set<string>();
  const merged = new Map(theirMap);
  for (const c of diffEntries(base, ours)) {
    const mine = keyOf(c.after ?? undefined);
    const other = keyOf(theirMap.get(c.path));
    const changedThere = other !== keyOf(baseMap.get(c.path));
    if (changedThere && other !== mine) conflicts.add(c.path);
    else if (c.after) merged.set(c.path, c.after);
    else merged.delete(c.path);
  }
  for (const e of merged.values()) {
    const parent = parentOf(e.path);
    if (parent !== null && merged.get(parent)?.kind !== 'dir') {
      conflicts.add(e.path);
      conflicts.add(parent);
    }
  }
  return {
    entries: sortEntries([...merged.values()]),
    conflicts: sortEntries([...conflicts].map((path) => ({ path }))).map((c) => c.path),
  };
}

/** The Snapshot a checkpoint was built on (its own `base`, which a rebase sets to the head it merged onto). */
export function checkpointBase(ctx: StoreContext, snapshot: Digest): Digest | null {
  return ctx.store.getDocument<Snapshot>(snapshot, 'Snapshot').base;
}

/**
 * Merge the checkpoint `cp` (built on `cpBase`) onto `head`, store the result as a new checkpoint
 * of session `name` based on `head` (a Snapshot and a Changeset head -> result, in its checkpoint
 * log, so gc keeps both), and return it. E_PUBLISH_CONFLICT lists the paths and changes nothing.
 * Runs under the environment's lock, so `head` does not move meanwhile.
 */
export async function rebaseCheckpoint(
  ctx: StoreContext,
  name: string,
  env: string,
  cp: { snapshot: Digest; base: Digest },
  head: Digest,
): Promise<Digest> {
  const get = (d: Digest) => ctx.store.getDocument<Snapshot>(d, 'Snapshot');
  const [base, ours, theirs] = [get(cp.base), get(cp.snapshot), get(head)];
  const { entries, conflicts } = mergeEntries(base.entries, ours.entries, theirs.entries);
  if (conflicts.length > 0)
    throw new PdbError(
      'E_PUBLISH_CONFLICT',
      `session "${name}" and environment "${env}" changed the same paths differently since ${cp.base}: ${conflicts.join(', ')}`,
      {
        hint: `Nothing was published. Start a session from the new head (pdb-env create NAME --env ${env}), redo the change there, checkpoint and publish it with --expect ${head}.`,
      },
    );
  const op = await openOperation(ctx, { objects: `publish --rebase ${name}` });
  try {
    const result: Snapshot = { version: SNAPSHOT_VERSION, base: head, excludes: ours.excludes, entries };
    const snapshot = await ctx.store.putSnapshot(result);
    const changeset = await ctx.store.putDocument(createChangeset(head, snapshot, diffEntries(theirs.entries, entries)));
    const rec = await readSession(ctx.store, name);
    rec.lastCheckpoint = { snapshot, changeset, at: new Date().toISOString() };
    await appendCheckpointLog(ctx.store, name, rec.lastCheckpoint);
    await writeSession(ctx.store, rec);
    return snapshot;
  } finally {
    await op.release();
  }
}
