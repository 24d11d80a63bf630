// A child process that swaps two names in one directory with renameat2(RENAME_EXCHANGE) as fast as
// it can (a real directory and a link to somewhere else, say), started once a trigger path exists:
// how the campaign of issue 41 made apply, discard and restore follow a parent swapped for a link.
// python3's os.rename cannot exchange; the addon's exchangeAt (model/os/dir-handle.ts) can.
import { spawn } from 'node:child_process';
import { lstatSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { closeDir, exchangeAt, openRoot } from '../../model/os/dir-handle.js';
import { loadNativeAddon } from '../../model/os/native.js';

const MODULE = new URL('../../model/os/dir-handle.js', import.meta.url).href;

/** Why no swap loop can run here (no addon with renameat2), or null. */
export function swapLoopMissing(): string | null {
  const a = loadNativeAddon().addon as { renameAt?: unknown } | null;
  return process.platform === 'linux' && typeof a?.renameAt === 'function' ? null : 'no native addon with renameat2 here';
}

export interface SwapLoop {
  /** Stop the loop (SIGKILL) and put the two names back as they were; how many swaps it made (at least). */
  stop(): Promise<number>;
}

/**
 * Swap `dir/a` and `dir/b` in a loop once `trigger` exists (at once without one). `a` is the
 * real directory: after stop() it is one again.
 */
export function startSwapLoop(dir: string, a: string, b: string, trigger?: string): SwapLoop {
  const script = `import { existsSync, writeSync } from 'node:fs';
import { openRoot, exchangeAt } from ${JSON.stringify(MODULE)};
const [dir, a, b, trigger] = process.argv.slice(1);
const h = openRoot(dir);
const pause = new Int32Array(new SharedArrayBuffer(4));
while (trigger && !existsSync(trigger)) Atomics.wait(pause, 0, 0, 1);
writeSync(1, 'go\\n');
// A name gone (the command under test removed the link, say): the loop ends there.
try { for (;;) exchangeAt(h, a, h, b); } catch { process.exit(0); }`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, dir, a, b, trigger ?? ''], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, PDB_ENV_DIR_HANDLES: '' },
  });
  let started = false;
  child.stdout.on('data', () => (started = true));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return {
    async stop() {
      child.kill('SIGKILL');
      await exited;
      // A name the operation under test removed (a link renamed away, say) stays as it is.
      const [la, lb] = [a, b].map((x) => lstatSync(join(dir, x), { throwIfNoEntry: false }));
      // The real directory left under the link's name (the link itself renamed away): its own name back.
      if (!la && lb?.isDirectory()) renameSync(join(dir, b), join(dir, a));
      else if (la?.isSymbolicLink() && lb?.isDirectory()) {
        const h = openRoot(dir);
        try {
          exchangeAt(h, a, h, b);
        } finally {
          closeDir(h);
        }
      }
      return started ? 1 : 0;
    },
  };
}
