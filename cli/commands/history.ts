// `pdb-env log` and `pdb-env restore`: a session's checkpoints, and the way back to one of them
// (sessions/history/). A plain restore runs on the cheap path (cli/cheap-path.ts), as a checkpoint
// does: this module imports commander's types only.
import { PdbError } from '../../model/errors.js';
import type { Checkpoint } from '../../sessions/service.js';
import type { CheapCall } from '../command-table.cjs';
import type { CommandDefinitions, DefineCommand } from '../context.js';
import { openService } from '../open-service.js';
import { requestCaller } from '../request.js';
import { emit, short, table } from '../output.js';
import { createProgressReporter } from '../progress-line.js';

/** The session NAME, or PDB_ENV_SESSION inside a run or enter. */
function sessionName(given: string | undefined, command: string): string {
  const name = given ?? process.env.PDB_ENV_SESSION;
  if (!name)
    throw new PdbError('E_USAGE', `${command} needs a session name`, {
      hint: `pdb-env ${command} NAME (inside pdb-env run or enter, the session is taken from PDB_ENV_SESSION).`,
    });
  return name;
}

const counts = (c: Checkpoint) => (c.added === undefined ? '-' : `+${c.added} ~${c.modified ?? 0} -${c.deleted ?? 0}`);

function logText(name: string, checkpoints: Checkpoint[]): string {
  if (checkpoints.length === 0) return `session ${name} has no checkpoints yet (pdb-env checkpoint ${name} takes one)`;
  const rows = [...checkpoints]
    .reverse()
    .map((c) => [
      String(c.number),
      c.at.replace('T', ' ').replace(/\.\d+Z$/, 'Z'),
      counts(c),
      `${short(c.snapshot)}${c.collected ? ' (collected)' : ''}`,
      short(c.changeset),
      c.agent ? `${c.agent} ${c.turn ?? '?'} ${c.phase ?? ''}`.trim() : '-',
      [c.label ?? '', c.restoredFrom === undefined ? '' : `(restored from ${c.restoredFrom === 0 ? 'base' : c.restoredFrom})`]
        .filter(Boolean)
        .join(' '),
    ]);
  return table([['#', 'TIME', 'CHANGES', 'SNAPSHOT', 'CHANGESET', 'TURN', 'LABEL'], ...rows]);
}

const log: DefineCommand<'log'> = (cmd) =>
  cmd
    .argument('[name]', 'the session (default: PDB_ENV_SESSION, inside a run or enter)')
    .addHelpText(
      'after',
      `
Lists the session's checkpoints, newest first: its number (1 = the first), when, the
paths added (+), modified (~) and deleted (-) since the checkpoint before, the result
Snapshot and Changeset, the agent turn it brackets (AGENT TURN before|after, from
pdb-env hook AGENT: the agent's turn id, else the turn's ordinal), its label, and
the checkpoint a restore brought back. gc keeps
the last history.keep checkpoints (pdb-env.json; default 100) and pinned ones; an
older one is marked (collected). --json: oldest first.

Example:
  pdb-env log agent-a
  pdb-env restore agent-a --to 3`,
    )
    .action(async (given, _o, command) => {
      const o = command.optsWithGlobals();
      const name = sessionName(given, 'log');
      const r = await (await openService(o.store)).log(name);
      emit(o.json === true, r, () => logText(name, r.checkpoints));
    });

/** The restore command's action (commander's and the cheap path's). */
async function runRestore(given: string | undefined, o: CheapCall<'restore'>['options']): Promise<void> {
  const name = sessionName(given, 'restore');
  const progress = createProgressReporter({ json: o.json === true });
  const r = await (
    await openService(o.store)
  )
    .restore(name, o.to, { onProgress: progress.onProgress, caller: requestCaller() })
    .finally(progress.done);
  emit(
    o.json === true,
    r,
    () =>
      `restored ${r.session} to ${r.from === 0 ? 'its base' : `checkpoint ${r.from}`} (${short(r.target)}): ` +
      `${r.written} written, ${r.removed} removed, ${r.made} directories made\n` +
      `  before: checkpoint ${r.safety.number} (pdb-env restore ${r.session} --to ${r.safety.number} undoes this)\n` +
      `  now:    checkpoint ${r.checkpoint.number}` +
      (r.kept.length ? `\n  kept (they hold excluded entries): ${r.kept.join(', ')}` : '') +
      (r.exact === false ? '\n  note: the root changed while it was restored; the checkpoint above holds what it is now' : ''),
  );
}

const restore: DefineCommand<'restore'> = (cmd) =>
  cmd
    .argument('[name]', 'the session (default: PDB_ENV_SESSION, inside a run or enter)')
    .addHelpText(
      'after',
      `
Makes the session's root exactly the Snapshot REF names, in place: files made since are
removed, deleted ones come back, modes, links and empty directories as recorded,
ignored and untracked files included; .git and the other admin roots are untouched.
Only the paths that differ are written, each from store bytes hashed on the way out.

First it checkpoints the root as it is (labelled "before restore to REF"), so every
restore can be undone with restore --to that checkpoint; if that checkpoint cannot be
taken, nothing is restored. A kill at any moment is finished by pdb-env gc (the root
becomes REF; the tree before is that checkpoint). Refused while another pdb-env
operation holds the session, as checkpoint is. Then the restored tree is the session's
last checkpoint.

REF: a checkpoint number (pdb-env log), a Snapshot or Changeset digest prefix (7+ hex),
or base.

Example:
  pdb-env restore agent-a --to 3
  pdb-env restore agent-a --to base`,
    )
    .action(async (given, _o, command) => runRestore(given, command.optsWithGlobals()));

export const commands: CommandDefinitions<'history'> = { log, restore };
export const cheap = { restore: (call: CheapCall<'restore'>) => runRestore(call.operands[0], call.options) };
