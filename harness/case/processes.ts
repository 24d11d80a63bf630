// Every process a case starts carries the case's token in its environment (inherited by every
// descendant, including what `pdb-env run` starts), so a timed-out or finished case can find and
// kill all of its processes, process groups included, without touching anything else.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
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
  const needle = Buffer.from(`${CASE_TOKEN_ENV}=${token}\0`);
  const out: Array<{ pid: number; pgid: number }> = [];
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return out; // no /proc (macOS): process groups are still killed by the process runner itself
  }
  for (const p of pids) {
    const pid = Number(p);
    if (pid === process.pid) continue;
    try {
      const env = readFileSync(`/proc/${p}/environ`);
      // Entries are NUL-terminated; the last one may lack its NUL.
      const last = needle.subarray(0, needle.length - 1);
      if (env.indexOf(needle) < 0 && !(env.length >= last.length && env.subarray(env.length - last.length).equals(last))) continue;
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue; // a zombie has nothing left to kill
      out.push({ pid, pgid: Number(fields[2]) });
    } catch {
      /* gone meanwhile, or not ours to read */
    }
  }
  return out;
}

function ownProcessGroup(): number {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
  } catch {
    return -1;
  }
}

/** Kill every process of the case (its groups first, never our own group). Returns how many were found. */
export function killCaseProcesses(token: string): number {
  const found = findCaseProcesses(token);
  const own = ownProcessGroup();
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
