// gc's side of apply: finish (or roll back) an apply whose process is gone. It runs only what the
// store itself wrote: the intent in the store's journal, and the Changeset it names, read from the
// store (hashed) with every path checked again as a contract path. From the target it takes bytes
// only, each checked against the Changeset before use, and staged anew from the store when it
// does not match. The target must still be the directory the apply started in (device and inode);
// an intent that is not one this store could have written, or whose directory was replaced, is
// quarantined and reported, never run; so is one that DIR does not corroborate (its staging's
// marker holds the intent's nonce, read through handles: staging.ts).
import { dirname } from 'node:path';
import { PdbError } from '../../../model/errors.js';
import { mountContaining } from '../../../model/os/mounts.js';
import type { Intent } from '../../records/journal.js';
import type { StoreContext } from '../../records/session-record.js';
import { setPhase } from './apply.js';
import { readApplyIntent, type ApplyDetail } from './plan.js';
import { closeStaging, openStaging, removeStaging, stagingOf, uncorroborated } from './staging.js';
import { rollBack, runForward, settledAs, type StepRun } from './apply-steps.js';
import { closeTarget, lstatOr, openTargetHandle, retypedPaths, withTargetLock, type Target } from './target.js';

export interface ApplyRecovery {
  /** What was done (or, dry run, would be), one line. */
  action: string;
  /** What a person should know (a rollback, and why). */
  note?: string;
  /** Set when the intent is not to be run: gc moves it to the quarantine. */
  quarantine?: string;
}

/**
 * The target of an intent, when it is still the directory the apply started in. Gone from a
 * filesystem that is there: removed (nothing to finish). On another device, or gone with its
 * filesystem: maybe not mounted (E_SOURCE_MISSING: gc keeps the intent and tries again). Another
 * inode on the same device: replaced or moved (the intent is quarantined, nothing run).
 */
async function targetOf(detail: ApplyDetail, id: string): Promise<Target | 'gone' | 'replaced'> {
  const st = await lstatOr(detail.dir);
  const parent = st ? null : await lstatOr(dirname(detail.dir));
  if (!st && parent && String(parent.dev) === detail.dev) return 'gone';
  if (!st || String(st.dev) !== detail.dev)
    throw new PdbError(
      'E_SOURCE_MISSING',
      `${detail.dir} is not on the filesystem the apply started on (device ${detail.dev}): is it not mounted?`,
      {
        path: detail.dir,
        hint: `Mount the filesystem ${detail.dir} is on, then run pdb-env gc again. If it is gone for good, move the intent ${id}.json out of the store's journal into its quarantine/journal.`,
      },
    );
  if (!st.isDirectory() || String(st.ino) !== detail.ino) return 'replaced';
  const root = openTargetHandle(detail.dir, st.dev, st.ino);
  if (!root) return 'replaced';
  return { dir: detail.dir, dev: st.dev, ino: st.ino, filesystem: mountContaining(detail.dir)?.mountPoint ?? detail.dir, root };
}

/** Forward; on a conflict or failure, roll back instead. Returns what happened, and which way the steps went. */
async function finish(
  ctx: StoreContext,
  intent: Intent,
  run: StepRun,
  who: string,
): Promise<ApplyRecovery & { went: 'forward' | 'backward' }> {
  try {
    await openStaging(run.t, run.s, true);
    await runForward(run);
    const kept = run.kept.length ? { note: `the apply of ${who} into ${run.t.dir} is finished; ${run.kept.join('; ')}` } : {};
    return { action: `finish apply of ${who} into ${run.t.dir}`, ...kept, went: 'forward' };
  } catch (err) {
    if (!(err instanceof PdbError) || err.code === 'E_BAD_PATH' || err.code === 'E_CROSS_DEVICE') throw err; // the staging is not ours to use
    await setPhase(ctx, intent, 'rolling-back');
    const kept = await rollBack(run);
    const why = `${err.code}: ${err.message}${kept.length ? `; left as they are: ${kept.join('; ')}` : ''}`;
    return {
      action: `roll back apply of ${who} into ${run.t.dir} (${why})`,
      note: `the apply of ${who} into ${run.t.dir} could not be finished and was rolled back (${why}); run it again once that is fixed`,
      went: 'backward',
    };
  }
}

/** gc: finish an apply whose process is gone, roll it back, or remove its staging (it never got past staging). */
export async function recoverApply(ctx: StoreContext, intent: Intent, dryRun: boolean): Promise<ApplyRecovery> {
  const read = readApplyIntent(ctx.store, intent);
  const who = intent.session ?? '?';
  if ('foreign' in read)
    return { action: `quarantine apply intent ${intent.id}: ${read.foreign}; nothing was run`, quarantine: read.foreign };
  const { detail, steps, changes } = read;
  const t = await targetOf(detail, intent.id);
  if (t === 'gone') return { action: `nothing to finish for the apply of ${who}: ${detail.dir} is gone` };
  if (t === 'replaced') {
    const why = `${detail.dir} is not the directory the apply started in (moved or replaced)`;
    return { action: `quarantine apply intent ${intent.id}: ${why}; nothing was run`, quarantine: why };
  }
  const verbs = {
    staging: 'remove the staging of',
    applying: 'finish',
    'rolling-back': 'finish rolling back',
    done: 'remove the staging of',
  } as const;
  try {
    const why = uncorroborated(t.root, intent.id, detail.nonce, detail.phase);
    if (why) return { action: `quarantine apply intent ${intent.id}: ${why}; nothing was run`, quarantine: why };
    if (dryRun) return { action: `${verbs[detail.phase]} apply of ${who} into ${t.dir}` };
    return await withTargetLock(
      ctx,
      t,
      async () => {
        const run: StepRun = { store: ctx.store, t, s: stagingOf(t, intent.id), steps, retyped: retypedPaths(changes), kept: [] };
        try {
          let out: ApplyRecovery;
          let went: 'forward' | 'backward' = 'backward';
          if (detail.phase === 'staging' || detail.phase === 'done') out = { action: `remove the staging of an apply into ${t.dir}` };
          else if (detail.phase === 'applying') ({ went, ...out } = await finish(ctx, intent, run, who));
          else {
            await openStaging(t, run.s, true);
            const kept = await rollBack(run);
            out = {
              action: `finish rolling back apply of ${who} into ${t.dir}${kept.length ? ` (left as they are: ${kept.join('; ')})` : ''}`,
            };
          }
          // A base entry moved aside whose path did not end as planned is kept in DIR/.pdb/kept, never deleted.
          const moved: string[] = [];
          await setPhase(ctx, intent, 'done'); // its staging (the marker) goes next: nothing left to do in DIR after
          // Settled (done) either way: a path that ended as either plan had it needs no copy moved aside.
          const either = async (i: number) => (await settledAs(run, 'forward')(i)) || (await settledAs(run, 'backward')(i));
          await removeStaging(t, run.s, detail.phase === 'done' ? either : settledAs(run, went), moved);
          return moved.length ? { ...out, note: [out.note, moved.join('; ')].filter(Boolean).join('; ') } : out;
        } finally {
          closeStaging(run.s);
        }
      },
      0,
    );
  } finally {
    closeTarget(t);
  }
}
