// `pdb-env restore NAME --to REF`: the session root becomes exactly a Snapshot of its history, in
// place. Under one exclusive handle of the session (lease, object lease and intent together, as a
// checkpoint holds): first a checkpoint of the tree as it is (the safety checkpoint, labelled
// "before restore to REF"; if it cannot be taken nothing is restored), then the intent records
// {safety, target} (synced), then the paths that differ are written (restore-fs.ts), then the
// restored tree (labelled "restore to REF", restoredFrom the target's number) becomes the
// session's last checkpoint: recorded from what is known when the target is a checkpoint of this
// base (recordKnown), else checkpointed by a scan.
//
// The paths that differ come from the two checkpoints' Changesets against the session's base
// (log.ts diffHistory): O(changes), no Snapshot or tree index read when a few paths differ.
//
// Crash safety is roll forward: an intent without a safety checkpoint means nothing was written
// (gc drops it: the tree before); one with it is finished by gc, which scans the root (every file
// hashed), writes what still differs from the target and records the checkpoint. Nothing is lost:
// the tree before is the safety checkpoint, and a failure while staging (a corrupt or missing
// object, a full disk) stops before anything of the tree changed.
import type { Digest } from '../../model/canonical-json.js';
import { crashPoint } from '../../model/crash-point.js';
import { PdbError, isPdbError, toPdbError } from '../../model/errors.js';
import type { ProgressFn } from '../../model/progress.js';
import { scanTree } from '../../model/scan/scan.js';
import { createChangeset, diffEntries, withSnapshotBase, type Change, type Snapshot } from '../../model/snapshot.js';
import { ownCaller, recordCheckpoint, type CheckpointResult } from '../lifecycle/checkpoint.js';
import { resumeSession, type OpenSession } from '../lifecycle/open.js';
import { openOperation } from '../locks/operation.js';
import type { Intent } from '../records/journal.js';
import { appendCheckpointLog, readSession, writeSession, type StoreContext } from '../records/session-record.js';
import { assertInHistory, changesFromBase, diffHistory, resolveRef, type ResolvedRef } from './log.js';
import { removeRestoreStaging, writeTree, type TreeWrite } from './restore-fs.js';

export interface RestoreResult {
  session: string;
  /** The REF as given, the Snapshot it named and its checkpoint number (0: the base). */
  ref: string;
  target: Digest;
  from: number;
  /** The checkpoint of the tree before (restore --to its number undoes this restore). */
  safety: { number: number; snapshot: Digest };
  /** The checkpoint of the restored tree, now the session's last. */
  checkpoint: { number: number; snapshot: Digest; changeset: Digest };
  written: number;
  removed: number;
  made: number;
  /** Directories left because they hold excluded entries (which no Snapshot has). */
  kept: string[];
  /**
   * The restored tree, scanned, is the target's entry for entry (false: something wrote into the
   * root meanwhile); null when it was recorded from what the restore wrote, without a scan.
   */
  exact: boolean | null;
}

/** Restore the root of `name` to REF (see the module comment). */
export async function restoreSession(
  ctx: StoreContext,
  name: string,
  to: string,
  options: { onProgress?: ProgressFn; caller?: number } = {},
): Promise<RestoreResult> {
  const s = await resumeSession(ctx, name);
  const ref = await resolveRef(ctx, name, to);
  assertInHistory(ctx, name, ref); // a collected target is refused before anything is taken
  // The target becomes the last checkpoint: it must be in the store whole (its record, chunk list
  // and chunks there, of their sizes; not read: restore reads no Snapshot), before anything is taken.
  ctx.store.assertStored(ref.snapshot);
  // As a checkpoint: from inside the session's own run or enter, that run does not block it (the
  // daemon's client's run, for a restore the daemon runs: CheckpointOptions.caller).
  const caller = ownCaller(ctx, name, options.caller);
  const op = await openOperation(ctx, {
    session: { name, dir: s.dir },
    lease: { kind: 'exclusive', purpose: `restore to ${to}`, tolerate: caller.tolerate },
    check: caller.check,
    objects: `restore ${name}`,
    intent: { op: 'restore', session: name, detail: { target: ref.snapshot, ref: to, number: String(ref.number) } },
  });
  const intent = op.intent!;
  crashPoint('restore:after-intent');
  let safety: CheckpointResult;
  try {
    safety = await recordCheckpoint(ctx, s, name, { label: `before restore to ${to}`, onProgress: options.onProgress });
    intent.detail = { ...intent.detail, safety: safety.snapshot, safetyNumber: String(safety.number) };
    await ctx.journal.update(intent);
  } catch (err) {
    await op.finish(); // nothing of the tree was touched
    const e = toPdbError(err, 'E_IO');
    throw new PdbError(e.code, `the checkpoint before the restore could not be taken, so nothing was restored: ${e.message}`, {
      cause: err,
      hint: e.hint,
      path: e.path,
    });
  }
  crashPoint('restore:after-safety');
  let done: Finished;
  const phase = { staged: false };
  try {
    const here: ResolvedRef = { ref: String(safety.number), snapshot: safety.snapshot, number: safety.number, changeset: safety.changeset };
    const changes = diffHistory(ctx, name, here, ref);
    done = await finish(ctx, s, intent, changes, ref.snapshot, { known: ref }, phase, options.onProgress);
  } catch (err) {
    if (phase.staged) {
      await op.release(); // the intent stays: gc finishes the restore
      const e = toPdbError(err, 'E_IO');
      throw new PdbError(e.code, `${e.message}; the restore is not finished`, {
        cause: err,
        path: e.path,
        hint: `pdb-env gc finishes it (the root becomes ${to}); the tree before is checkpoint ${safety.number}.`,
      });
    }
    // Failed while staging (a corrupt or missing object, a full disk): the tree is as it was.
    await removeRestoreStaging(s.root, intent.id).catch(() => undefined);
    await op.finish();
    throw err;
  }
  await op.finish();
  return {
    session: name,
    ref: to,
    target: ref.snapshot,
    from: ref.number,
    safety: { number: safety.number, snapshot: safety.snapshot },
    ...done,
  };
}

type Finished = Pick<RestoreResult, 'checkpoint' | 'written' | 'removed' | 'made' | 'kept' | 'exact'>;

/** How the restored tree is recorded: from what is known of the target (a restore that ran) or by a scan (gc's recovery). */
type Record = { known: ResolvedRef } | { scan: true };

/** Write `changes` (from the tree in the root to the target), then record the restored tree as the last checkpoint; idempotent. */
async function finish(
  ctx: StoreContext,
  s: OpenSession,
  intent: Intent,
  changes: readonly Change[],
  target: Digest,
  how: Record,
  phase: { staged: boolean },
  onProgress?: ProgressFn,
): Promise<Finished> {
  const w: TreeWrite = await writeTree(ctx.store, s.root, intent.id, changes, {
    afterStage: () => (phase.staged = true),
    afterFirstWrite: () => crashPoint('restore:after-first-write'),
    onProgress,
  });
  crashPoint('restore:after-writes');
  const number = Number(intent.detail.number ?? 0);
  const label = `restore to ${intent.detail.ref ?? number}`;
  const { counts, ...written } = w;
  const known = 'known' in how && w.kept.length === 0 ? await recordKnown(ctx, s, how.known, counts, label) : null;
  if (known) {
    crashPoint('restore:after-record');
    return { checkpoint: known, ...written, exact: null };
  }
  const cp = await recordCheckpoint(ctx, s, s.rec.name, { label, restoredFrom: number, onProgress });
  crashPoint('restore:after-record');
  const entries = (d: Digest) => ctx.store.getDocument<Snapshot>(d, 'Snapshot').entries;
  return {
    checkpoint: { number: cp.number, snapshot: cp.snapshot, changeset: cp.changeset },
    ...written,
    exact: cp.snapshot === target || diffEntries(entries(target), entries(cp.snapshot)).length === 0,
  };
}

/**
 * Record the restored tree without scanning it again, when its Snapshot and Changeset are known:
 * the target is a checkpoint of this session on the same base (its log line names both, and its
 * Changeset binds that base; every checkpoint of a base is scanned with that base's excludes), or
 * the base itself. The session's tree index stays the safety checkpoint's: every
 * path the restore wrote has a new inode and ctime, every directory it changed a new mtime, so the
 * next checkpoint reads them again (the racy rule covers one written within 100 ms of the record);
 * a checkpoint right after a restore equals a --verify one (test/sessions/history/restore.test.ts).
 * Null: not known, the caller scans.
 */
async function recordKnown(
  ctx: StoreContext,
  s: OpenSession,
  ref: ResolvedRef,
  counts: TreeWrite['counts'],
  label: string,
): Promise<RestoreResult['checkpoint'] | null> {
  const base = s.rec.base;
  let snapshot: Digest;
  let changeset: Digest;
  if (ref.snapshot === base) {
    // The base's entries as a checkpoint on it: the base's bytes with their head changed (read, not
    // parsed), stored beside the base's chunks.
    const { bytes, digest } = withSnapshotBase(ctx.store.getBytes(base), base);
    snapshot = await ctx.store.putDocumentBytes(bytes, digest, base);
    changeset = await ctx.store.putDocument(createChangeset(base, snapshot, []));
  } else {
    if (changesFromBase(ctx, ref)?.base !== base || ref.changeset === null) return null;
    [snapshot, changeset] = [ref.snapshot, ref.changeset];
  }
  const rec = await readSession(ctx.store, s.rec.name);
  rec.lastCheckpoint = { snapshot, changeset, at: new Date().toISOString() };
  const number = await appendCheckpointLog(ctx.store, s.rec.name, {
    ...rec.lastCheckpoint,
    label,
    ...counts,
    restoredFrom: ref.number,
  });
  await writeSession(ctx.store, rec);
  return { number, snapshot, changeset };
}

/**
 * gc: finish a restore whose process is gone. Without a safety checkpoint nothing was written: the
 * intent goes. With one, the root is scanned (every file hashed) and brought to the target.
 */
export async function recoverRestore(ctx: StoreContext, intent: Intent, dryRun: boolean): Promise<string> {
  const name = intent.session;
  const target = intent.detail.target as Digest | undefined;
  if (!name || !intent.detail.safety || !target) return `restore ${intent.id} of ${name ?? '?'} wrote nothing: drop it`;
  if (dryRun) return `finish restore ${intent.id} of session ${name} (to ${intent.detail.ref ?? target})`;
  let s: OpenSession;
  try {
    s = await resumeSession(ctx, name);
  } catch (err) {
    if (isPdbError(err, 'E_SESSION_NOT_FOUND')) return `restore ${intent.id}: session ${name} is gone`;
    throw err;
  }
  const op = await openOperation(ctx, {
    session: { name, dir: s.dir },
    lease: { kind: 'exclusive', purpose: `gc: finishing restore ${intent.id}` },
    objects: `gc: finishing restore ${intent.id}`,
  });
  try {
    const excludes = ctx.store.getDocument<Snapshot>(s.rec.base, 'Snapshot').excludes;
    const now = (await scanTree(s.root, { excludes })).entries;
    const changes = diffEntries(now, ctx.store.getDocument<Snapshot>(target, 'Snapshot').entries);
    const done = await finish(ctx, s, intent, changes, target, { scan: true }, { staged: false });
    await removeRestoreStaging(s.root, intent.id); // a staging the kill left, when nothing differed any more
    return `finish restore ${intent.id} of session ${name}: ${done.written} written, ${done.removed} removed (checkpoint ${done.checkpoint.number})`;
  } finally {
    await op.release();
  }
}
