// Process tracking: everything `run` and `enter` start is recorded in
// `<store>/runtime/processes/<session>.<pid>.json` (outside the session directory, so a record
// outlives a discard or a lost session and doctor can still name its strays). A record is a
// process group (the child is started detached, so it leads its own group and everything it
// starts stays in it), or, as root with a writable cgroup v2 hierarchy, a cgroup leaf per session
// as well, which also holds daemons that leave their group. An interactive `enter` stays in the
// terminal's foreground group (a background group could not read the terminal), so it is
// tracked as the tree of its descendants.
import { mkdirSync, readFileSync, rmdirSync, writeFileSync, existsSync } from 'node:fs';
import { mkdir, readdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeFileAtomic, type ObjectStore } from '../../model/store/object-store.js';
import { sha256Hex } from '../../model/os/hash.js';
import { mountTable, parseMountInfo } from '../../model/os/mounts.js';
import { isProcessAlive, processStartTime } from '../../model/os/proc.js';
import { allProcs, type ProcInfo } from './proc.js';

export type TrackMode = 'cgroup' | 'process-group' | 'process-tree';

export interface ProcessRecord {
  version: 1;
  session: string;
  mode: TrackMode;
  /** The process run/enter started. */
  pid: number;
  pidStart: string | null;
  /** Its process group (its own pid), or null when it shares the terminal's (process-tree). */
  pgid: number | null;
  /** The session's cgroup leaf, in cgroup mode. */
  cgroup: string | null;
  command: string[];
  startedAt: string;
  /** The pdb-env process that started it and waits for it. */
  runner: { pid: number; pidStart: string | null };
}

/** A record with the processes of it still alive. */
export interface Tracked {
  record: ProcessRecord;
  file: string;
  procs: ProcInfo[];
}

export function processRecordDir(store: ObjectStore): string {
  return join(store.paths.root, 'runtime', 'processes');
}

/**
 * Where this host's cgroup v2 hierarchy is mounted, from mountinfo: /sys/fs/cgroup on a unified
 * host, /sys/fs/cgroup/unified on a hybrid one, else the first cgroup2 mount; null when there is
 * none (cgroup v1 only, or no /proc).
 */
export function cgroup2Mount(mountinfo?: string): string | null {
  const points = (mountinfo === undefined ? mountTable() : parseMountInfo(mountinfo))
    .filter((m) => m.fsType === 'cgroup2')
    .map((m) => m.mountPoint);
  return points.find((p) => p === '/sys/fs/cgroup') ?? points.find((p) => p === '/sys/fs/cgroup/unified') ?? points[0] ?? null;
}

/** Can runs here be put in a cgroup v2 leaf (root, a unified hierarchy with a writable pdb-env dir)? */
export function sessionCgroupAvailable(cgroupRoot: string | null = cgroup2Mount()): cgroupRoot is string {
  if (process.env.PDB_ENV_CGROUP === 'off') return false; // the user's choice: process groups only
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return false;
  if (cgroupRoot === null || !existsSync(join(cgroupRoot, 'cgroup.controllers'))) return false;
  try {
    mkdirSync(join(cgroupRoot, 'pdb-env'), { recursive: true });
    return true;
  } catch {
    return false;
  }
}

/** The cgroup leaf of a session: present (made) only as root on a writable cgroup v2 hierarchy; null otherwise. */
export function sessionCgroup(store: ObjectStore, session: string, cgroupRoot: string | null = cgroup2Mount()): string | null {
  if (!sessionCgroupAvailable(cgroupRoot)) return null; // not root, cgroup v1 or none, or read-only
  const key = sha256Hex(store.paths.root).slice(0, 12);
  const leaf = join(cgroupRoot, 'pdb-env', `${key}-${session}`);
  try {
    mkdirSync(leaf, { recursive: true });
    return existsSync(join(leaf, 'cgroup.procs')) ? leaf : null;
  } catch {
    return null; // read-only or delegated elsewhere: process groups do
  }
}

/**
 * Start a process inside a session's cgroup leaf with no window in which its first forks stay
 * outside: this process joins the leaf, `spawn` forks (the child is born there), and this process
 * moves back to the cgroup it came from. Without a leaf, or when joining fails, `spawn` just runs
 * (trackProcess then moves the child in after the fact).
 */
export function spawnInCgroup<T>(leaf: string | null, spawn: () => T): T {
  if (!leaf) return spawn();
  let home: string | null = null;
  try {
    const rel = /^0::(.*)$/m.exec(readFileSync('/proc/self/cgroup', 'utf8'))?.[1];
    if (rel !== undefined) {
      home = join(leaf, '..', '..', rel);
      writeFileSync(join(leaf, 'cgroup.procs'), String(process.pid));
    }
  } catch {
    home = null; // not movable (delegation, a read-only hierarchy): the child is moved after its start
  }
  try {
    return spawn();
  } finally {
    // Back out before anything else runs here, so the runner is never one of the session's processes.
    if (home) writeFileSync(join(home, 'cgroup.procs'), String(process.pid));
  }
}

/** Record a started process (and move it into the session's cgroup when there is one). */
export async function trackProcess(
  store: ObjectStore,
  session: string,
  pid: number,
  command: string[],
  options: { group: boolean; cgroup?: string | null },
): Promise<{ record: ProcessRecord; file: string }> {
  let cgroup = options.cgroup ?? null;
  if (cgroup) {
    try {
      // Already there when it was started by spawnInCgroup; otherwise a fork between its start
      // and this write would stay outside, which its process group still catches.
      writeFileSync(join(cgroup, 'cgroup.procs'), String(pid));
    } catch {
      cgroup = null;
    }
  }
  const record: ProcessRecord = {
    version: 1,
    session,
    mode: cgroup ? 'cgroup' : options.group ? 'process-group' : 'process-tree',
    pid,
    pidStart: processStartTime(pid),
    pgid: options.group ? pid : null,
    cgroup,
    command,
    startedAt: new Date().toISOString(),
    runner: { pid: process.pid, pidStart: processStartTime(process.pid) },
  };
  const dir = processRecordDir(store);
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${session}.${pid}.json`);
  await writeFileAtomic(store.paths, file, `${JSON.stringify(record, null, 2)}\n`);
  return { record, file };
}

function cgroupPids(leaf: string): number[] {
  try {
    return readFileSync(join(leaf, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The live processes a record stands for, from one /proc listing. */
export function membersOf(record: ProcessRecord, procs: readonly ProcInfo[]): ProcInfo[] {
  const byPid = new Map(procs.map((p) => [p.pid, p]));
  const leader = byPid.get(record.pid);
  const leaderOurs = leader !== undefined && (record.pidStart === null || leader.start === record.pidStart);
  const out = new Map<number, ProcInfo>();
  if (record.cgroup) for (const pid of cgroupPids(record.cgroup)) if (byPid.has(pid)) out.set(pid, byPid.get(pid)!);
  if (record.pgid !== null) {
    // A group whose leader's pid now belongs to another process is not ours any more.
    if (leader && !leaderOurs) return [...out.values()];
    for (const p of procs) if (p.pgid === record.pgid) out.set(p.pid, p);
  } else if (leaderOurs) {
    const children = new Map<number, ProcInfo[]>();
    for (const p of procs) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
    for (let todo = [leader!]; todo.length;) {
      const p = todo.pop()!;
      out.set(p.pid, p);
      todo.push(...(children.get(p.pid) ?? []));
    }
  }
  return [...out.values()].sort((a, b) => a.pid - b.pid);
}

async function readRecord(file: string): Promise<ProcessRecord | null> {
  try {
    const r = JSON.parse(await readFile(file, 'utf8')) as ProcessRecord;
    return r && r.version === 1 && typeof r.pid === 'number' && typeof r.session === 'string' ? r : null;
  } catch {
    return null; // half-written by a run that died in the write: nothing it names can be signalled safely
  }
}

/** Every record (of one session, or all), with the processes still alive. */
export async function trackedProcesses(store: ObjectStore, session?: string): Promise<Tracked[]> {
  const dir = processRecordDir(store);
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.json')).sort();
  const procs = allProcs();
  const out: Tracked[] = [];
  for (const n of names) {
    if (session !== undefined && !n.startsWith(`${session}.`)) continue;
    const file = join(dir, n);
    const record = await readRecord(file);
    if (!record || (session !== undefined && record.session !== session)) continue;
    out.push({ record, file, procs: membersOf(record, procs) });
  }
  return out;
}

/** Is the run that started a record still waiting for it? */
export function runnerAlive(record: ProcessRecord): boolean {
  return isProcessAlive(record.runner.pid, record.runner.pidStart);
}

function signalAll(t: Tracked, signal: NodeJS.Signals): void {
  if (t.record.pgid !== null) {
    try {
      process.kill(-t.record.pgid, signal);
    } catch {
      // the group is empty already
    }
  }
  for (const p of t.procs) {
    try {
      process.kill(p.pid, signal);
    } catch {
      // it ended meanwhile
    }
  }
}

function refresh(list: Tracked[]): Tracked[] {
  const procs = allProcs();
  return list.map((t) => ({ ...t, procs: membersOf(t.record, procs) })).filter((t) => t.procs.length > 0);
}

/** Drop the records none of whose processes live (and their empty cgroup leaves). */
export async function forgetEnded(list: readonly Tracked[]): Promise<void> {
  const procs = allProcs();
  for (const t of list.filter((x) => membersOf(x.record, procs).length === 0)) {
    await unlink(t.file).catch(() => {}); // already removed by a peer stop
    if (t.record.cgroup) removeEmptyLeaf(t.record.cgroup);
  }
}

/** Remove a session's cgroup leaf once nothing is in it (a leaf with members, or already gone, stays as it is). */
export function removeEmptyLeaf(leaf: string): void {
  try {
    rmdirSync(leaf);
  } catch {
    // another run of the session still uses it, or it is gone
  }
}

/**
 * Stop tracked processes: `signal` (TERM) to every group and member, then KILL after `graceMs` to
 * what is left, and wait until they are gone. Returns the pids that were signalled.
 */
export async function stopTracked(
  list: readonly Tracked[],
  options: { graceMs?: number; signal?: NodeJS.Signals } = {},
): Promise<number[]> {
  const grace = options.graceMs ?? 5000;
  const pids = list.flatMap((t) => t.procs.map((p) => p.pid));
  let left = refresh([...list]);
  for (const t of left) signalAll(t, options.signal ?? 'SIGTERM');
  for (const deadline = Date.now() + grace; left.length && Date.now() < deadline; left = refresh(left)) await sleep(50);
  for (let i = 0; left.length && i < 100; i++, left = refresh(left)) {
    for (const t of left) {
      if (t.record.cgroup && existsSync(join(t.record.cgroup, 'cgroup.kill'))) writeFileSync(join(t.record.cgroup, 'cgroup.kill'), '1');
      signalAll(t, 'SIGKILL');
    }
    await sleep(50);
  }
  await forgetEnded(list);
  return pids;
}

/** One line per live process: "PID (COMMAND)". */
export function describe(list: readonly Tracked[]): string {
  return list
    .flatMap((t) => t.procs)
    .map((p) => `${p.pid} (${p.command.length > 60 ? `${p.command.slice(0, 57)}...` : p.command})`)
    .join(', ');
}
