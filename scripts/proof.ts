#!/usr/bin/env node
// `npm run proof`: the quick default plan over every backend this host can run, then a report.
//
// 1. `pdb-env bench` runs the plan and writes a schema-checked, path-free receipt and a short
//    Markdown summary under --out (unavailable backends are recorded with their reason, skipped);
// 2. `pdb-env report` turns that receipt into reports/out/<run>/report.{md,html,json} with a gate
//    verdict. Exit status is bench's: 1 when any case failed, so CI notices.
import { join } from 'node:path';
import { $ } from 'zx';
import type { GateResult } from '../index.js';
import { packageFile } from '../model/paths.js';
import { CLI, scriptArgs } from './lib.js';

interface BenchJson {
  receipt: string;
  markdown: string | null;
  runId: string;
  summary: { planned: number; ok: number; failed: number; timeout: number; unavailable: number; oracleMismatches: number };
  error?: { code: string; message: string };
}

const { values } = scriptArgs(
  'usage: npm run proof -- [--plan plans/default.json] [--out receipts] [--store DIR] [--policy FILE]\n   or: node dist/scripts/proof.js [same options]',
  {
    plan: { type: 'string', default: packageFile('plans', 'default.json') },
    out: { type: 'string', default: packageFile('receipts') },
    store: { type: 'string' },
    policy: { type: 'string', default: packageFile('policies', 'reflink-linux.json') },
  },
);
const sh = $({ verbose: false, quiet: true, nothrow: true });

const storeArgs = values.store ? ['--store', values.store] : [];
// Progress goes to stderr (shown live); --json puts the receipt path and summary on stdout.
const bench = await sh({
  stdio: ['ignore', 'pipe', 'inherit'],
})`node ${CLI} bench --plan ${values.plan} --out ${values.out} --summary --json ${storeArgs}`;
let result: BenchJson;
try {
  result = JSON.parse(bench.stdout) as BenchJson;
} catch {
  // Not JSON: bench died before it could answer; its output says why.
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

const outDir = packageFile('reports', 'out', result.runId ?? 'latest');
const report = await sh`node ${CLI} report ${result.receipt} --policy ${values.policy} --out ${outDir} --json`;
if (report.exitCode === 0) {
  const gate = (JSON.parse(report.stdout) as { gate: GateResult | null }).gate;
  console.log(`report: ${join(outDir, 'report.md')} (and report.html, report.json)`);
  if (gate) console.log(`gate (${gate.policy ?? 'policy'}): ${gate.verdict}`);
} else {
  console.error(`pdb-env report failed (exit ${report.exitCode}):\n${report.stdout}${report.stderr}`);
}
process.exit(bench.exitCode === 0 && report.exitCode === 0 ? 0 : 1);
