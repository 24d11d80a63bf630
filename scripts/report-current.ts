#!/usr/bin/env node
// Regenerate the committed decision report from the committed receipts only (`git ls-files`: a
// local run under receipts/local/, or any receipt not yet committed, never reaches it):
//   reports/current/              full report (Markdown + SVG charts, HTML, JSON) under the reflink policy
//   reports/current/DECISIONS.md  the verdict of every shipped policy, with every reason
//
//   npm run report
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { $ } from 'zx';
import type { GateResult } from '../index.js';
import { readReceiptFile } from '../harness/receipt/envelope.js';
import { packageFile, packageRoot } from '../model/paths.js';
import { CLI, scriptArgs } from './lib.js';

scriptArgs('usage: npm run report   (or: node dist/scripts/report-current.js)', {});
const root = packageRoot();
const out = packageFile('reports', 'current');
const sh = $({ verbose: false, quiet: true, cwd: root });

const listed = await sh({ nothrow: true })`git ls-files -- receipts/*.json`;
if (listed.exitCode !== 0) {
  console.error('npm run report reads the receipts git tracks, and this is not a git checkout');
  process.exit(2);
}
// Harness receipts only: benchmark receipts (receipts/bench/) are another kind of document.
const receipts = listed.stdout
  .split('\n')
  .filter((f) => f.endsWith('.json') && !f.startsWith('receipts/local/'))
  .filter((f) => (readReceiptFile(join(root, f)).document as { kind?: string }).kind === 'pdb-env-receipt');
if (receipts.length === 0) {
  console.error('no tracked receipts under receipts/');
  process.exit(2);
}

rmSync(out, { recursive: true, force: true });
await sh`node ${CLI} report ${receipts} --policy policies/reflink-linux.json --out ${out}`;

const lines = [
  '# Current decisions',
  '',
  `From the ${receipts.length} receipts git tracks under \`receipts/\` (\`npm run report\`); the full report is \`report.md\` beside this file.`,
  'Receipts that are not gate evidence (schema version 1, or a run at a dirty or changing commit) are shown in the report and left out of every decision below.',
  '',
];
const order = { reject: 0, hold: 1, met: 2 };
for (const file of readdirSync(packageFile('policies'))
  .filter((f) => f.endsWith('.json') && f !== 'signers.json')
  .sort()) {
  const { gate } = JSON.parse((await sh`node ${CLI} report ${receipts} --policy ${join('policies', file)} --json`).stdout) as {
    gate: GateResult;
  };
  lines.push(`## ${gate.candidate} (policy ${gate.policy}): ${gate.verdict}`, '');
  if (gate.ignoredReceipts.length)
    lines.push(
      `Left out: ${gate.ignoredReceipts.length} receipt(s) (${[...new Set(gate.ignoredReceipts.map((r) => r.reason))].join('; ')}).`,
      '',
    );
  lines.push('| status | criterion | testbed | finding |', '| --- | --- | --- | --- |');
  for (const f of [...gate.findings].sort((a, b) => order[a.status] - order[b.status])) {
    lines.push(`| ${f.status.toUpperCase()} | ${f.criterion} | ${f.testbed ?? '-'} | ${String(f.message).replace(/\|/g, '\\|')} |`);
  }
  lines.push('');
  console.log(`${gate.policy}: ${gate.verdict}`);
}
writeFileSync(join(out, 'DECISIONS.md'), `${lines.join('\n')}\n`);
console.log(`wrote ${join('reports', 'current')}/report.{md,html,json} and DECISIONS.md from ${receipts.length} tracked receipts`);
