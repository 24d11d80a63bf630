// Every process a case starts carries the case's token in its environment (inherited by every
// descendant, including what `pdb-env run` starts), so a timed-out or finished case can find and
// kill all of its processes, process groups included, without touching anything else.
import { randomBytes } from 'node:crypto';
import { procPids, readProcEnviron, readProcStat } from '../../model/os/proc.js';
import type { ProcessRunner } from '../../workloads/types.js';

export const CASE_TOKEN_ENV = 'PDB_ENV_CASE_TOKEN';

export function newCaseToken(): string {
  return randomBytes(8).toString('hex');
}

/** A runner that tags every child with the case token. */
export function createCaseRunner(base: ProcessRunner, token: string): ProcessRunner {
  return {
    run: (command, args, options) => base.run(command, args, { ...options, env: { ...options.env, [CASE_TOKEN_ENV]: token } }),
    start: (command, args, options) => base.start(command, args, { ...options, env: { ...options.env, [CASE_TOKEN_ENV]: token } }),
  };
}

/** Pids (and their process groups) of live processes whose environment holds the token. Linux /proc only. */
export function findCaseProcesses(token: string): Array<{ pid: number; pgid: number }> {
  const out: Array<{ pid: number; pgid: number }> = [];
  // No /proc (macOS): no pids, and process groups are still killed by the process runner itself.
  for (const pid of procPids()) {
    if (pid === process.pid) continue;
    // Null when it is gone meanwhile, or not ours to read.
    if (readProcEnviron(pid)?.[CASE_TOKEN_ENV] !== token) continue;
    const stat = readProcStat(pid);
    if (!stat || stat.state === 'Z') continue; // a zombie has nothing left to kill
    out.push({ pid, pgid: stat.pgid });
  }
  return out;
}

/** Kill every process of the case (its groups first, never our own group). Returns how many were found. */
export function killCaseProcesses(token: string): number {
  const found = findCaseProcesses(token);
  const own = readProcStat(process.pid)?.pgid ?? -1;
  for (const { pid, pgid } of found) {
    if (pgid > 1 && pgid !== process.pid && pgid !== own) {
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {
        /* group gone */
      }
    }
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  return found.length;
}

/** The tokens of the cases one run has going now, so an interrupted run can kill all their processes. */
export interface CaseProcessRegistry {
  add(token: string): void;
  remove(token: string): void;
  /** Kill every process of every registered case; returns how many were found. */
  killAll(): number;
}

export function createCaseProcessRegistry(): CaseProcessRegistry {
  const tokens = new Set<string>();
  return {
    add: (token) => void tokens.add(token),
    remove: (token) => void tokens.delete(token),
    killAll: () => [...tokens].reduce((n, token) => n + killCaseProcesses(token), 0),
  };
}
