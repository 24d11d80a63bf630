// The fast path: `pdb-env checkpoint` as an agent loop calls it between steps, run without
// loading commander (which loads child_process, net and streams), building the program or
// defining the session commands: on a checkpoint, whose own work is a stat walk, an index and
// two records, that start-up is a large share (docs/evidence.md quotes the receipts).
//
// Only a plain call takes it: `checkpoint [NAME] [--json] [--verify] [--store DIR|--store=DIR]`,
// each option at most once. Anything else (--help, a global option before the command, `--`, an
// unknown or repeated option, a second name, an option value that looks like an option) goes
// to commander, which parses, explains and refuses exactly as before. Both paths run the same
// action (runCheckpoint), so their output and errors are the same; test/cli/fast-path.test.ts
// holds them side by side. start.cjs and bin.js run this module from cli/checkpoint-bundle.cjs when
// that is built from the dist files as they are (cli/bundle-state.cts).
import { PdbError } from '../model/errors.js';
import { emit, emitError, writeDirectly } from './output.js';
import { openService } from './open-service.js';
import { createProgressReporter } from './progress.js';
import type { CheckpointArgs } from './fast-args.js';

export { fastCheckpointArgs } from './fast-args.js';

/** The checkpoint command's action (commander's and the fast path's). */
export async function runCheckpoint(o: CheckpointArgs): Promise<void> {
  const name = o.name ?? process.env.PDB_ENV_SESSION;
  if (!name)
    throw new PdbError('E_USAGE', 'checkpoint needs a session name', {
      hint: 'pdb-env checkpoint NAME (inside pdb-env run or enter, the session is taken from PDB_ENV_SESSION).',
    });
  const progress = createProgressReporter({ json: o.json });
  const r = await (
    await openService(o.store)
  )
    .checkpoint(name, { verify: o.verify, onProgress: progress.onProgress })
    .finally(progress.done);
  emit(
    o.json,
    r,
    () => `checkpoint ${r.session}: ${r.changes} change(s)\n  base      ${r.base}\n  snapshot  ${r.snapshot}\n  changeset ${r.changeset}`,
  );
}

/**
 * Run a plain checkpoint call; its exit status. `direct` (start.cjs): print with write(2), as
 * nothing else in this process writes to stdout or stderr.
 */
export async function runFast(args: CheckpointArgs, options: { direct?: boolean } = {}): Promise<number> {
  if (options.direct) writeDirectly();
  try {
    await runCheckpoint(args);
    return 0;
  } catch (err) {
    return emitError(args.json, err);
  }
}
