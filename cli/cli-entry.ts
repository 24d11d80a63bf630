// The whole command line as one call, for bin.js and start.cjs: the entry of the `cli` bundle
// (scripts/build-bundles.mjs), and the module bin.js imports when that bundle is not fresh.
import { main } from './main.js';

/** Run one command line (the arguments after `pdb-env`) as the process's one command; its exit status. */
export async function runCli(argv: string[]): Promise<number> {
  // A reader that went away (`pdb-env list | head -1`) is not an error of the command: the work is
  // done before its result is printed, so the rest of the output is dropped and the status stays
  // the command's own. Any other write error still surfaces.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
    });
  }
  return main(argv);
}

export { main };
