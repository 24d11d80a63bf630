import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { PdbError } from '../model/errors.js';
import type { LongRunningProcess, ProcessOptions, ProcessResult, ProcessRunner } from './types.js';

const GNU_TIME = '/usr/bin/time';

/** Parse `/usr/bin/time -f '%U %S %M'` output: user s, system s, max RSS KiB. */
function readTimeFile(file: string): Pick<ProcessResult, 'cpuUserMs' | 'cpuSystemMs' | 'peakRssBytes'> {
  try {
    const last = readFileSync(file, 'utf8').trim().split('\n').pop() ?? '';
    const m = /^([\d.]+) ([\d.]+) (\d+)$/.exec(last);
    if (m)
      return {
        cpuUserMs: Math.round(Number(m[1]) * 1000),
        cpuSystemMs: Math.round(Number(m[2]) * 1000),
        peakRssBytes: Number(m[3]) * 1024,
      };
  } catch {
    /* no file: the child never started */
  }
  return { cpuUserMs: null, cpuSystemMs: null, peakRssBytes: null };
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (!pid) return;
  try {
    process.kill(-pid, signal);
  } catch {
    /* group already gone */
  }
}

/** Direct children of a process (Linux /proc), empty where that is not readable. */
function childPids(pid: number | undefined): number[] {
  if (!pid) return [];
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function signalPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    /* already gone */
  }
}

type Spawned = ReturnType<typeof spawnTimed>;
type SpawnOptions = { cwd: string; env?: Record<string, string | undefined>; input?: string };
interface RunnerSetup {
  useTime: boolean;
  baseEnv: Record<string, string | undefined>;
}

/** Start `command` in its own process group, under GNU time when `useTime`. */
function spawnTimed(setup: RunnerSetup, command: string, args: string[], opts: SpawnOptions) {
  const scratch = mkdtempSync(join(tmpdir(), 'pdb-time-'));
  const timeFile = join(scratch, 'time');
  const [cmd, argv] = setup.useTime ? [GNU_TIME, ['-f', '%U %S %M', '-o', timeFile, '--', command, ...args]] : [command, args];
  const child = execa(cmd, argv, {
    cwd: opts.cwd,
    env: { ...setup.baseEnv, ...opts.env },
    extendEnv: false,
    detached: true,
    reject: false,
    all: true,
    input: opts.input,
    stdin: opts.input === undefined ? 'ignore' : undefined,
    buffer: true,
    cleanup: true,
  });
  return { child, timeFile, scratch };
}

function finish(
  r: Awaited<ResultPromise<{ all: true }>>,
  spawned: Pick<Spawned, 'timeFile' | 'scratch'>,
  durationMs: number,
  timedOut: boolean,
): ProcessResult {
  const usage = readTimeFile(spawned.timeFile);
  rmSync(spawned.scratch, { recursive: true, force: true });
  return {
    exitCode: r.exitCode ?? null,
    signal: r.signal ?? null,
    timedOut,
    durationMs,
    ...usage,
    stdout: typeof r.stdout === 'string' ? r.stdout : '',
    stderr: typeof r.stderr === 'string' ? r.stderr : '',
  };
}

async function runToEnd(setup: RunnerSetup, command: string, args: string[], opts: ProcessOptions): Promise<ProcessResult> {
  const t0 = performance.now();
  const spawned = spawnTimed(setup, command, args, opts);
  const { child } = spawned;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child.pid, 'SIGTERM');
    setTimeout(() => killGroup(child.pid, 'SIGKILL'), 2000).unref();
  }, opts.timeoutMs);
  const r = await child;
  clearTimeout(timer);
  killGroup(child.pid, 'SIGKILL'); // anything the command left running in its group
  if (r.failed && r.exitCode === undefined && !r.signal && !timedOut) {
    rmSync(spawned.scratch, { recursive: true, force: true });
    throw new PdbError('E_STEP_FAILED', `could not start ${command}: ${r.shortMessage}`);
  }
  return finish(r as never, spawned, performance.now() - t0, timedOut);
}

function startLongRunning(setup: RunnerSetup, command: string, args: string[], opts: SpawnOptions): LongRunningProcess {
  const t0 = performance.now();
  const spawned = spawnTimed(setup, command, args, opts);
  const { child } = spawned;
  let out = '';
  let exited = false;
  const watchers = new Set<() => void>();
  child.all?.on('data', (d: Buffer) => {
    out += d.toString();
    for (const w of [...watchers]) w();
  });
  const done = child.then((r) => {
    exited = true;
    for (const w of [...watchers]) w();
    return r;
  });
  let stopped: Promise<ProcessResult> | null = null;
  return {
    pid: child.pid ?? -1,
    output: () => out,
    hasExited: () => exited,
    waitForOutput(predicate, timeoutMs, what) {
      // Event-driven: checked on every chunk of output and on exit, never on a sleep.
      return new Promise((resolve, reject) => {
        const settle = (err?: PdbError) => {
          watchers.delete(check);
          clearTimeout(timer);
          if (err) reject(err);
          else resolve();
        };
        const check = () => {
          if (predicate(out)) settle();
          else if (exited) settle(new PdbError('E_STEP_FAILED', `${command} exited before ${what}`));
        };
        const timer = setTimeout(() => settle(new PdbError('E_TIMEOUT', `no ${what} within ${timeoutMs} ms`)), timeoutMs);
        watchers.add(check);
        check();
      });
    },
    stop() {
      stopped ??= (async () => {
        // Signal the command, not GNU time: time must outlive it to write CPU and RSS. The
        // rest of the group (the command's own children) is ended after time has exited.
        const leaderExit =
          child.exitCode !== null || child.signalCode !== null
            ? Promise.resolve()
            : new Promise<void>((res) => child.once('exit', () => res()));
        const children = setup.useTime ? childPids(child.pid) : [];
        if (children.length) for (const pid of children) signalPid(pid, 'SIGTERM');
        else killGroup(child.pid, 'SIGTERM');
        const hard = setTimeout(() => killGroup(child.pid, 'SIGKILL'), 3000);
        await leaderExit;
        killGroup(child.pid, 'SIGTERM'); // grandchildren that may still hold the output pipes
        const r = await done;
        clearTimeout(hard);
        killGroup(child.pid, 'SIGKILL');
        return finish(r as never, spawned, performance.now() - t0, false);
      })();
      return stopped;
    },
  };
}

/**
 * Runs processes for workloads: each in its own process group (detached), killed as a group on
 * timeout or stop, with child CPU and peak RSS measured by GNU time when it is installed.
 */
export function createProcessRunner(options: { baseEnv?: Record<string, string | undefined> } = {}): ProcessRunner {
  const setup: RunnerSetup = {
    useTime: existsSync(GNU_TIME),
    baseEnv: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', ...options.baseEnv },
  };
  return {
    run: (command, args, opts) => runToEnd(setup, command, args, opts),
    start: (command, args, opts) => startLongRunning(setup, command, args, opts),
  };
}
