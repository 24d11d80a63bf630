// What a create's options name, resolved before anything is checked: --fork OTHER becomes OTHER's
// last checkpoint as the base and OTHER's source as the source; a short --base digest becomes the
// one Snapshot it names.
import { PdbError } from '../model/errors.js';
import type { CreateOptions } from './create.js';
import { resolveDigestArg } from './digests.js';
import { readSession, type StoreContext } from './records.js';

export async function resolveCreateOptions(ctx: StoreContext, options: CreateOptions): Promise<CreateOptions> {
  const out = { ...options };
  if (options.fork !== undefined) {
    if (options.env || options.base) throw new PdbError('E_USAGE', 'create takes one of --fork, --env and --base');
    const other = await readSession(ctx.store, options.fork);
    if (!other.lastCheckpoint)
      throw new PdbError('E_USAGE', `session "${options.fork}" has no checkpoint to fork from`, {
        hint: `Run pdb-env checkpoint ${options.fork} first, then create --fork ${options.fork} again.`,
      });
    out.base = other.lastCheckpoint.snapshot;
    out.from = options.from ?? other.sourceDir ?? undefined;
  } else if (options.base !== undefined) out.base = await resolveDigestArg(ctx.store, options.base, '--base');
  return out;
}
