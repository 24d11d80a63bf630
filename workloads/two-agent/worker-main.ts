#!/usr/bin/env node
// The two-agent worker's process entry: `node two-agent-worker-main.js ROLE SESSION BARRIER_DIR
// NESTED_FILES BARRIER_MS`, started by `pdb-env run` in the agent's session root. Exit 0 when
// every check passed, 1 otherwise, 2 on bad usage.
import { runTwoAgentWorker } from './worker.js';

runTwoAgentWorker(process.argv.slice(2), {
  root: process.cwd(),
  session: process.env.PDB_ENV_SESSION ?? null,
  pid: process.pid,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(`two-agent-worker: ${(err as Error).stack ?? String(err)}`);
    process.exitCode = 1;
  },
);
