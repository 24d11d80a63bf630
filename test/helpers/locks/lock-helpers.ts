// Spawning real lock holders (test/helpers/locks/lock-child.ts) for the lock and lease tests.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { REPO_ROOT } from '../index.js';

export interface Holder {
  child: ChildProcessWithoutNullStreams;
  pid: number;
  /** The next line the child prints. */
  line(): Promise<string>;
  /** Send "go"; resolves with the child's answer ("won" or "busy ..."). */
  go(): Promise<string>;
  /** Close stdin (the child releases and exits) and wait for the exit. */
  finish(): Promise<void>;
}

const started = new Set<ChildProcessWithoutNullStreams>();

/** Kill every holder still running (call from test.after, so a failed assertion leaves no process behind). */
export function killHolders(): void {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  started.clear();
}

/** Start a child that takes a lock (mode 'lock') or a lease ('writer' | 'exclusive') at `path` on "go". */
export async function startHolder(mode: 'lock' | 'writer' | 'exclusive', path: string): Promise<Holder> {
  const child = spawn(process.execPath, [join(REPO_ROOT, 'dist', 'test', 'helpers', 'locks', 'lock-child.js'), mode, path], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  started.add(child);
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const line = async () => {
    const next = await lines.next();
    if (next.done) throw new Error(`lock child ${child.pid} ended early: ${stderr}`);
    return next.value as string;
  };
  const ready = await line();
  if (ready !== 'ready') throw new Error(`lock child said "${ready}"`);
  return {
    child,
    pid: child.pid!,
    line,
    go: async () => {
      child.stdin.write('go\n');
      return line();
    },
    finish: async () => {
      const exited = child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : once(child, 'exit');
      child.stdin.end();
      await exited;
    },
  };
}

/** Kill a holder the hard way (a crash: nothing released) and wait until it is gone. */
export async function crash(holder: Holder): Promise<void> {
  const exited = once(holder.child, 'exit');
  holder.child.kill('SIGKILL');
  await exited;
}
