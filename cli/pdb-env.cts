// The pdb-env executable: bin/pdb-env runs it, and so do the tests, the harness and the scripts
// (model/paths.ts cliEntry()). It looks the command up in the table (command-table.cts): a plain
// call of a cheap command runs on the cheap path from the checkpoint bundle, any other command
// line from the cli bundle; from the modules where no bundle was built with this dist or with
// PDB_ENV_NO_BUNDLE=1 (cli/bundle.cts). CommonJS, because Node 20 starts a CommonJS module without
// its ES module loader, and require() gives Node's builtins without the ES module facade that
// reads every export (streams and fs/promises among them); docs/evidence.md quotes the receipts.
import { bundleToRun } from './bundle.cjs';
import { cheapCall } from './command-table.cjs';
import type { runCheap } from './cheap-path.js';
import type { runCli } from './main.js';

// bin/pdb-env starts this process without NODE_EXTRA_CA_CERTS (Node 20 parses that bundle at every
// start, 45 ms of a 75 ms `node -e 0` with about 140 certificates, and pdb-env makes no TLS
// connection itself); what pdb-env runs (npm, agents, `pdb-env run`) gets it back unchanged.
const caCerts = process.env.PDB_ENV_NODE_EXTRA_CA_CERTS;
if (caCerts !== undefined) {
  process.env.NODE_EXTRA_CA_CERTS = caCerts;
  delete process.env.PDB_ENV_NODE_EXTRA_CA_CERTS;
}

async function run(argv: string[]): Promise<number> {
  const call = cheapCall(argv);
  if (call) {
    const cheap = (bundleToRun('checkpoint')?.exports as { runCheap: typeof runCheap } | undefined) ?? (await import('./cheap-path.js'));
    return cheap.runCheap(call);
  }
  const cli = (bundleToRun('cli')?.exports as { runCli: typeof runCli } | undefined) ?? (await import('./main.js'));
  return cli.runCli(argv);
}

void run(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
