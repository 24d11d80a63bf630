// The one runner for short system tools (git, btrfs, mount, filefrag, sync, a tool's --version):
// start, feed stdin, collect output, report how it ended. It never throws: a tool that is missing
// (ENOENT) or fails is a result, and each caller words its own error. node:child_process rather
// than execa: importing execa costs ~150 ms of CPU (about 160 modules), more than the mount or
// snapshot it would start on a CoW create. Long-running workload processes are not tools; the
// workloads' process runner starts those.
import { PdbError, type PdbErrorCode } from '../errors.js';

export interface ToolOptions {
  cwd?: string;
  /** Variables added to this process's environment (LC_ALL=C is set unless given here). */
  env?: Record<string, string | undefined>;
  /** Written to stdin, which is then closed (at once, empty, without it). */
  input?: string | Buffer;
  /** SIGTERM after this many ms (SIGKILL 5 s later if it lingers); `timedOut` says so. None by default. */
  timeoutMs?: number;
  /** stdout as text (the default) or as the bytes the tool wrote (patches, binary diffs). */
  encoding?: 'utf8' | 'buffer';
}

export interface ToolResult<Out extends string | Buffer = string> {
  /** Exit code; null when killed by a signal or never started. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: Out;
  stderr: string;
  /** Why it could not start (ENOENT: not installed), or null. */
  error: NodeJS.ErrnoException | null;
  /** True when `timeoutMs` passed and the tool was killed. */
  timedOut: boolean;
}

/** How long a tool that ignored SIGTERM at its timeout gets before SIGKILL (execa's default too). */
const FORCE_KILL_AFTER_MS = 5_000;

export function runTool(cmd: string, args: readonly string[], options: ToolOptions & { encoding: 'buffer' }): Promise<ToolResult<Buffer>>;
export function runTool(cmd: string, args: readonly string[], options?: ToolOptions & { encoding?: 'utf8' }): Promise<ToolResult>;
export async function runTool(cmd: string, args: readonly string[], options: ToolOptions = {}): Promise<ToolResult<string | Buffer>> {
  // Loaded on the first run: a module that may run a tool (a backend that mounts) is often loaded
  // by a command that runs none (a checkpoint of a mounted overlay), and node:child_process costs
  // about as much to load as four of our own modules.
  const { spawn } = await import('node:child_process');
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {
      cwd: options.cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, LC_ALL: 'C', ...options.env },
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let error: NodeJS.ErrnoException | null = null;
    let timedOut = false;
    let forceKill: NodeJS.Timeout | undefined;
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            child.kill('SIGTERM');
            forceKill = setTimeout(() => child.kill('SIGKILL'), FORCE_KILL_AFTER_MS);
          }, options.timeoutMs);
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => (error = e));
    child.stdin.on('error', () => undefined); // a tool exiting early closes stdin; its exit code says what happened
    child.stdin.end(options.input);
    child.on('close', (exitCode, signal) => {
      clearTimeout(timer);
      clearTimeout(forceKill);
      const stdout = Buffer.concat(out);
      resolve({
        exitCode: error ? null : exitCode,
        signal,
        stdout: options.encoding === 'buffer' ? stdout : stdout.toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        error,
        timedOut,
      });
    });
  });
}

/** The Debian package of each tool, for the hint of E_TOOL_MISSING. */
const TOOL_PACKAGES: Record<string, string> = { btrfs: 'btrfs-progs', filefrag: 'e2fsprogs', mount: 'mount', umount: 'mount', git: 'git' };

/** Run a tool; its stdout. A missing binary is E_TOOL_MISSING, a failure the given code with its stderr. */
export async function toolOutput(
  cmd: string,
  args: string[],
  failCode: PdbErrorCode,
  what: string,
  options: { cwd?: string } = {},
): Promise<string> {
  const r = await runTool(cmd, args, { cwd: options.cwd });
  if (r.error || r.exitCode !== 0) {
    if (r.error?.code === 'ENOENT') {
      throw new PdbError('E_TOOL_MISSING', `${cmd} is not installed, so ${what} cannot run`, {
        hint: `Install it (for example apt-get install ${TOOL_PACKAGES[cmd] ?? cmd}).`,
      });
    }
    const stderr = r.stderr.trim().split('\n').slice(-3).join(' ');
    throw new PdbError(
      failCode,
      `${what} failed: ${cmd} ${r.error ? `could not start (${r.error.code})` : `exited ${r.exitCode ?? r.signal}`}: ${stderr}`,
      {
        cause: r.error ?? undefined,
      },
    );
  }
  return r.stdout;
}
