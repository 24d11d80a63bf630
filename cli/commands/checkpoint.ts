// `pdb-env checkpoint`: its definition and its action, which a plain call runs on the cheap path
// (cli/cheap-path.ts) without commander; so this module imports commander's types only.
import { PdbError } from '../../model/errors.js';
import type { CheapCall } from '../command-table.cjs';
import type { CommandDefinitions, DefineCommand } from '../context.js';
import { openService } from '../open-service.js';
import { emit } from '../output.js';
import { requestCaller } from '../request.js';
import { createProgressReporter } from '../progress-line.js';

/** The checkpoint command's action (commander's and the cheap path's). */
async function runCheckpoint(given: string | undefined, o: CheapCall<'checkpoint'>['options']): Promise<void> {
  const name = given ?? process.env.PDB_ENV_SESSION;
  if (!name)
    throw new PdbError('E_USAGE', 'checkpoint needs a session name', {
      hint: 'pdb-env checkpoint NAME (inside pdb-env run or enter, the session is taken from PDB_ENV_SESSION).',
    });
  const json = o.json === true;
  const progress = createProgressReporter({ json });
  const r = await (
    await openService(o.store)
  )
    .checkpoint(name, {
      verify: o.verify === true,
      onProgress: progress.onProgress,
      caller: requestCaller(),
      ...(o.label === undefined ? {} : { label: o.label }),
    })
    .finally(progress.done);
  emit(
    json,
    r,
    () =>
      `checkpoint ${r.number} of ${r.session}${r.label === null ? '' : ` (${r.label})`}: ${r.changes} change(s) since the base` +
      (r.added === null ? '' : `, +${r.added} ~${r.modified} -${r.deleted} since the checkpoint before`) +
      `\n  base      ${r.base}\n  snapshot  ${r.snapshot}\n  changeset ${r.changeset}`,
  );
}

const checkpoint: DefineCommand<'checkpoint'> = (cmd) =>
  cmd
    .argument('[name]', 'the session (default: PDB_ENV_SESSION, inside a run or enter)')
    .addHelpText(
      'after',
      `
Takes an exclusive lease (fails with E_LEASE_BUSY while a run is active), scans the
whole session root, installs its objects and records the result Snapshot and the
Changeset against the base. Publishes nothing.

Every entry is stat'ed, so adds, deletes and retypes are always found; a file whose
stat signature (inode, size, mtime, ctime, mode) is the one recorded at create or at
the last checkpoint keeps its digest, unless it changed within 100 ms of that record
(git's racy-clean rule). --verify reads and hashes every file, and reads back the
Snapshot and Changeset it records (a chunk of them damaged in the store: E_OBJECT_CORRUPT).

Each checkpoint is numbered in the session's log (pdb-env log NAME); --label names
it there; pdb-env restore NAME --to N brings it back.

Inside the session's own run or enter, NAME defaults to PDB_ENV_SESSION, and the
run that waits for this checkpoint does not block it; anything else of the session
still running does (E_SESSION_BUSY names it).

Example:
  pdb-env checkpoint agent-a --json`,
    )
    .action(async (given, _o, command) => runCheckpoint(given, command.optsWithGlobals()));

export const commands: CommandDefinitions<'checkpoint'> = { checkpoint };
export const cheap = { checkpoint: (call: CheapCall<'checkpoint'>) => runCheckpoint(call.operands[0], call.options) };
