// What the scripts share: where the built CLI is, argument parsing with --help, medians, duration
// formatting, and the proof runner (bench a proof plan, then summarize the receipt it wrote).
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { median as sampleMedian } from 'simple-statistics';
import { $ } from 'zx';
import type { Receipt } from '../index.js';
import { readReceiptFile } from '../harness/receipt/envelope.js';
import { cliEntry, packageFile } from '../model/paths.js';

/** The built pdb-env executable. */
export const CLI = cliEntry();

/** True when the module at `url` is the script node was started with (not merely imported). */
export function isMainModule(url: string): boolean {
  const entry = process.argv[1];
  return entry !== undefined && existsSync(entry) && realpathSync(entry) === fileURLToPath(url);
}

/**
 * A script's options (node:util parseArgs, strict): `--help` prints the usage and exits 0; a bad
 * option prints the error and the usage and exits 2.
 */
type ScriptOptions = NonNullable<ParseArgsConfig['options']>;
type ScriptConfig<O extends ScriptOptions> = { args: string[]; options: O; allowPositionals: true; strict: true };

export function scriptArgs<O extends ScriptOptions>(
  usage: string,
  options: O,
  args = process.argv.slice(2),
): ReturnType<typeof parseArgs<ScriptConfig<O>>> {
  if (args.includes('--help') || args.includes('-h')) {
    console.log(usage);
    process.exit(0);
  }
  try {
    const config: ScriptConfig<O> = { args, options, allowPositionals: true, strict: true };
    return parseArgs(config);
  } catch (err) {
    // Node's advice about positionals after `--` does not apply to these scripts.
    console.error(`${(err as Error).message.replace(/\. To specify a positional.*$/s, '.')}\n\n${usage}`);
    process.exit(2);
  }
}

/** The median, or null for no samples. */
export function median(xs: readonly number[]): number | null {
  return xs.length === 0 ? null : sampleMedian([...xs]);
}

/** `123 ms` below 10 s and `12.3 s` above; with `digits`, always seconds (`1.234 s`) for aligned columns; `n/a` for null. */
export function formatDuration(ms: number | null, digits?: number): string {
  if (ms === null || Number.isNaN(ms)) return 'n/a';
  if (digits !== undefined) return `${(ms / 1000).toFixed(digits)} s`;
  return ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}

function spread(xs: number[]): [string, string, string] {
  return [
    formatDuration(median(xs)),
    formatDuration(xs.length ? Math.min(...xs) : null),
    formatDuration(xs.length ? Math.max(...xs) : null),
  ];
}

/** Pass count, per-phase medians and per-milestone medians of a proof receipt, as Markdown. */
export function summarizeProof(receipt: Receipt): string {
  const cases = receipt.cases.filter((c) => !c.warmup);
  const ok = cases.filter((c) => c.outcome === 'ok');
  const count = (outcome: string) => cases.filter((c) => c.outcome === outcome).length;
  const lines = [`## ${receipt.planName} (${receipt.runId})`, ''];
  lines.push(
    `Passed ${ok.length} of ${cases.length} cases (${count('mismatch')} mismatch, ${count('failed')} failed, ${count('environment')} environment, ${count('timeout')} timed out).`,
  );
  const p = receipt.provenance;
  lines.push(
    `Ran ${receipt.startedAt} to ${receipt.finishedAt} at ${p.commit ? p.commit.slice(0, 12) : 'no commit'}${p.dirty ? ' (DIRTY)' : p.dirty === false ? ' (clean)' : ''}${p.changedDuringRun ? ', CHANGED during the run' : ''}; load average at the start ${receipt.host.loadAverage.map((x) => x.toFixed(2)).join(' / ')}.`,
  );
  for (const c of cases.filter((x) => x.outcome !== 'ok'))
    lines.push(
      `- ${c.id}: ${c.outcome}, ${c.failure ? `${c.failure.code} in ${c.failure.phase}: ${c.failure.message}` : 'no failure record'}`,
    );
  const shares = cases.filter((c) => c.wallMs > 0).map((c) => c.overheadMs / c.wallMs);
  lines.push(
    `Harness overhead: median ${(100 * (median(shares) ?? 0)).toFixed(2)} %, max ${(100 * Math.max(0, ...shares)).toFixed(2)} % of case wall time.`,
  );
  const metric = (name: string) => [
    ...new Set(cases.map((c) => c.metrics?.[name]).filter((v) => v !== undefined && v !== null && v !== '')),
  ];
  const methods = metric('pnpmImportMethod');
  if (methods.length) lines.push(`pnpm import method: ${methods.join(', ')} (${metric('pnpmImportCounts').join('; ')}).`);
  lines.push('', '| phase | median (ok cases) | min | max | n |', '| --- | ---: | ---: | ---: | ---: |');
  const phaseNames = [...new Set(cases.flatMap((c) => c.phases.map((p) => p.name)))];
  for (const name of phaseNames) {
    const xs = ok.flatMap((c) => c.phases.filter((p) => p.name === name && p.outcome === 'ok').map((p) => p.durationMs));
    lines.push(`| ${name} | ${spread(xs).join(' | ')} | ${xs.length} |`);
  }
  const walls = ok.map((c) => c.wallMs);
  lines.push(`| case wall | ${spread(walls).join(' | ')} | ${walls.length} |`);
  lines.push('', '| milestone | median | n |', '| --- | ---: | ---: |');
  for (const name of phaseNames) {
    const phases = ok.flatMap((c) => c.phases.filter((p) => p.name === name));
    const keys = [...new Set(phases.flatMap((p) => Object.keys(p.milestones)))].filter((k) => k.endsWith('Ms'));
    for (const k of keys) {
      const xs = phases.map((p) => p.milestones[k]).filter((v): v is number => typeof v === 'number');
      lines.push(`| ${name.replace(/^step:/, '')} ${k} | ${formatDuration(median(xs))} | ${xs.length} |`);
    }
  }
  return lines.join('\n');
}

/** The newest `<plan>-<run>.json` in `out` written since `sinceMs` (the receipt bench just wrote). */
function newestReceipt(out: string, planName: string, sinceMs: number): string | null {
  if (!existsSync(out)) return null;
  const candidates = readdirSync(out)
    .filter((n) => n.startsWith(`${planName}-`) && n.endsWith('.json'))
    .map((n) => ({ n, t: statSync(join(out, n)).mtimeMs }))
    .filter((x) => x.t >= sinceMs - 1000)
    .sort((a, b) => b.t - a.t);
  return candidates[0] ? join(out, candidates[0].n) : null;
}

/**
 * Run one proof plan through `pdb-env bench` and print its summary; exits with bench's status.
 * Options: --plan FILE (default `defaultPlan`), --out DIR (default receipts/local, which git
 * ignores: pass --out receipts to add evidence), --store DIR, --resume RUN.
 */
export async function runProof(defaultPlan: string, usage: string): Promise<never> {
  const { values } = scriptArgs(usage, {
    plan: { type: 'string', default: packageFile(defaultPlan) },
    out: { type: 'string', default: packageFile('receipts', 'local') },
    store: { type: 'string' },
    resume: { type: 'string' },
  });
  if (!existsSync(CLI)) {
    console.error('dist/cli/pdb-env.cjs is missing: build first with `npm run build`');
    process.exit(2);
  }
  const args = values.resume ? ['--resume', values.resume] : ['--plan', values.plan];
  if (values.store) args.push('--store', values.store);
  const planName = (JSON.parse(readFileSync(values.plan, 'utf8')) as { name: string }).name;
  const startedMs = Date.now();
  // Progress lines stream through as bench prints them.
  const r = await $({ nothrow: true, stdio: 'inherit', verbose: false })`node ${CLI} bench ${args} --out ${values.out} --summary`;
  const file = newestReceipt(values.out, planName, startedMs);
  if (!file) {
    console.error(`bench exited ${r.exitCode} and wrote no ${planName} receipt into ${values.out}`);
    process.exit(r.exitCode || 1);
  }
  console.log(`receipt: ${basename(file)}`);
  console.log(summarizeProof(readReceiptFile(file).document as Receipt));
  process.exit(r.exitCode ?? 1);
}
