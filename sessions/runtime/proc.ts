// What /proc says about processes: parent, process group, start time, command line, and the TCP
// ports each one listens on (a socket inode in /proc/net/tcp{,6} matched to the fds of a pid).
// A process's stat and cmdline are model/os/proc.ts's; the boot time, sockets and fds are read
// here. Every reader takes the /proc root so tests can point it elsewhere; where /proc is absent,
// the answers are empty (nothing tracked can be shown, nothing is claimed alive by it).
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { procPids, readProcCmdline, readProcStat } from '../../model/os/proc.js';

export interface ProcInfo {
  pid: number;
  ppid: number;
  pgid: number;
  /** Start time in clock ticks since boot (field 22 of stat), as model/os/proc records it. */
  start: string;
  /** The command line, arguments joined by spaces (the bracketed name for a kernel thread or zombie). */
  command: string;
}

export function readProc(pid: number, procRoot = '/proc'): ProcInfo | null {
  const stat = readProcStat(pid, procRoot);
  if (!stat || stat.state === 'Z') return null; // a zombie has ended; only its parent has not reaped it yet
  // Null when the process ended between the two reads: its name is enough.
  const command = (readProcCmdline(pid, procRoot) ?? []).filter(Boolean).join(' ');
  return { pid, ppid: stat.ppid, pgid: stat.pgid, start: stat.startTime, command: command || `[${stat.comm}]` };
}

export function allProcs(procRoot = '/proc'): ProcInfo[] {
  return procPids(procRoot).flatMap((pid) => readProc(pid, procRoot) ?? []);
}

/** Boot time in ms since the epoch (btime of /proc/stat), or null. */
function bootTimeMs(procRoot: string): number | null {
  try {
    const m = /^btime (\d+)$/m.exec(readFileSync(join(procRoot, 'stat'), 'utf8'));
    return m ? Number(m[1]) * 1000 : null;
  } catch {
    return null;
  }
}

/** When a process started, in ms since the epoch (Linux's USER_HZ is 100 on every architecture Node runs on). */
export function startedAtMs(start: string, procRoot = '/proc'): number | null {
  const boot = bootTimeMs(procRoot);
  const ticks = Number(start);
  return boot === null || !Number.isFinite(ticks) ? null : boot + ticks * 10;
}

/** Socket inode -> port, for every TCP socket in LISTEN state (IPv4 and IPv6). */
function listeningInodes(procRoot: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const file of ['tcp', 'tcp6']) {
    let text = '';
    try {
      text = readFileSync(join(procRoot, 'net', file), 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // sl local_address rem_address st ... inode(10)
      if (f.length < 10 || f[3] !== '0A') continue;
      const port = parseInt(f[1]!.split(':')[1] ?? '', 16);
      if (Number.isInteger(port)) out.set(f[9]!, port);
    }
  }
  return out;
}

/** The TCP ports each pid listens on (sorted, no duplicates); a pid whose fds cannot be read listens on none we can see. */
export function listeningPorts(pids: readonly number[], procRoot = '/proc'): Map<number, number[]> {
  const inodes = listeningInodes(procRoot);
  const out = new Map<number, number[]>();
  for (const pid of pids) {
    const ports = new Set<number>();
    let fds: string[] = [];
    try {
      fds = readdirSync(join(procRoot, String(pid), 'fd'));
    } catch {
      // gone, or not ours to read
    }
    for (const fd of fds) {
      let target = '';
      try {
        target = readlinkSync(join(procRoot, String(pid), 'fd', fd));
      } catch {
        continue; // closed meanwhile
      }
      const m = /^socket:\[(\d+)\]$/.exec(target);
      const port = m ? inodes.get(m[1]!) : undefined;
      if (port !== undefined) ports.add(port);
    }
    out.set(
      pid,
      [...ports].sort((a, b) => a - b),
    );
  }
  return out;
}
