// The pdb-env executable's first module (bin/pdb-env runs it). It is CommonJS because Node 20
// starts a CommonJS module without its ES module loader, and because require() gives Node's
// builtins (fs, crypto, path...) without the ES module facade that reads every export, streams
// and fs/promises among them. A plain checkpoint, which an agent loop calls between steps, runs
// the CommonJS bundle of the fast path from here when that is fresh (cli/bundle-state.cts), and
// prints with write(2) so that no stdio stream is made either. Every other command line, and a
// checkpoint without a fresh bundle, goes to bin.js as before (docs/evidence.md quotes the
// receipts).
import { checkpointBundleState, loadBundle } from './bundle-state.cjs';
import { restoreCaCerts } from './ca-certs.cjs';
import type { FastPath } from './fast-entry.js';

restoreCaCerts();

function fastCheckpoint(argv: string[]): Promise<number> | null {
  if (argv[0] !== 'checkpoint' || !checkpointBundleState(__dirname).bundled) return null;
  const bundle = loadBundle(__dirname).exports as FastPath;
  const args = bundle.fastCheckpointArgs(argv);
  return args ? bundle.runFast(args, { direct: true }) : null;
}

const fast = fastCheckpoint(process.argv.slice(2));
if (fast)
  void fast.then((code) => {
    process.exitCode = code;
  });
else void import('./bin.js');
