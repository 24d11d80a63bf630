#!/usr/bin/env node
// The 30-case npm proof: 30 fresh sequential full-copy cases of the npm lane through
// `pdb-env bench --plan plans/npm-proof.json`, then the pass count and per-step medians (wall
// time and the tools' own milestones) from the receipt it wrote. The receipt (and a Markdown
// summary) land in --out (default receipts/local, ignored by git; --out receipts for evidence); a failed or timed-out case stays in it with its reason.
import { runProof } from './lib.js';

await runProof(
  'plans/npm-proof.json',
  'usage: npm run proof:npm -- [--out receipts/local] [--store DIR] [--resume RUN] [--plan FILE]\n   or: node dist/scripts/proof-npm.js [same options]',
);
