#!/usr/bin/env node
// `npm run proof`: the quick default plan over every backend this host can run, then a report. A
// newcomer's run stays local: the receipt goes to receipts/local/ and the report to
// reports/local/<run>/, both ignored by git, so the checked-in evidence never changes by accident.
//
// 1. `pdb-env bench` runs the plan and writes a schema-checked, path-free receipt and a short
//    Markdown summary under --out (unavailable backends are recorded with their reason, skipped);
// 2. `pdb-env report` turns that receipt into report.{md,html,json}: first which backends were
//    correct here and the fastest of them, then the verdict of every shipped policy whose candidate
//    this host could run (a policy about a backend that cannot run here decides nothing from it).
//    Exit status: 1 when any case mismatched, failed or timed out, so CI notices; the mismatches of
//    a backend that carries committed files only (git-worktree) are said and expected (one rule,
//    harness/receipt/expected-mismatch.ts, which the bench's Markdown summary follows too);
// 3. it ends with the answer: the first table of report.md in lines (reports/document/answer.ts
//    closingLines), from the report JSON that the same `pdb-env report` run wrote report.md from.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { $ } from 'zx';
import type { GateResult, Receipt } from '../index.js';
import { readReceiptFile } from '../harness/receipt/envelope.js';
import { EXPECTED_MISMATCH_WHY, isExpectedMismatch, partialBackends } from '../harness/receipt/expected-mismatch.js';
import type { Answer } from '../reports/analysis/report-data.js';
import { closingLines } from '../reports/document/answer.js';
import { packageFile } from '../model/paths.js';
import { CLI, scriptArgs } from './lib.js';

interface BenchJson {
  receipt: string;
  markdown: string | null;
  runId: string;
  /** The receipt's summary, with each mismatched case's first differing paths (cli/commands/bench.ts). */
  summary: Receipt['summary'] & { mismatches: Array<{ backend: string; caseId: string; paths: string[] }> };
  error?: { code: string; message: string };
}

const { values } = scriptArgs(
  'usage: npm run proof -- [--plan plans/default.json] [--out receipts/local] [--store DIR] [--policy FILE]\n   or: node dist/scripts/proof.js [same options]',
  {
    plan: { type: 'string', default: packageFile('plans', 'default.json') },
    out: { type: 'string', default: packageFile('receipts', 'local') },
    store: { type: 'string' },
    policy: { type: 'string' },
  },
);
const sh = $({ verbose: false, quiet: true, nothrow: true });
const shown = (p: string) => relative(process.cwd(), p) || p;

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
// The same counts as the progress line's "case N of M": M is what ran, the planned less the unavailable.
console.log(
  `cases: ${s.planned} planned, ${s.planned - s.unavailable} ran (${s.ok} ok, ${s.mismatch} mismatch, ${s.failed} failed, ${s.environment} environment, ${s.timeout} timeout), ${s.unavailable} unavailable (of backends this host cannot run)`,
);
console.log(
  `oracle: ${s.oracleChecked} case(s) compared with their block's full-copy case, ${s.oracleMismatches} mismatch(es), ${s.oracleNotEvaluated} not evaluated`,
);

const receipt = readReceiptFile(result.receipt).document as Receipt;
const ran = new Set(receipt.backends.filter((b) => b.available).map((b) => b.name));
// A reference backend that does not carry the full Snapshot (git-worktree: committed files only,
// so never an empty directory or an untracked file) is expected to differ: its mismatches show
// what a git worktree drops, said here, and do not fail the proof. Any other case must be ok.
const partial = partialBackends(receipt);
const notOk = receipt.cases.filter((c) => c.outcome !== 'ok' && c.outcome !== 'unavailable');
const expected = notOk.filter((c) => isExpectedMismatch(partial, c));
for (const name of partial) {
  const own = expected.filter((c) => c.backend === name);
  if (own.length === 0) continue;
  // The paths bench reported for these cases, from the checks that found them (not message text).
  const paths = [...new Set(s.mismatches.filter((m) => m.backend === name).flatMap((m) => m.paths))];
  console.log(
    `expected: ${name}: ${EXPECTED_MISMATCH_WHY}; its ${own.length} mismatch(es) show what it drops${paths.length ? ` (${paths.slice(0, 5).join(', ')})` : ''}, and are not a failure of the proof`,
  );
}
/** Every case of `backend` in `workload` that did not end ok is an expected mismatch (the answer says so). */
const expectedIn = (at: { workload: string }, backend: string) => {
  const bad = notOk.filter((c) => c.backend === backend && c.workload === at.workload);
  return bad.length > 0 && bad.every((c) => isExpectedMismatch(partial, c));
};
const benchOk = bench.exitCode === 0 || (bench.exitCode === 1 && notOk.length === expected.length);
// The shipped policies whose candidate ran here (or the one asked for).
const policies = values.policy
  ? [values.policy]
  : readdirSync(packageFile('policies'))
      .filter((f) => f.endsWith('.json') && f !== 'signers.json') // signers.json: the trusted keys, not a policy
      .sort()
      .map((f) => packageFile('policies', f))
      .filter((f) => ran.has((JSON.parse(readFileSync(f, 'utf8')) as { candidate: string }).candidate));
const outDir = packageFile('reports', 'local', result.runId);
let ok = true;
// --json with --out: report.md is written and its data printed, so the answer below is that data.
const main = await sh`node ${CLI} report ${result.receipt} ${policies[0] ? ['--policy', policies[0]] : []} --out ${outDir} --json`;
let answer: string[] = [];
if (main.exitCode === 0) {
  console.log(`report: ${shown(join(outDir, 'report.md'))} (and report.html, report.json)`);
  const data = JSON.parse(main.stdout) as { baseline: string; answers: Answer[] };
  answer = closingLines(data.answers, data.baseline, expectedIn, EXPECTED_MISMATCH_WHY);
} else {
  ok = false;
  console.error(`pdb-env report failed (exit ${main.exitCode}):\n${main.stdout}${main.stderr}`);
}
if (policies.length === 0) {
  const cannot = receipt.backends.filter((b) => !b.available).map((b) => `${b.name} (${b.reason})`);
  console.log(`no shipped policy applies here: their candidates cannot run on this host: ${cannot.join(', ') || 'none'}`);
}
for (const p of policies) {
  const r = await sh`node ${CLI} report ${result.receipt} --policy ${p} --json`;
  if (r.exitCode !== 0) {
    ok = false;
    continue;
  }
  const gate = (JSON.parse(r.stdout) as { gate: GateResult }).gate;
  // A local run is never gate evidence unless it ran at a clean commit; the verdict says why.
  console.log(
    `gate (${gate.policy}): ${gate.verdict}${gate.ignoredReceipts.length ? ` (${gate.ignoredReceipts.map((x) => x.reason).join('; ')})` : ''}`,
  );
}
// The answer last, so it is what the terminal shows when the run ends.
if (answer.length) console.log(['', ...answer].join('\n'));
process.exit(benchOk && ok ? 0 : 1);
