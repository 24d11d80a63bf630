import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { runBench } from '../../harness/bench.js';
import { loadBackendModule } from '../../backends/module.js';
import { loadPlan, loadPlanModules, readPlanDocument, type Plan } from '../../harness/plan/plan.js';
import { parseVarArgs } from '../../harness/plan/plan-vars.js';
import { createProgress } from '../../harness/run-progress.js';
import type { Receipt } from '../../harness/receipt/receipt-types.js';
import { SOURCE_VAR, buildRepoPlan, defaultStoreParent, parseBackendList, runnableBackends } from '../../harness/plan/repo-plan.js';
import { PdbError } from '../../model/errors.js';
import { analyzeReceipts } from '../../reports/analysis/analyze.js';
import { answerLines } from '../../reports/document/answer.js';
import { renderHtml, renderJson, renderMarkdown } from '../../reports/render/render.js';
import { WORKLOADS } from '../../workloads/registry.js';
import type { Workload } from '../../workloads/types.js';
import { emit } from '../output.js';
import type { CommandOptions, GlobalValues } from '../command-table.cjs';
import type { CommandDefinitions, DefineCommand } from '../context.js';

function parseCount(text: string | undefined, what: string, min: number, max: number): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min || n > max)
    throw new PdbError('E_USAGE', `${what} must be an integer in [${min}, ${max}], got "${text}"`);
  return n;
}

const parseSeed = (text: string | undefined) => parseCount(text, '--seed', 0, 0xffffffff);
// Repeatable options start undefined (commander would print a default of [] in --help).
const show = (p: string) => relative(process.cwd(), p) || p;

/**
 * Run the bench with SIGINT and SIGTERM turned into an abort: the harness stops the running case
 * and rejects with E_INTERRUPTED (its hint says how to resume), which main() prints and exits 130.
 */
async function runInterruptible(options: Parameters<typeof runBench>[0]): ReturnType<typeof runBench> {
  const abort = new AbortController();
  // The first SIGINT/SIGTERM interrupts the run; with the handlers gone, a second one ends the process at once.
  const onSignal = (sig: NodeJS.Signals) => {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
    abort.abort(sig);
  };
  process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
  try {
    return await runBench({ ...options, signal: abort.signal });
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
  }
}

async function writeAtomic(file: string, data: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, data);
  await rename(tmp, file);
}

/** The report of one receipt, written under `dir` (Markdown with its charts, HTML, JSON); returns its answer in lines. */
async function writeRunReport(receipt: Receipt, dir: string): Promise<{ answer: string[]; answers: unknown[] }> {
  const data = analyzeReceipts([receipt]);
  const input = { data, gate: null, policy: null };
  const md = renderMarkdown(input, { charts: 'files' });
  const files: Record<string, string> = {
    'report.md': md.markdown,
    'report.html': renderHtml(input),
    'report.json': renderJson(input),
    ...md.files,
  };
  for (const [name, text] of Object.entries(files)) await writeAtomic(join(dir, name), text);
  return { answer: answerLines(data), answers: data.answers };
}

/** Cases whose tree differed from the oracle, with the first paths (from the oracle check, or the new session's own). */
function mismatches(receipt: Receipt): Array<{ backend: string; caseId: string; entries: number | null; paths: string[] }> {
  return receipt.cases
    .filter((c) => c.outcome === 'mismatch')
    .map((c) => {
      const k = c.checks.find((x) => x.name === 'oracle' && x.evaluated && !x.passed) ?? c.checks.find((x) => x.name === 'created-tree');
      return { backend: c.backend, caseId: c.id, entries: k?.mismatches ?? null, paths: k?.paths ?? [] };
    });
}

/** bench's options as the command table declares them, --store among them. */
type BenchFlags = CommandOptions<'bench'> & GlobalValues;

/** A plan with the backends of --backend-module benched too. */
function withModules(plan: Plan, names: string[]): Plan {
  return names.length ? { ...plan, backends: [...new Set([...plan.backends, ...names])] } : plan;
}

/** The plan a one-line bench runs: built from the flags, over --backends or every backend this host can run. */
async function oneLinePlan(o: BenchFlags, workloads: Record<string, Workload>, seed: number | undefined, own: string[]): Promise<Plan> {
  if (o.plan) throw new PdbError('E_USAGE', '--step builds its own plan: give --plan or --step, not both');
  if (!o.source)
    throw new PdbError('E_USAGE', '--step needs --source DIR: the repository to benchmark', {
      hint: "pdb-env bench --source . --step 'test=npm test'",
    });
  const progress = createProgress();
  let backends: string[];
  if (o.backends) backends = [...new Set([...parseBackendList(o.backends), ...own])];
  else {
    const probed = await runnableBackends(defaultStoreParent(o.store), o.source);
    backends = [...probed.available, ...own];
    const skipped = probed.unavailable.map((u) => `${u.name} (${u.reason ?? '?'})`).join(', ');
    progress({ kind: 'note', message: `backends this host can run: ${backends.join(', ')}${skipped ? `; not here: ${skipped}` : ''}` });
  }
  const plan = buildRepoPlan(
    {
      sourceDir: o.source,
      label: o.label,
      steps: o.step ?? [],
      backends,
      blocks: parseCount(o.blocks, '--blocks', 1, 1000),
      warmupBlocks: parseCount(o.warmup, '--warmup', 0, 100),
      seed,
      stepTimeoutMs: parseCount(o.stepTimeout, '--step-timeout', 100, 86_400_000),
      caseTimeoutMs: parseCount(o.caseTimeout, '--case-timeout', 100, 7 * 86_400_000),
      volatile: o.volatile,
    },
    workloads,
  );
  if (o.planOut) await writeAtomic(resolve(o.planOut), `${JSON.stringify(plan, null, 2)}\n`);
  return plan;
}

const HELP = `
Runs every block of the plan (each block: every backend once for one workload, in an
order shuffled from the seed; the plan must include full-copy), compares every other
case entry by entry with its block's full-copy case (the oracle), checks the workload's
expectation, that each new session starts as its base, the unchanged base, a sibling
session of the same backend and cleanup, and writes a schema-validated, path-free
receipt to DIR/<plan>-<run>.json with the commit it ran at (and whether the checkout was
clean and stayed so). Backends this host cannot run are recorded as unavailable with
their reason and skipped; cases stopped by the registry, credentials or the network are
recorded as environment. With --json it prints the receipt path and summary.

The one-line bench (--source DIR --step NAME=COMMAND ...) benchmarks your repository:
it builds a plan of the repo workload (each step a shell command line run in the session
root, with PORT and PDB_ENV_SHARED_DIR set), runs it, writes the receipt and a report
under --out, and prints the answer: the fastest correct backend here, with its ratio to
full-copy and CI, or "too few blocks to tell". Backends that do not reproduce the tree
(git-worktree drops untracked and ignored files) show as mismatch with the first paths.
Milestones, edits to observe and timeouts per step need a plan (plans/repo-example.json).
The shipped plans are in the package's plans/ directory: plans/default.json in a clone,
"$(npm root -g)/pdb-env/plans/default.json" in a global install.

Exit status: 0 when no case mismatched, failed or timed out, 1 otherwise (the
receipt is written either way), 2 on bad usage, 130 when interrupted (resumable).

Examples:
  pdb-env bench --plan plans/default.json --out receipts/local --summary
  pdb-env bench --source . --step 'install=npm ci' --step 'test=npm test' --out receipts/local
  pdb-env bench --plan plans/repo-example.json --source ~/src/app --out receipts/local --report
  PDB_ENV_BENCH_STORE=/mnt/pdb-btrfs npm run proof`;

const ONE_LINE_ONLY = ['backends', 'blocks', 'warmup', 'label', 'stepTimeout', 'caseTimeout', 'planOut'] as const;

/** Options of the one-line bench given without --step, or neither a plan, a one-line bench nor a resume: usage errors. */
function checkUsage(o: BenchFlags & { resume?: string }): void {
  if (o.step?.length) return;
  const stray = [...ONE_LINE_ONLY.filter((k) => o[k] !== undefined), ...(o.volatile?.length ? ['volatile'] : [])];
  if (stray.length)
    throw new PdbError(
      'E_USAGE',
      `--${stray[0]!.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} belongs to the one-line bench: add --step NAME=COMMAND (and --source DIR)`,
    );
  if (!o.plan && !o.resume)
    throw new PdbError('E_USAGE', 'bench needs --plan FILE, --source DIR with --step NAME=COMMAND, or --resume RUN', {
      hint: "pdb-env bench --plan plans/default.json, or pdb-env bench --source . --step 'test=npm test'",
    });
}

/** The run's result on stdout: the answer first (when a report was written), each mismatch, then the receipt's summary. */
function printResult(
  json: boolean,
  r: Awaited<ReturnType<typeof runBench>>,
  report: { dir: string; answer: string[]; answers: unknown[] } | null,
  planOut: string | undefined,
): void {
  const { receipt, receiptPath, summaryPath } = r;
  const s = receipt.summary;
  const differ = mismatches(receipt);
  const unavailable = receipt.backends.filter((b) => !b.available).map((b) => `${b.name} (${b.reason})`);
  const p = receipt.provenance;
  const value = {
    receipt: show(receiptPath),
    markdown: summaryPath ? show(summaryPath) : null,
    report: report ? { dir: show(report.dir), answer: report.answer, answers: report.answers } : null,
    plan: planOut ? show(resolve(planOut)) : null,
    runId: receipt.runId,
    seed: receipt.seed,
    summary: { ...s, mismatches: differ },
  };
  emit(json, value, () =>
    [
      ...(report ? [...report.answer, ''] : []),
      ...differ.map(
        (m) =>
          `mismatch: ${m.backend} case ${m.caseId}: ${m.entries ?? '?'} entries differ from full-copy, first: ${m.paths.join(', ') || '-'}`,
      ),
      `receipt ${show(receiptPath)}${summaryPath ? `\nsummary ${show(summaryPath)}` : ''}${report ? `\nreport ${show(join(report.dir, 'report.md'))}` : ''}`,
      `run ${receipt.runId}, seed ${receipt.seed}: ${s.planned} case slots, ${s.ok} ok, ${s.mismatch} mismatch, ${s.failed} failed, ${s.environment} environment, ${s.timeout} timeout, ${s.unavailable} unavailable (a backend or a lane this host cannot run)`,
      `oracle (each case vs its block's full-copy case): ${s.oracleChecked} checked, ${s.oracleMismatches} mismatch(es), ${s.oracleNotEvaluated} not evaluated; harness overhead median ${s.overheadShareMedian === null ? '-' : `${(s.overheadShareMedian * 100).toFixed(1)} %`}`,
      `provenance: ${p.commit ? `${p.commit.slice(0, 12)}${p.dirty ? ' (DIRTY)' : ''}${p.changedDuringRun ? ' (CHANGED during the run)' : ''}` : 'not a git checkout'}`,
      `unavailable: ${unavailable.join(', ') || 'none'}`,
    ].join('\n'),
  );
}

const bench: DefineCommand<'bench'> = (cmd, ctx) =>
  cmd.addHelpText('after', HELP).action(async (_o, command) => {
    const o = command.optsWithGlobals();
    checkUsage(o);
    const oneLine = (o.step?.length ?? 0) > 0;
    const seed = parseSeed(o.seed);
    const workloads = WORKLOADS as Record<string, Workload>;
    const vars = { ...parseVarArgs(o.var ?? []), ...(o.source ? { [SOURCE_VAR]: resolve(o.source) } : {}) };
    // Backend modules first: a plan may name the backends they declare.
    const own = [];
    for (const f of o.backendModule ?? []) own.push(await loadBackendModule(resolve(f)));
    const ownNames = own.map((m) => m.backend.name);
    const modules = own.map((m) => m.file);
    if (o.plan) modules.push(...(await loadPlanModules(readPlanDocument(o.plan), dirname(resolve(o.plan)))));
    const plan = oneLine
      ? await oneLinePlan(o, workloads, seed, ownNames)
      : o.plan
        ? withModules(loadPlan(o.plan, workloads).plan, ownNames)
        : undefined;
    const outDir = resolve(o.out ?? 'receipts');
    const result = await runInterruptible({
      plan,
      seed,
      outDir,
      resume: o.resume,
      summary: o.summary === true,
      storeParent: o.store,
      workloads,
      vars,
      backendModules: modules,
      allowStaleBuild: o.allowStaleBuild === true,
      planDir: o.plan ? dirname(resolve(o.plan)) : undefined,
      // Progress goes to stderr, so it shows with --json too (stdout stays one JSON document).
      progress: createProgress(),
    });
    const { receipt } = result;
    const reportDir = oneLine || o.report ? join(outDir, `${receipt.planName}-${receipt.runId}-report`) : null;
    const report = reportDir ? { dir: reportDir, ...(await writeRunReport(receipt, reportDir)) } : null;
    printResult(o.json === true, result, report, o.planOut);
    const s = receipt.summary;
    ctx.exitCode = s.mismatch + s.failed + s.timeout > 0 ? 1 : 0;
  });

export const commands: CommandDefinitions<'bench'> = { bench };
