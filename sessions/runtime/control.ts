// ps and stop over a session's tracked processes, and the busy check discard makes.
import { PdbError } from '../../model/errors.js';
import type { ObjectStore } from '../../model/store/object-store.js';
import { assertSessionName } from '../records/names.js';
import { listeningPorts, startedAtMs } from './proc.js';
import { describe, forgetEnded, runnerAlive, stopTracked, trackedProcesses, type TrackMode } from './processes.js';

export interface PsEntry {
  pid: number;
  pgid: number;
  command: string;
  startedAt: string | null;
  ageMs: number | null;
  /** TCP ports it listens on. */
  ports: number[];
  /** How it is tracked: its run's process group, the session's cgroup, or the tree under an interactive shell. */
  mode: TrackMode;
  /** The pid run/enter started (the group's leader). */
  leader: number;
  /** Is the run that started it still waiting for it? (false: a leftover, see doctor) */
  runActive: boolean;
}

export interface PsResult {
  session: string;
  /** Which tracking this host gives new runs: 'cgroup' as root on cgroup v2, else 'process-group'. */
  tracking: TrackMode;
  processes: PsEntry[];
}

export async function psSession(store: ObjectStore, name: string, now = Date.now()): Promise<PsResult> {
  assertSessionName(name);
  const { sessionCgroupAvailable } = await import('./processes.js');
  const tracked = await trackedProcesses(store, name);
  // Records of runs that died with everything they started (a killed pdb-env) are forgotten here.
  await forgetEnded(tracked.filter((t) => t.procs.length === 0 && !runnerAlive(t.record)));
  const ports = listeningPorts(tracked.flatMap((t) => t.procs.map((p) => p.pid)));
  const processes = tracked.flatMap((t) =>
    t.procs.map((p): PsEntry => {
      const started = startedAtMs(p.start);
      return {
        pid: p.pid,
        pgid: p.pgid,
        command: p.command,
        startedAt: started === null ? null : new Date(started).toISOString(),
        ageMs: started === null ? null : Math.max(0, now - started),
        ports: ports.get(p.pid) ?? [],
        mode: t.record.mode,
        leader: t.record.pid,
        runActive: runnerAlive(t.record),
      };
    }),
  );
  return { session: name, tracking: sessionCgroupAvailable() ? 'cgroup' : 'process-group', processes };
}

/** TERM every process the session's runs started, KILL after the grace; the pids it signalled. */
export async function stopSession(store: ObjectStore, name: string, graceMs?: number): Promise<{ session: string; stopped: number[] }> {
  assertSessionName(name);
  const live = (await trackedProcesses(store, name)).filter((t) => t.procs.length > 0);
  return { session: name, stopped: await stopTracked(live, { graceMs }) };
}

/** E_SESSION_BUSY naming what still runs in a session, unless `force` (which stops it first). */
export async function assertNoProcesses(store: ObjectStore, name: string, force: boolean): Promise<void> {
  const live = (await trackedProcesses(store, name)).filter((t) => t.procs.length > 0);
  if (live.length === 0) return;
  if (force) {
    await stopTracked(live);
    return;
  }
  throw new PdbError('E_SESSION_BUSY', `session "${name}" has running processes: ${describe(live)}; discard was refused`, {
    hint: `pdb-env stop ${name} ends them (or pdb-env discard ${name} --force stops them first).`,
  });
}
