#!/usr/bin/env node
// `npm run proof`: the quick default plan over every backend this host can run, then a report.
//
//   node scripts/proof.mjs [--plan plans/default.json] [--out receipts] [--store DIR] [--policy FILE]
//
// 1. `pdb-env bench` runs the plan and writes a schema-checked, path-free receipt and a short
//    Markdown summary under --out (unavailable backends are recorded with their reason, skipped);
// 2. `pdb-env report` turns that receipt into reports/out/<run>/report.{md,html,json} with a gate
//    verdict. Exit status is bench's: 1 when any case failed, so CI notices.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { $ } from 'zx';

const root = join(fileURLToPath(import.meta.url), '..', '..');
const cli = join(root, 'dist', 'cli', 'main.js');
const { values } = parseArgs({
  options: {
    plan: { type: 'string', default: join(root, 'plans', 'default.json') },
    out: { type: 'string', default: join(root, 'receipts') },
    store: { type: 'string' },
    policy: { type: 'string', default: join(root, 'policies', 'reflink-linux.json') },
  },
});
$.verbose = false;
$.quiet = true;

const storeArgs = values.store ? ['--store', values.store] : [];
// Progress goes to stderr (shown live); --json puts the receipt path and summary on stdout.
const bench = await $({
  stdio: ['ignore', 'pipe', 'inherit'],
  nothrow: true,
})`node ${cli} bench --plan ${values.plan} --out ${values.out} --summary --json ${storeArgs}`;
let result;
try {
  result = JSON.parse(bench.stdout);
} catch {
  console.error(`pdb-env bench did not write a receipt (exit ${bench.exitCode}):\n${bench.stdout}`);
  process.exit(bench.exitCode || 1);
}
if (result.error) {
  console.error(`pdb-env bench: ${result.error.code}: ${result.error.message}`);
  process.exit(bench.exitCode || 1);
}
const s = result.summary;
console.log(`receipt: ${result.receipt}`);
if (result.markdown) console.log(`summary: ${result.markdown}`);
console.log(
  `cases: ${s.planned} planned, ${s.ok} ok, ${s.failed} failed, ${s.timeout} timeout, ${s.unavailable} unavailable; oracle mismatches ${s.oracleMismatches}`,
);

const outDir = join(root, 'reports', 'out', result.runId ?? 'latest');
const report = await $({ nothrow: true })`node ${cli} report ${result.receipt} --policy ${values.policy} --out ${outDir} --json`;
if (report.exitCode === 0) {
  const gate = JSON.parse(report.stdout).gate;
  console.log(`report: ${join(outDir, 'report.md')} (and report.html, report.json)`);
  if (gate) console.log(`gate (${gate.policy ?? 'policy'}): ${gate.verdict}`);
} else {
  console.error(`pdb-env report failed (exit ${report.exitCode}):\n${report.stdout}${report.stderr}`);
}
process.exit(bench.exitCode === 0 && report.exitCode === 0 ? 0 : 1);
