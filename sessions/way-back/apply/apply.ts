// apply: write a session's last checkpoint back into a directory (by default the source it came
// from), with a per-path compare-and-set held to the end. One apply per directory at a time (a
// lock in the store, by the directory's device and inode). Every path the Changeset touches must
// be as the base had it (kind, bytes, exec bit; absent where the base had nothing), or nothing is
// written (E_APPLY_CONFLICT); a target that already holds the result everywhere is a no-op. The
// intent, in the store's journal, names the Changeset, the directory (with its device and inode)
// and the phase; the staging in DIR/.pdb holds only bytes (staging.ts). Each step re-checks its
// path right before it renames (apply-steps.ts); a conflict or failure part way rolls back what
// was done, so DIR ends as before or fully applied. After a crash, gc finishes or rolls back (recover.ts).
import { randomBytes } from 'node:crypto';
import type { Digest } from '../../../model/canonical-json.js';
import { crashPoint } from '../../../model/crash-point.js';
import { PdbError, isPdbError } from '../../../model/errors.js';
import type { ProgressFn } from '../../../model/progress.js';
import { openOperation, type Operation } from '../../locks/operation.js';
import type { Intent } from '../../records/journal.js';
import { readSession, type StoreContext } from '../../records/session-record.js';
import { lastCheckpointChanges } from '../patch.js';
import { applyDetail, applySteps, type ApplyPhase, type Step } from './plan.js';
import { closeStaging, copyOut, handles, openStaging, removeStaging, stagingOf } from './staging.js';
import { rollBack, runForward, settledAs, type StepRun } from './apply-steps.js';
import { checkTarget, closeTarget, openTarget, retypedPaths, withTargetLock, type Target } from './target.js';

export interface ApplyResult {
  session: string;
  dir: string;
  changes: number;
  written: number;
  deleted: number;
  /** DIR already held the session's result for every changed path: nothing was done. */
  alreadyApplied: boolean;
}

/** Write the apply intent's new phase (the store's record of how far it got). */
export async function setPhase(ctx: StoreContext, intent: Intent, phase: ApplyPhase): Promise<void> {
  intent.detail = { ...intent.detail, phase };
  await ctx.journal.update(intent);
}

/** E_APPLY_CONFLICT when an earlier apply into DIR was interrupted and gc has not finished it. */
async function refuseUnfinished(ctx: StoreContext, t: Target): Promise<void> {
  const left = (await ctx.journal.list()).find((i) => i.op === 'apply' && i.detail.dev === String(t.dev) && i.detail.ino === String(t.ino));
  if (left)
    throw new PdbError(
      'E_APPLY_CONFLICT',
      `an earlier apply into ${t.dir} (of session ${left.session ?? '?'}, intent ${left.id}) is not finished`,
      {
        hint: left.live
          ? 'It is still running in another store; wait for it.'
          : 'pdb-env gc finishes it (or rolls it back); then apply again.',
      },
    );
}

function conflictError(name: string, dir: string, bad: string[]): PdbError {
  return new PdbError(
    'E_APPLY_CONFLICT',
    `${bad.length} path(s) in ${dir} are no longer as the session's base had them: ${bad.join(', ')}`,
    {
      path: dir,
      hint: `Nothing was written. Keep your edits and take the session's as a patch instead (pdb-env export ${name} --patch FILE), or undo them and apply again.`,
    },
  );
}

/** Stage every file and symlink the steps bring in, hashed on their way out of the store. */
async function stageAll(run: StepRun, nonce: string, onProgress?: ProgressFn): Promise<void> {
  await openStaging(run.t, run.s, true, nonce); // the marker (DIR's corroboration of the intent) first, before anything in DIR changes
  const items = run.steps.flatMap((st: Step) => (st.post && st.post.kind !== 'dir' ? [{ entry: st.post, name: String(st.index) }] : []));
  await copyOut(run.store, run.t, handles(run.s).files, items, onProgress);
}

/** A failure part way: roll back what was done and drop the intent, or keep it for gc when the rollback fails too. */
async function undo(ctx: StoreContext, run: StepRun, op: Operation, err: unknown): Promise<never> {
  // Best effort: a store too full to record the phase still gets its rollback (after a crash, gc then finishes forward).
  await setPhase(ctx, op.intent!, 'rolling-back').catch(() => undefined);
  let kept: string[];
  try {
    kept = await rollBack(run);
  } catch (again) {
    closeStaging(run.s);
    const e = again as Error;
    throw new PdbError(isPdbError(err) ? err.code : 'E_IO', `${(err as Error).message}; rolling back failed too: ${e.message}`, {
      cause: err,
      hint: 'pdb-env gc finishes the rollback once the cause is fixed (pdb-env doctor shows it).',
    });
  }
  // Bytes only are left there; a base entry moved aside for a path not as before is kept, not deleted.
  await setPhase(ctx, op.intent!, 'done').catch(() => undefined); // best effort: gc rolls back again if not
  await removeStaging(run.t, run.s, settledAs(run, 'backward'), kept).catch(() => undefined);
  await op.finish();
  if (kept.length === 0 || !isPdbError(err)) throw err;
  throw new PdbError(err.code, `${err.message}; left as they are: ${kept.join('; ')}`, { cause: err, hint: err.hint, path: err.path });
}

/** `apply NAME [--to DIR]`: the last checkpoint's changes into DIR (default: the session's source). */
export async function applySession(
  ctx: StoreContext,
  name: string,
  options: { to?: string; onProgress?: ProgressFn } = {},
): Promise<ApplyResult> {
  const rec = await readSession(ctx.store, name);
  const wanted = options.to ?? rec.sourceDir;
  if (!wanted)
    throw new PdbError('E_USAGE', `session "${name}" has no source directory to apply to`, { hint: `pdb-env apply ${name} --to DIR` });
  const t = await openTarget(wanted, name);
  try {
    const of = await lastCheckpointChanges(ctx, name);
    const steps = applySteps(of.changes);
    return await withTargetLock(ctx, t, async () => {
      await refuseUnfinished(ctx, t);
      const check = await checkTarget(t, of.changes, options.onProgress);
      if (check.conflicts.length > 0) throw conflictError(name, t.dir, check.conflicts);
      const result = { session: name, dir: t.dir, changes: of.changes.length, written: 0, deleted: 0, alreadyApplied: check.done };
      if (check.done) return result;
      return { ...result, ...(await applyChanges(ctx, name, t, of.changeset!, steps, retypedPaths(of.changes), options.onProgress)) };
    });
  } finally {
    closeTarget(t);
  }
}

/** Stage, move the phase to applying, run every step; a failure part way is rolled back. */
async function applyChanges(
  ctx: StoreContext,
  name: string,
  t: Target,
  changeset: Digest,
  steps: Step[],
  retyped: Set<string>,
  onProgress?: ProgressFn,
) {
  const nonce = randomBytes(16).toString('hex');
  const detail = applyDetail({ dir: t.dir, dev: String(t.dev), ino: String(t.ino), changeset, phase: 'staging', nonce });
  // Holds nothing but the intent (the target's lock is withTargetLock's): one not finished stays for gc.
  const op = await openOperation(ctx, { intent: { op: 'apply', session: name, detail } });
  const intent = op.intent!;
  crashPoint('apply:after-intent');
  const run: StepRun = { store: ctx.store, t, s: stagingOf(t, intent.id), steps, retyped, kept: [] };
  try {
    await stageAll(run, nonce, onProgress);
    // The point of no return: with the phase at applying, gc finishes (or rolls back); before it, gc removes the staging.
    await setPhase(ctx, intent, 'applying');
  } catch (err) {
    // Nothing in DIR changed yet: undo the staging and drop the intent (best effort; gc would too).
    await removeStaging(t, run.s).catch(() => undefined);
    await op.finish();
    throw err;
  }
  crashPoint('apply:after-plan');
  let counts;
  try {
    counts = await runForward(run);
  } catch (err) {
    return undo(ctx, run, op, err);
  }
  // Settled: a crash from here leaves an intent with nothing to do in DIR, once its staging is gone.
  await setPhase(ctx, intent, 'done');
  await removeStaging(t, run.s, settledAs(run, 'forward'), run.kept);
  await op.finish();
  return counts;
}
