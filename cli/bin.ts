#!/usr/bin/env node
// The pdb-env executable as the modules run it (tests and the harness run this file; bin/pdb-env
// starts at start.cjs, which asks the same before any ES module is loaded): a plain checkpoint
// call runs on the fast path (fast-path.ts), every other command line is runCli in cli-entry.ts;
// each from its bundle when that is fresh (fast-entry.ts).
import { fastCheckpointArgs } from './fast-args.js';
import { loadCli, loadFastPath } from './fast-entry.js';
import { restoreCaCerts } from './ca-certs.cjs';

restoreCaCerts();

const argv = process.argv.slice(2);
const fast = fastCheckpointArgs(argv);
process.exitCode = fast ? await (await loadFastPath()).runFast(fast) : await (await loadCli()).runCli(argv);
