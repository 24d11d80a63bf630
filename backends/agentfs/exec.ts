// The bounds around every external call the AgentFS adapter makes: a child in its own process
// group with a deadline (the whole group is killed when it passes), processes that escaped the
// group found by the unique state path on their command line, and unmounts that fall back to a
// lazy detach. Nothing here knows AgentFS's commands; ./agentfs-adapter.ts does.
import { osErrorCode } from '../../model/errors.js';
import { mountAt } from '../../model/os/mounts.js';
import { procPids, readProcCmdline, readProcStat } from '../../model/os/proc.js';

export interface BoundedResult {
  /** Exit code, null when killed by a signal or never started. */
  exitCode: number | null;
  signal: string | null;
  /** True when the deadline passed and the process group was killed. */
  timedOut: boolean;
  /** The OS error when the program could not start (ENOENT: not installed). */
  spawnError: string | null;
  stdout: string;
  stderr: string;
  durationMs: number;
}

export interface BoundedOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs: number;
}

/** Output kept per stream: enough for an error message, bounded against a program printing garbage forever. */
const OUTPUT_LIMIT = 64 * 1024;

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch (err) {
    // ESRCH: the group is already empty, which is what we want.
    if (osErrorCode(err) !== 'ESRCH') throw err;
  }
}

/** Live (not zombie) processes of process group `pgid`, from /proc/<pid>/stat. */
function groupMembers(pgid: number): number[] {
  const found: number[] = [];
  for (const pid of procPids()) {
    const stat = readProcStat(pid); // null: the process ended while we looked
    if (stat && stat.pgid === pgid && stat.state !== 'Z') found.push(pid);
  }
  return found;
}

/** SIGKILL is delivered asynchronously: wait (briefly) until the group has no live member. */
async function killGroupAndWait(pid: number | undefined): Promise<void> {
  if (pid === undefined) return;
  killGroup(pid);
  for (let i = 0; i < 40 && groupMembers(pid).length; i++) await new Promise((r) => setTimeout(r, 25));
}

/**
 * Run `argv` in its own process group (detached: setsid) and wait for it to exit, at most
 * `timeoutMs`; then the whole group is killed. We wait for 'exit', not 'close': a daemon that
 * inherited our pipes (AgentFS's mount daemon redirects its stdio, a broken one may not) must not
 * hold the call open. Stray members of the group are killed after a normal exit too; AgentFS's
 * mount daemon leaves the group through setsid (cli/src/daemon.rs) before its parent exits.
 * node:child_process rather than execa here: execa's timeout signals only the child, not its
 * group, and its result waits for the child's pipes to close. Imported here, not with the module:
 * the registry loads every backend, and child_process (with net) cost ~7 ms of every create.
 */
export async function runBounded(argv: readonly string[], o: BoundedOptions): Promise<BoundedResult> {
  const started = performance.now();
  const { spawn } = await import('node:child_process');
  return new Promise((resolve) => {
    const out = { stdout: '', stderr: '' };
    const child = spawn(argv[0]!, argv.slice(1), { cwd: o.cwd, env: o.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const collect = (key: 'stdout' | 'stderr') => (d: Buffer) => {
      if (out[key].length < OUTPUT_LIMIT) out[key] += d.toString('utf8').slice(0, OUTPUT_LIMIT - out[key].length);
    };
    child.stdout.on('data', collect('stdout'));
    child.stderr.on('data', collect('stderr'));
    const closed = new Promise<void>((r) => child.on('close', () => r()));
    let timedOut = false;
    let settled = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid);
      // A process in uninterruptible sleep (a syscall on a hung FUSE mount) may never report its
      // exit; the call is bounded all the same.
      setTimeout(() => void finish({ exitCode: null, signal: null, spawnError: null }), 2_000).unref();
    }, o.timeoutMs);
    const finish = async (r: Omit<BoundedResult, 'stdout' | 'stderr' | 'durationMs' | 'timedOut'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.unref();
      const durationMs = Math.round(performance.now() - started);
      // Output still in the pipes is read for a moment; a daemon holding them open does not delay us longer.
      await Promise.race([closed, new Promise((r) => setTimeout(r, 200))]);
      child.stdout.destroy();
      child.stderr.destroy();
      await killGroupAndWait(child.pid);
      resolve({ ...r, timedOut, ...out, durationMs });
    };
    child.on('error', (err) => void finish({ exitCode: null, signal: null, spawnError: osErrorCode(err) ?? err.message }));
    child.on('exit', (code, signal) => void finish({ exitCode: code, signal, spawnError: null }));
  });
}

/** One line of a program's output for a message: printable characters only, bounded. */
export function outputLine(r: BoundedResult, limit = 240): string {
  const text = `${r.stderr}\n${r.stdout}`
    .replace(/[^\x20-\x7e\n]/g, '?')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(-3)
    .join(' | ');
  return text.length > limit ? `${text.slice(0, limit)}...` : text;
}

/** How a bounded call ended, in words ("exited 1: ...", "timed out after 5000 ms"). */
export function describeEnd(what: string, r: BoundedResult, timeoutMs: number): string {
  if (r.spawnError) return `${what} could not start (${r.spawnError})`;
  if (r.timedOut) return `${what} did not finish within ${timeoutMs} ms (its process group was killed)`;
  const how = r.exitCode === null ? `was killed by ${r.signal}` : `exited ${r.exitCode}`;
  const said = outputLine(r);
  return `${what} ${how}${said ? `: ${said}` : ''}`;
}

/**
 * Processes (other than this one) with an argument that is `marker` or a path below it. The marker
 * is a directory only this adapter made, so the match names our own invocations (AgentFS's mount
 * daemon keeps the database path it was given) and nothing else on the host.
 */
export function processesMentioning(marker: string): number[] {
  const found: number[] = [];
  // No /proc (not Linux): nothing can be found this way.
  for (const pid of procPids()) {
    if (pid === process.pid) continue;
    const argv = readProcCmdline(pid); // null: the process ended while we looked
    if (argv?.some((arg) => arg === marker || arg.startsWith(`${marker}/`))) found.push(pid);
  }
  return found;
}

/** Wait up to `graceMs` for the processes mentioning `marker` to end on their own, then kill them. What is still there after. */
export async function endProcessesMentioning(marker: string, graceMs: number): Promise<number[]> {
  const deadline = performance.now() + graceMs;
  let left = processesMentioning(marker);
  while (left.length && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    left = processesMentioning(marker);
  }
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch (err) {
      if (osErrorCode(err) !== 'ESRCH') throw err;
    }
  }
  // SIGKILL is delivered asynchronously; a killed process leaves its cmdline empty (a zombie) soon after.
  for (let i = 0; i < 40 && left.length; i++) {
    await new Promise((r) => setTimeout(r, 25));
    left = processesMentioning(marker);
  }
  return left;
}

export interface UnmountResult {
  ok: boolean;
  /** The command that removed the mount, or what the last attempt said. */
  detail: string;
}

/**
 * Unmount whatever is mounted at `mountPoint`. AgentFS's manual says `fusermount -u` on Linux;
 * AgentFS itself tries fusermount3, then fusermount (cli/src/cmd/mount.rs), and as root plain
 * umount(8) works for FUSE too. `lazy` detaches a busy or hung mount (fusermount -z, umount -l).
 * Success is judged by the mount table, not by exit codes.
 */
export async function unmountAt(
  mountPoint: string,
  o: { lazy: boolean; timeoutMs: number; env?: NodeJS.ProcessEnv },
): Promise<UnmountResult> {
  if (!mountAt(mountPoint)) return { ok: true, detail: 'nothing mounted' };
  const attempts: string[][] = [
    ['fusermount3', o.lazy ? '-uz' : '-u', mountPoint],
    ['fusermount', o.lazy ? '-uz' : '-u', mountPoint],
    o.lazy ? ['umount', '-l', mountPoint] : ['umount', mountPoint],
  ];
  const said: string[] = [];
  for (const argv of attempts) {
    const r = await runBounded(argv, { timeoutMs: o.timeoutMs, env: o.env });
    if (r.spawnError === 'ENOENT') continue;
    if (!mountAt(mountPoint)) return { ok: true, detail: `${argv[0]} ${argv[1]}` };
    said.push(describeEnd(argv[0]!, r, o.timeoutMs));
  }
  return { ok: false, detail: said.length ? said.join('; ') : 'no unmount tool (fusermount3, fusermount, umount) is installed' };
}
