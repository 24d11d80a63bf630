// The runtime of a session: what runs in it (ps) and ending that (stop).
import { PdbError } from '../../model/errors.js';
import type { PsEntry } from '../../sessions/service.js';
import { emit, table } from '../output.js';
import { openService, type CommandDefinitions, type DefineCommand } from '../context.js';

/** "3s", "4m", "2h", "5d": the age of a process, coarse like ps's. */
function age(ms: number | null): string {
  if (ms === null) return '?';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  return s < 86400 ? `${Math.floor(s / 3600)}h` : `${Math.floor(s / 86400)}d`;
}

function psText(name: string, tracking: string, ps: PsEntry[]): string {
  if (ps.length === 0) return `nothing runs in ${name} (tracking: ${tracking})`;
  const rows = ps.map((p) => [String(p.pid), age(p.ageMs), p.ports.join(',') || '-', p.runActive ? '' : 'left over', p.command]);
  return table([['PID', 'AGE', 'PORTS', 'RUN', 'COMMAND'], ...rows]);
}

const ps: DefineCommand<'ps'> = (cmd) =>
  cmd
    .argument('<name>', 'the session')
    .addHelpText(
      'after',
      `
Lists the live processes that run and enter started in NAME (and everything they
started): pid, age, the TCP ports each listens on, and the command. "left over"
marks a process whose run has ended; pdb-env stop NAME ends it. --json also says
how processes are tracked here: a cgroup v2 leaf as root where the host has one,
else each run's process group.

Example:
  pdb-env ps agent-a`,
    )
    .action(async (name, _o, command) => {
      const o = command.optsWithGlobals();
      const r = await (await openService(o.store)).ps(name);
      emit(o.json === true, r, () => psText(name, r.tracking, r.processes));
    });

const stop: DefineCommand<'stop'> = (cmd) =>
  cmd
    .argument('<name>', 'the session')
    .addHelpText(
      'after',
      `
Sends TERM to everything run and enter started in NAME, waits up to the grace
period, then sends KILL to what is left. A run whose command is stopped ends too.

Example:
  pdb-env stop agent-a --grace 2000`,
    )
    .action(async (name, _o, command) => {
      const o = command.optsWithGlobals();
      const grace = o.grace === undefined ? undefined : Number(o.grace);
      if (grace !== undefined && (!Number.isInteger(grace) || grace < 0))
        throw new PdbError('E_USAGE', `--grace must be a whole number of milliseconds, got "${o.grace}"`);
      const r = await (await openService(o.store)).stop(name, { graceMs: grace });
      emit(o.json === true, r, () => (r.stopped.length ? `stopped ${r.stopped.join(', ')}` : `nothing ran in ${name}`));
    });

export const commands: CommandDefinitions<'runtime'> = { ps, stop };
