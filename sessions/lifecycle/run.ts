// Run in an existing session under a writer lease, and scan it for the oracle. (Opening it is
// open.ts's; checkpoint and diff are in checkpoint.ts, discard in discard.ts.)
import { constants as osConstants } from 'node:os';
import { PdbError, osErrorCode } from '../../model/errors.js';
import { scanTree } from '../../model/scan/scan.js';
import type { Entry, Snapshot } from '../../model/snapshot.js';
import { openOperation } from '../locks/operation.js';
import {
  forgetEnded,
  removeEmptyLeaf,
  sessionCgroup,
  spawnInCgroup,
  stopTracked,
  trackProcess,
  trackedProcesses,
} from '../runtime/processes.js';
import { ensureRuntime, runtimeEnv } from '../runtime/runtime.js';
import type { StoreContext } from '../records/session-record.js';
import { resumeSession } from './open.js';

function signalNumber(signal: string | undefined): number {
  return (signal && osConstants.signals[signal as NodeJS.Signals]) || 1;
}

export interface RunOptions {
  stdio?: 'inherit' | 'pipe';
  env?: Record<string, string>;
  purpose?: string;
  /** How long a run ended by a signal waits after TERM before it KILLs what it started (default 5000 ms). */
  graceMs?: number;
}

/**
 * Run a command in the session root under a shared writer lease, stdio passed through.
 * Returns the child's exit code (128 + signal number when it was killed by a signal).
 */
export async function runInSession(
  ctx: StoreContext,
  name: string,
  command: string,
  args: string[],
  options: RunOptions = {},
): Promise<{ exitCode: number; stdout?: string; stderr?: string }> {
  const s = await resumeSession(ctx, name);
  const rt = await ensureRuntime(ctx.store, name); // a session made before runtimes existed gets one now
  const op = await openOperation(ctx, {
    session: { name, dir: s.dir },
    lease: { kind: 'writer', purpose: options.purpose ?? `run ${command}` },
  });
  try {
    const { execa } = await import('execa'); // loaded only where a process starts (list, path... never need it)
    const stdio = options.stdio ?? 'inherit';
    // A detached child leads its own process group; an interactive shell must stay in the terminal's.
    const interactive = stdio === 'inherit' && process.stdin.isTTY === true;
    // Handlers first: a signal that comes before the child is recorded is acted on once it is.
    let tracked: { file: string } | null = null;
    let pending: NodeJS.Signals | null = null;
    // A run ended by a signal stops everything it started (TERM, KILL after the grace), not only its child.
    let stopping: Promise<unknown> | null = null;
    const onSignal = (sig: NodeJS.Signals) => {
      // On a terminal, Ctrl-C already reached the child's group (the foreground one): an interactive
      // shell ignores it and must survive; a command that ends on it ends the run.
      if (interactive && sig === 'SIGINT') return;
      if (!tracked) pending ??= sig;
      else
        stopping ??= trackedProcesses(ctx.store, name).then((all) =>
          stopTracked(
            all.filter((t) => t.file === tracked!.file),
            { graceMs: options.graceMs },
          ),
        );
    };
    process.on('SIGINT', onSignal).on('SIGTERM', onSignal).on('SIGHUP', onSignal);
    const cgroup = sessionCgroup(ctx.store, name);
    const child = spawnInCgroup(cgroup, () =>
      execa(command, args, {
        cwd: s.root,
        stdio,
        reject: false,
        // PWD names the root too: some tools (opencode on Bun) take their working directory from it,
        // and an inherited PWD would point them at wherever pdb-env was started (measured: the source).
        env: { ...options.env, ...runtimeEnv(ctx.store, name, rt), PWD: s.root },
        windowsHide: true,
        detached: !interactive,
      }),
    );
    if (child.pid !== undefined) {
      tracked = await trackProcess(ctx.store, name, child.pid, [command, ...args], { group: !interactive, cgroup });
      if (pending) onSignal(pending);
    } else if (cgroup) removeEmptyLeaf(cgroup); // the program never started: nothing will end in it
    const result = await child;
    if (stopping) await stopping;
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal).off('SIGHUP', onSignal);
    // What it left running stays recorded (ps shows it, doctor names it a stray); an ended tree is forgotten.
    if (tracked) {
      const mine = tracked.file;
      await forgetEnded((await trackedProcesses(ctx.store, name)).filter((t) => t.file === mine));
    }
    if (result.failed && result.exitCode === undefined && !result.signal) throw startFailure(command, result.cause);
    const exitCode = result.exitCode ?? 128 + signalNumber(result.signal);
    return {
      exitCode,
      stdout: typeof result.stdout === 'string' ? result.stdout : undefined,
      stderr: typeof result.stderr === 'string' ? result.stderr : undefined,
    };
  } finally {
    await op.release();
  }
}

/** Entries of the session root right now, every file hashed (no signature trusted): what oracle checks compare. */
export async function scanSessionEntries(ctx: StoreContext, name: string): Promise<Entry[]> {
  const s = await resumeSession(ctx, name);
  const base = ctx.store.getDocument<Snapshot>(s.rec.base);
  return (await scanTree(s.root, { excludes: base.excludes })).entries;
}

/** A program that could not start fails like a shell would: not found (127) or not executable (126), never a usage error. */
function startFailure(command: string, cause: unknown): PdbError {
  const errno = osErrorCode(cause);
  if (errno === 'ENOENT' || errno === 'ENOTDIR')
    return new PdbError('E_COMMAND_NOT_FOUND', `command not found: "${command}"`, {
      cause,
      hint: command.includes('/') ? 'A command with a / is a path from the session root.' : 'Check the command name and PATH.',
    });
  return new PdbError('E_COMMAND_NOT_EXECUTABLE', `cannot execute "${command}": ${errno ?? String(cause)}`, {
    cause,
    hint: 'Make it executable (chmod +x) or run it through its interpreter, e.g. sh FILE.',
  });
}
