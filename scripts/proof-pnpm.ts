#!/usr/bin/env node
// The 30-case pnpm proof: 30 fresh sequential full-copy cases of the pnpm lane through
// `pdb-env bench --plan plans/pnpm-proof.json` (pnpm store, cache and state in the run's own
// directory, never the home directory), then the pass count, per-step medians and the import
// method pnpm used, from the receipt.
import { runProof } from './lib.js';

await runProof(
  'plans/pnpm-proof.json',
  'usage: npm run proof:pnpm -- [--out receipts/local] [--store DIR] [--resume RUN] [--plan FILE]\n   or: node dist/scripts/proof-pnpm.js [same options]',
);
