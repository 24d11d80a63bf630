#!/usr/bin/env node
// Regenerate the committed decision report from the committed receipts:
//   reports/current/              full report (Markdown + SVG charts, HTML, JSON) under the reflink policy
//   reports/current/DECISIONS.md  the verdict of every shipped policy, with every reason
//
//   npm run report
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { $ } from 'zx';
import type { GateResult } from '../index.js';
import { packageFile, packageRoot } from '../model/paths.js';
import { CLI, scriptArgs } from './lib.js';

scriptArgs('usage: npm run report   (or: node dist/scripts/report-current.js)', {});
const root = packageRoot();
const out = packageFile('reports', 'current');
const sh = $({ verbose: false, quiet: true, cwd: root });

rmSync(out, { recursive: true, force: true });
await sh`node ${CLI} report receipts --policy policies/reflink-linux.json --out ${out}`;

const lines = [
  '# Current decisions',
  '',
  'From every receipt under `receipts/` (`npm run report`); the full report is `report.md` beside this file.',
  '',
];
const order = { reject: 0, hold: 1, met: 2 };
for (const file of readdirSync(packageFile('policies'))
  .filter((f) => f.endsWith('.json'))
  .sort()) {
  const { gate } = JSON.parse((await sh`node ${CLI} report receipts --policy ${join('policies', file)} --json`).stdout) as {
    gate: GateResult;
  };
  lines.push(`## ${gate.candidate} (policy ${gate.policy}): ${gate.verdict}`, '');
  lines.push('| status | criterion | testbed | finding |', '| --- | --- | --- | --- |');
  for (const f of [...gate.findings].sort((a, b) => order[a.status] - order[b.status])) {
    lines.push(`| ${f.status.toUpperCase()} | ${f.criterion} | ${f.testbed ?? '-'} | ${String(f.message).replace(/\|/g, '\\|')} |`);
  }
  lines.push('');
  console.log(`${gate.policy}: ${gate.verdict}`);
}
writeFileSync(join(out, 'DECISIONS.md'), `${lines.join('\n')}\n`);
console.log(`wrote ${join('reports', 'current')}/report.{md,html,json} and DECISIONS.md`);
