// A benchmark's own pdb-env daemon (cli/daemon/): started in a directory of its own under the
// benchmark's work directory (every pdb-env the run starts finds it through PDB_ENV_DAEMON_DIR),
// stopped at the end with a count of what it ran, which must be every command the run handed it:
// one it declined, or one that never reached it (no native client built), ran in a node process of
// its own, and the timings would mix two paths.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { $ as zx } from 'zx';
import { PDB_ENV } from './baselines.js';

const $ = zx({ verbose: false, quiet: true });
/** The commands the daemon runs (cli/daemon/server.ts SERVED, and the turn hooks the runs make: plain ones). */
const SERVED = new Set(['checkpoint', 'restore', 'hook']);

export interface OwnDaemon {
  /** Note a pdb-env command the run starts (those the daemon runs are counted). */
  count(command: string): void;
  /** Stop it; how many commands it ran (all of those counted, or this throws). */
  stop(): Promise<number>;
}

export async function startOwnDaemon(work: string, options: { watch?: boolean } = {}): Promise<OwnDaemon> {
  const dir = join(work, 'daemon');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  process.env.PDB_ENV_DAEMON_DIR = dir;
  // Its commands use the daemon it starts, and start none of their own, whatever the caller's
  // PDB_ENV_DAEMON says (the test runner sets 0: no daemon on demand).
  const before = process.env.PDB_ENV_DAEMON;
  process.env.PDB_ENV_DAEMON = 'manual';
  const watch = options.watch ? ['--watch'] : [];
  const r = JSON.parse((await $`${PDB_ENV} daemon start --idle-timeout 900 ${watch} --json`).stdout) as { pid: number; watch: boolean };
  if (r.watch !== (options.watch === true))
    throw new Error(`this run's pdb-env daemon ${r.watch ? 'watches' : 'does not watch'} session roots, and the run asked otherwise`);
  console.log(`pdb-env daemon: pid ${r.pid}${r.watch ? ', watching session roots' : ''}`);
  let expected = 0;
  return {
    count: (command) => {
      if (SERVED.has(command)) expected++;
    },
    stop: async () => {
      const s = JSON.parse((await $`${PDB_ENV} daemon stop --json`).stdout) as { record: { served: number; declined: number } | null };
      delete process.env.PDB_ENV_DAEMON_DIR;
      if (before === undefined) delete process.env.PDB_ENV_DAEMON;
      else process.env.PDB_ENV_DAEMON = before;
      if (!s.record) throw new Error("this run's pdb-env daemon was gone before its end: its commands ran without it");
      if (s.record.declined > 0 || s.record.served !== expected)
        throw new Error(
          `this run's pdb-env daemon ran ${s.record.served} of its ${expected} checkpoints and restores (declined ${s.record.declined}): the others ran without it (no native/build/Release/pdb-env-client? --no-daemon measures without it)`,
        );
      console.log(`pdb-env daemon: ran ${s.record.served} checkpoints and restores`);
      return s.record.served;
    },
  };
}

/**
 * The default path (rhythm --default-path): no `daemon start`; an empty daemon directory of the
 * run's own, and the native client starts this user's daemon on demand (PDB_ENV_DAEMON unset).
 * stop() stops the daemon it started and says how many commands it ran; those before it listened
 * ran in node, as they do for a user.
 */
export function startOnDemand(work: string): OwnDaemon {
  const dir = join(work, 'daemon');
  rmSync(dir, { recursive: true, force: true });
  process.env.PDB_ENV_DAEMON_DIR = dir;
  delete process.env.PDB_ENV_DAEMON;
  let expected = 0;
  return {
    count: (command) => {
      if (SERVED.has(command)) expected++;
    },
    stop: async () => {
      const s = JSON.parse((await $`${PDB_ENV} daemon stop --json`).stdout) as { record: { served: number; onDemand?: boolean } | null };
      delete process.env.PDB_ENV_DAEMON_DIR;
      if (!s.record?.onDemand)
        throw new Error('no pdb-env daemon was started on demand in this run (no native/build/Release/pdb-env-client?)');
      console.log(
        `pdb-env daemon (started on demand): ran ${s.record.served} of ${expected} checkpoints and restores; the others ran in node`,
      );
      return s.record.served;
    },
  };
}
