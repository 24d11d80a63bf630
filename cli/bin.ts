#!/usr/bin/env node
// The pdb-env executable: a plain checkpoint call runs on the fast path (fast-path.ts, bundled
// when fresh: fast-entry.ts), every other command line is main() in main.ts, which importing runs
// nothing.
import { fastCheckpointArgs } from './fast-args.js';
import { loadFastPath } from './fast-entry.js';
import { restoreCaCerts } from './ca-certs.cjs';

restoreCaCerts();

// A reader that went away (`pdb-env list | head -1`) is not an error of the command: the work is
// done before its result is printed, so the rest of the output is dropped and the status stays the
// command's own. Any other write error still surfaces.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
}

// A plain `checkpoint` call runs without commander (cli/fast-path.ts says why); everything else
// goes through the command line in main.ts.
const argv = process.argv.slice(2);
const fast = fastCheckpointArgs(argv);
process.exitCode = fast ? await (await loadFastPath()).runFast(fast) : await (await import('./main.js')).main(argv);
