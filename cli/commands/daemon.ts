// `pdb-env daemon start | stop | status | run`: this user's resident process that runs plain
// checkpoints and restores for native/client.c (cli/daemon/server.ts says what it runs and what it declines).
import { PdbError } from '../../model/errors.js';
import type { CommandDefinitions, DefineCommand } from '../context.js';
import { daemonFiles } from '../daemon/location.js';
import type { DaemonRecord } from '../daemon/protocol.js';
import { emit } from '../output.js';

/** --idle-timeout in seconds (default 1800, 0: never), as milliseconds. */
export function parseIdleTimeout(v: string | undefined): number {
  if (v === undefined) return 1_800_000;
  if (!/^\d+$/.test(v)) throw new PdbError('E_USAGE', `--idle-timeout must be a whole number of seconds (0: never), got "${v}"`);
  return Number(v) * 1000;
}

const mib = (n: number) => `${Math.round(n / 1048576)} MiB`;
const describe = (r: DaemonRecord) =>
  `pid ${r.pid}${r.onDemand ? ' (started on demand)' : ''}, socket ${r.socket}, ${r.served} command(s) run, ${r.declined} declined, ${r.refused ?? 0} connection(s) of other users refused, idle timeout ${r.idleTimeoutMs === 0 ? 'none' : `${r.idleTimeoutMs / 1000} s`}, up ${Math.round((r.uptimeMs ?? 0) / 1000)} s, RSS ${mib(r.rssBytes ?? 0)} (peak ${mib(r.peakRssBytes ?? 0)}) of a ${r.rssLimitBytes ? mib(r.rssLimitBytes) : 'unbounded'} bound${r.watch ? ', watching session roots' : ''}`;

const daemon: DefineCommand<'daemon'> = (cmd, _ctx, sub) => {
  cmd.addHelpText(
    'after',
    `
A plain \`pdb-env checkpoint\` or \`pdb-env restore\` (bin/pdb-env, where the native client was
built at install) is handed to this user's daemon when one runs, and answered by it: the same
result, output and exit status, without starting node (tens of milliseconds). The daemon runs one
command at a time, opens the store again for each, and declines what it cannot run exactly as
the command would (another command, --help, another install or a newer build of this one, a
PDB_ENV_* setting, HOME or an XDG directory of its own): the command then runs as without it.

Its socket is in PDB_ENV_DAEMON_DIR, else $XDG_RUNTIME_DIR/pdb-env, else /tmp/pdb-env-UID: a
directory of this user with mode 0700, else no daemon is used (E_DAEMON_DIR for start). Every
connection's process must be this user's (SO_PEERCRED), both ways. Without \`daemon start\`, the
client starts one on demand when none listens (it exits after PDB_ENV_DAEMON_IDLE_MS idle, default
10 minutes); PDB_ENV_DAEMON=0 uses no daemon, PDB_ENV_DAEMON=manual only one started by hand.
\`status\` reports its resident set and bound (PDB_ENV_DAEMON_MAX_RSS_MB, default 512): past it,
the daemon exits after the command, dropping its caches.

With --watch it also watches the roots of the sessions it checkpoints (inotify on each directory,
on full-copy, reflink, btrfs-snapshot and git-worktree sessions): a checkpoint then lstats only the
entries of directories something happened in. What no watch sees (docs/store.md): a file linked
from outside the root after the daemon's last checkpoint of it and written through that link, and
a write through a shared mapping still held open at the checkpoint.`,
  );
  sub.start.addHelpText('after', '\nExample:\n  pdb-env daemon start --idle-timeout 3600').action(async (_o, command) => {
    const o = command.optsWithGlobals();
    const { startDaemon } = await import('../daemon/control.js');
    const { record, started } = await startDaemon(parseIdleTimeout(o.idleTimeout), undefined, { watch: o.watch === true });
    emit(o.json === true, { ...record, started }, () => `pdb-env daemon ${started ? 'started' : 'already running'}: ${describe(record)}`);
  });
  sub.stop.action(async (_o, command) => {
    const o = command.optsWithGlobals();
    const { stopDaemon } = await import('../daemon/control.js');
    const record = await stopDaemon();
    emit(o.json === true, { stopped: record !== null, record }, () =>
      record ? `pdb-env daemon stopped: ${describe(record)}` : 'no pdb-env daemon was running',
    );
  });
  sub.status.action(async (_o, command) => {
    const o = command.optsWithGlobals();
    const { askDaemon } = await import('../daemon/control.js');
    const record = await askDaemon('status');
    emit(o.json === true, { running: record !== null, record, dir: daemonFiles().dir }, () =>
      record ? `pdb-env daemon running: ${describe(record)}` : `no pdb-env daemon running (directory ${daemonFiles().dir})`,
    );
  });
  sub.run.action(async (_o, command) => {
    const o = command.optsWithGlobals();
    const { runDaemon } = await import('../daemon/server.js');
    await runDaemon({
      idleTimeoutMs: parseIdleTimeout(o.idleTimeout),
      watch: o.watch === true,
      onListening: (r) => process.stdout.write(`pdb-env daemon listening: ${describe(r)}\n`),
    });
    // Served its last command: what the commands left behind (an unref'd worker, a timer) does not keep it.
    process.exit(0);
  });
};

export const commands: CommandDefinitions<'daemon'> = { daemon };
