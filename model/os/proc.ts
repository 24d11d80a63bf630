// What /proc says about one process: its stat line (state, parent, group, start time), its
// environment and its command line, read in one place. Linux only: where /proc is absent (or the
// process has gone) every reader answers null, and the pid list is empty. Each reader takes the
// /proc root so a test can point it at a tree of its own.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

/** The fields of /proc/PID/stat that pdb-env uses (proc(5) numbers them from 1). */
export interface ProcStat {
  pid: number;
  /** The command name (field 2) without its parentheses; it may hold spaces and parentheses itself. */
  comm: string;
  /** One letter (field 3): R running, S sleeping, D disk sleep, Z zombie, T stopped, ... */
  state: string;
  /** Parent pid (field 4). */
  ppid: number;
  /** Process group (field 5). */
  pgid: number;
  /** Session id (field 6). */
  sid: number;
  /** Start time in clock ticks since boot (field 22), kept as the decimal text the kernel wrote. */
  startTime: string;
}

/** Parse one /proc/PID/stat line, or null when it is not one. */
export function parseProcStat(text: string): ProcStat | null {
  const open = text.indexOf(' (');
  // The command name may hold spaces and parentheses: it ends at the last ')'.
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  const rest = text.slice(close + 2).split(' ');
  if (rest.length < 20) return null;
  return {
    pid: Number(text.slice(0, open)),
    comm: text.slice(open + 2, close),
    state: rest[0]!,
    ppid: Number(rest[1]),
    pgid: Number(rest[2]),
    sid: Number(rest[3]),
    startTime: rest[19]!,
  };
}

function readOr<T>(read: () => T): T | null {
  try {
    return read();
  } catch {
    return null; // gone meanwhile, not ours to read, or no /proc on this OS
  }
}

/** The stat of a live (or zombie) process, or null when it cannot be read. */
export function readProcStat(pid: number, procRoot = '/proc'): ProcStat | null {
  return readOr(() => parseProcStat(readFileSync(join(procRoot, String(pid), 'stat'), 'utf8')));
}

/** Parse /proc/PID/environ text (NUL-terminated NAME=value entries; the last may lack its NUL). */
export function parseEnviron(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const kv of text.split('\0')) {
    const i = kv.indexOf('=');
    if (i > 0 && !Object.hasOwn(env, kv.slice(0, i))) env[kv.slice(0, i)] = kv.slice(i + 1); // the first wins, as getenv(3)
  }
  return env;
}

/** The environment a process started with, or null when it cannot be read (another user's, gone). */
export function readProcEnviron(pid: number, procRoot = '/proc'): Record<string, string> | null {
  return readOr(() => parseEnviron(readFileSync(join(procRoot, String(pid), 'environ'), 'utf8')));
}

/** Parse /proc/PID/cmdline text into argv (empty for a kernel thread or a zombie). */
export function parseCmdline(text: string): string[] {
  if (text === '') return [];
  return (text.endsWith('\0') ? text.slice(0, -1) : text).split('\0');
}

/** The command line of a process as argv, or null when it cannot be read. */
export function readProcCmdline(pid: number, procRoot = '/proc'): string[] | null {
  return readOr(() => parseCmdline(readFileSync(join(procRoot, String(pid), 'cmdline'), 'utf8')));
}

/** Every pid /proc lists now; empty where there is no /proc. */
export function procPids(procRoot = '/proc'): number[] {
  const names = readOr(() => readdirSync(procRoot)) ?? [];
  return names.filter((n) => /^\d+$/.test(n)).map(Number);
}

/** The start time of a process (field 22 of /proc/PID/stat), or null where /proc is absent. */
export function processStartTime(pid: number): string | null {
  return readProcStat(pid)?.startTime ?? null;
}

/** Is this process still the one that wrote a record (same pid, same start time)? */
export function isProcessAlive(pid: number, startTime: string | null): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  // A zombie has exited: it holds nothing and does nothing (a parent that has not reaped it yet).
  const st = readProcStat(pid);
  if (st && (st.state === 'Z' || st.state === 'X')) return false;
  if (startTime === null) return true;
  const now = processStartTime(pid);
  return now === null || now === startTime;
}

/** The working directory of a process (the target of /proc/PID/cwd), or null when it cannot be read. */
export function readProcCwd(pid: number, procRoot = '/proc'): string | null {
  return readOr(() => readlinkSync(join(procRoot, String(pid), 'cwd')));
}

/**
 * The pids above `pid` up to init (its parent, the parent's parent, ...), from their stat lines
 * alone: a checkpoint's callers (the run it is inside), a hook's (which may sit in the directory
 * it removes).
 */
export function ancestorPids(pid: number, procRoot = '/proc'): Set<number> {
  const out = new Set<number>();
  for (let p = readProcStat(pid, procRoot)?.ppid; p && p > 1 && !out.has(p); p = readProcStat(p, procRoot)?.ppid) out.add(p);
  return out;
}

/** The processes (other than `except`) whose working directory is `dir` or below it: what would lose its directory. */
export function processesInDir(
  dir: string,
  except: ReadonlySet<number> = new Set(),
  procRoot = '/proc',
): Array<{ pid: number; comm: string; cwd: string }> {
  const out: Array<{ pid: number; comm: string; cwd: string }> = [];
  for (const pid of procPids(procRoot)) {
    if (except.has(pid)) continue;
    const cwd = readProcCwd(pid, procRoot);
    if (cwd === null || (cwd !== dir && !cwd.startsWith(`${dir}/`))) continue;
    out.push({ pid, comm: readProcStat(pid, procRoot)?.comm ?? '?', cwd });
  }
  return out;
}
