// Publish, the way back into an environment: an expected-head compare-and-set of its head,
// under the environment's lock (records/environments.ts), from a session's last checkpoint; with
// --rebase, a checkpoint built on an older head is merged onto the current one first.
import type { Digest } from '../../model/canonical-json.js';
import { crashPoint } from '../../model/crash-point.js';
import { PdbError } from '../../model/errors.js';
import { openOperation } from '../locks/operation.js';
import { resolveDigestArg } from '../records/digests.js';
import { envHead, withEnvLock, writeEnv } from '../records/environments.js';
import { readCheckpointLog, readSession, type StoreContext } from '../records/session-record.js';

/**
 * Expected-head compare-and-set: advance `env` from `expect` to the session's last checkpoint,
 * which must have been built on `expect` (E_STALE_BASE otherwise: publishing it would drop what
 * came between). With `rebase`, a checkpoint built on an older head is first merged onto `expect`
 * (publish-rebase.ts) and recorded as a new checkpoint of the session.
 */
export async function publish(
  ctx: StoreContext,
  name: string,
  env: string,
  expectArg: string,
  options: { rebase?: boolean } = {},
): Promise<{ env: string; previous: Digest; head: Digest; rebased?: true }> {
  const expect = await resolveDigestArg(ctx.store, expectArg, '--expect');
  const rec = await readSession(ctx.store, name);
  if (!rec.lastCheckpoint)
    throw new PdbError('E_USAGE', `session "${name}" has no checkpoint to publish`, { hint: `Run pdb-env checkpoint ${name} first.` });
  const cp = rec.lastCheckpoint.snapshot;
  const { checkpointBase, rebaseCheckpoint } = await import('../way-back/publish-rebase.js');
  const base = checkpointBase(ctx, cp) ?? rec.base;
  const command = (h: Digest, rebase: boolean) => `pdb-env publish ${name} --env ${env} --expect ${h}${rebase ? ' --rebase' : ''}`;
  // Built on `h`: `h` is the checkpoint's base, or an earlier checkpoint of this session on the same
  // base (the session's tree went on from it, as a fast-forward; a rebased checkpoint has another
  // base and holds changes the session's tree lacks, so it does not count).
  const builtOn = async (h: Digest) =>
    h === base || ((await readCheckpointLog(ctx.store, name)).includes(h) && checkpointBase(ctx, h) === base);
  return withEnvLock(ctx.store, env, async () => {
    const current = await envHead(ctx.store, env);
    const descends = await builtOn(current);
    if (current !== expect)
      throw new PdbError('E_HEAD_MOVED', `environment "${env}" is at ${current}, not the expected ${expect}`, {
        hint: `Its head moved since you looked. Publish onto the new head with: ${command(current, !descends)}`,
      });
    let head = cp;
    if (!descends) {
      if (!options.rebase)
        throw new PdbError(
          'E_STALE_BASE',
          `the last checkpoint of session "${name}" (${cp}) was built on ${base}, but environment "${env}" is at ${current}: publishing it would drop the changes between them`,
          { hint: `Merge your changes onto the head with: ${command(current, true)}` },
        );
      head = await rebaseCheckpoint(ctx, name, env, { snapshot: cp, base }, current);
    }
    // Holds nothing but the intent: a head write that fails leaves it, for gc.
    const op = await openOperation(ctx, { intent: { op: 'publish', session: name, env, detail: { from: current, to: head } } });
    crashPoint('publish:after-intent');
    await writeEnv(ctx.store, env, head, current);
    crashPoint('publish:after-head');
    await op.finish();
    // `rebased` only when it happened: a plain publish answers as it always did.
    return head === cp ? { env, previous: current, head } : { env, previous: current, head, rebased: true };
  });
}
