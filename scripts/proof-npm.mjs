#!/usr/bin/env node
// The 30-case npm proof: 30 fresh sequential full-copy cases of the npm lane through
// `pdb-env bench --plan plans/npm-proof.json`, then the pass count and per-step medians (wall
// time and the tools' own milestones) from the receipt it wrote.
//
//   npx tsc -p . && node scripts/proof-npm.mjs [--out receipts] [--store DIR] [--resume RUN] [--plan FILE]
//
// The receipt (and a Markdown summary) land in --out; a failed or timed-out case stays in it with
// its reason. scripts/proof-pnpm.mjs runs the pnpm proof through the same code.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { $ } from 'zx';

const ROOT = join(fileURLToPath(import.meta.url), '..', '..');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

function median(xs) {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const fmt = (ms) => (ms === null ? 'n/a' : ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`);

/** Pass count, per-phase medians and per-milestone medians of a receipt, as Markdown. */
export function summarizeProof(receipt) {
  const cases = receipt.cases.filter((c) => !c.warmup);
  const ok = cases.filter((c) => c.outcome === 'ok');
  const lines = [];
  lines.push(`## ${receipt.planName} (${receipt.runId})`);
  lines.push('');
  lines.push(
    `Passed ${ok.length} of ${cases.length} cases (${cases.filter((c) => c.outcome === 'failed').length} failed, ${cases.filter((c) => c.outcome === 'timeout').length} timed out).`,
  );
  for (const c of cases.filter((x) => x.outcome !== 'ok'))
    lines.push(
      `- ${c.id}: ${c.outcome}, ${c.failure ? `${c.failure.code} in ${c.failure.phase}: ${c.failure.message}` : 'no failure record'}`,
    );
  const shares = cases.filter((c) => c.wallMs > 0).map((c) => c.overheadMs / c.wallMs);
  lines.push(
    `Harness overhead: median ${(100 * (median(shares) ?? 0)).toFixed(2)} %, max ${(100 * Math.max(0, ...shares)).toFixed(2)} % of case wall time.`,
  );
  const methods = [...new Set(cases.map((c) => c.metrics?.pnpmImportMethod).filter(Boolean))];
  if (methods.length)
    lines.push(
      `pnpm import method: ${methods.join(', ')} (${[...new Set(cases.map((c) => c.metrics?.pnpmImportCounts).filter(Boolean))].join('; ')}).`,
    );
  lines.push('');
  lines.push('| phase | median (ok cases) | min | max | n |');
  lines.push('| --- | ---: | ---: | ---: | ---: |');
  const phaseNames = [...new Set(cases.flatMap((c) => c.phases.map((p) => p.name)))];
  for (const name of phaseNames) {
    const xs = ok.flatMap((c) => c.phases.filter((p) => p.name === name && p.outcome === 'ok').map((p) => p.durationMs));
    lines.push(
      `| ${name} | ${fmt(median(xs))} | ${fmt(xs.length ? Math.min(...xs) : null)} | ${fmt(xs.length ? Math.max(...xs) : null)} | ${xs.length} |`,
    );
  }
  const walls = ok.map((c) => c.wallMs);
  lines.push(
    `| case wall | ${fmt(median(walls))} | ${fmt(walls.length ? Math.min(...walls) : null)} | ${fmt(walls.length ? Math.max(...walls) : null)} | ${walls.length} |`,
  );
  lines.push('');
  lines.push('| milestone | median | n |');
  lines.push('| --- | ---: | ---: |');
  for (const name of phaseNames) {
    const keys = [...new Set(ok.flatMap((c) => c.phases.filter((p) => p.name === name).flatMap((p) => Object.keys(p.milestones))))].filter(
      (k) => k.endsWith('Ms'),
    );
    for (const k of keys) {
      const xs = ok.flatMap((c) =>
        c.phases.filter((p) => p.name === name && typeof p.milestones[k] === 'number').map((p) => p.milestones[k]),
      );
      lines.push(`| ${name.replace(/^step:/, '')} ${k} | ${fmt(median(xs))} | ${xs.length} |`);
    }
  }
  return lines.join('\n');
}

/** Run one proof plan through `pdb-env bench` and print its summary. Exit status is bench's. */
export async function runProof(defaultPlan) {
  const plan = arg('plan', join(ROOT, defaultPlan));
  const out = arg('out', join(ROOT, 'receipts'));
  const store = arg('store', null);
  const resume = arg('resume', null);
  const cli = join(ROOT, 'dist', 'cli', 'main.js');
  if (!existsSync(cli)) {
    console.error('dist/cli/main.js is missing: build first with `npx tsc -p .`');
    process.exit(2);
  }
  const args = resume ? ['--resume', resume] : ['--plan', plan];
  if (store) args.push('--store', store);
  const planName = JSON.parse(readFileSync(plan, 'utf8')).name;
  const startedMs = Date.now();
  // Progress lines stream through as bench prints them.
  const r = await $({ nothrow: true, stdio: 'inherit', verbose: false })`node ${cli} bench ${args} --out ${out} --summary`;
  // The receipt is the newest <plan>-<run>.json bench wrote into --out during this run.
  const candidates = existsSync(out)
    ? readdirSync(out)
        .filter((n) => n.startsWith(`${planName}-`) && n.endsWith('.json'))
        .map((n) => ({ n, t: statSync(join(out, n)).mtimeMs }))
        .filter((x) => x.t >= startedMs - 1000)
        .sort((a, b) => b.t - a.t)
    : [];
  if (candidates.length === 0) {
    console.error(`bench exited ${r.exitCode} and wrote no ${planName} receipt into ${out}`);
    process.exit(r.exitCode || 1);
  }
  const file = join(out, candidates[0].n);
  console.log(`receipt: ${basename(file)}`);
  console.log(summarizeProof(JSON.parse(readFileSync(file, 'utf8'))));
  process.exit(r.exitCode);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await runProof('plans/npm-proof.json');
