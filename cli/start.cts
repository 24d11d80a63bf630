// The pdb-env executable's first module (bin/pdb-env runs it). It is CommonJS because Node 20
// starts a CommonJS module without its ES module loader, and because require() gives Node's
// builtins (fs, crypto, path...) without the ES module facade that reads every export, streams
// and fs/promises among them. A plain checkpoint, which an agent loop calls between steps, runs
// the checkpoint bundle (the fast path, without commander) and prints with write(2), so that no
// stdio stream is made either; every other command line runs the `cli` bundle. Each only while
// it is fresh (cli/bundle-state.cts); otherwise bin.js runs the modules (docs/evidence.md quotes
// the receipts).
import { bundleState, loadBundle } from './bundle-state.cjs';
import { restoreCaCerts } from './ca-certs.cjs';
import type { CliEntry, FastPath } from './fast-entry.js';

restoreCaCerts();

function fastCheckpoint(argv: string[]): Promise<number> | null {
  if (argv[0] !== 'checkpoint' || !bundleState(__dirname, 'checkpoint').bundled) return null;
  const bundle = loadBundle(__dirname, 'checkpoint').exports as FastPath;
  const args = bundle.fastCheckpointArgs(argv);
  return args ? bundle.runFast(args, { direct: true }) : null;
}

function bundledCli(argv: string[]): Promise<number> | null {
  if (!bundleState(__dirname, 'cli').bundled) return null;
  return (loadBundle(__dirname, 'cli').exports as CliEntry).runCli(argv);
}

const argv = process.argv.slice(2);
const run = fastCheckpoint(argv) ?? bundledCli(argv);
if (run)
  void run.then((code) => {
    process.exitCode = code;
  });
else void import('./bin.js');
