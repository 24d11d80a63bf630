#!/usr/bin/env node
// The pdb-env executable; the command line itself is main() in main.ts, which importing runs nothing.
import { main } from './main.js';

process.exitCode = await main(process.argv.slice(2));
