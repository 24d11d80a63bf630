// `pdb-env bench`: plan -> randomized complete blocks -> cases -> receipt. Backends are probed once;
// unavailable ones are recorded and skipped (never replaced). Every finished block goes to the run
// journal first, so an interrupted run (its signal aborted, or a crash) continues with --resume
// without repeating it. The caller owns signals and exit codes: aborting `signal` kills the running
// case's processes, stops scheduling and rejects with E_INTERRUPTED. The checkout's provenance is
// read when the run starts (kept in the journal across --resume) and again when it ends.
import { loadSigningKey } from '../model/signing/key-store.js';
import { mkdirSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadBackendModule } from '../backends/module.js';
import { assertBackendName } from '../backends/registry.js';
import { isPdbError, PdbError } from '../model/errors.js';
import { packageRoot } from '../model/paths.js';
import { SessionService } from '../sessions/service.js';
import { createProcessRunner } from '../workloads/process-runner.js';
import { WORKLOADS } from '../workloads/registry.js';
import type { Workload } from '../workloads/types.js';
import { interrupted, throwIfInterrupted, type BenchOptions, type BenchResult, type BenchRun } from './bench-run.js';
import { runBlocks } from './block-runner.js';
import { createCaseProcessRegistry } from './case/processes.js';
import { hostFingerprint } from './receipt/host.js';
import { createHarnessMemoryLog, createHeapSettler, createRssProbe } from './case/memory.js';
import { boundHeapGrowth } from '../model/os/heap.js';
import { checkPlan, planDigest, type Plan } from './plan/plan.js';
import { requirePlanVars } from './plan/plan-vars.js';
import { provenanceOf, readBuildState, readCheckoutState, staleBuildError } from './receipt/provenance.js';
import { silentProgress } from './run-progress.js';
import { buildReceipt, writeReceipt } from './receipt/receipt.js';
import type { BackendAvailability, HostFingerprint } from './receipt/receipt-types.js';
import { RunJournal, newRunId } from './run-journal.js';
import { prepareWorkloads, probeBackends } from './run-setup.js';
import { makeRunDirs, removeRunStore } from './run-store.js';
import { buildSchedule, type ScheduledBlock } from './plan/scheduler.js';
import { receiptMarkdown } from './receipt/summary-markdown.js';

export { BenchInterrupted, type BenchOptions, type BenchResult } from './bench-run.js';

export async function runBench(options: BenchOptions): Promise<BenchResult> {
  // Before any filesystem work: a receipt must name the code that ran.
  const stale = readBuildState(options.buildRoot ?? packageRoot()).stale;
  if (stale && options.allowStaleBuild !== true) throw staleBuildError(stale);
  const workloads = options.workloads ?? (WORKLOADS as Record<string, Workload>);
  const outDir = resolve(options.outDir);
  mkdirSync(outDir, { recursive: true });
  const { journal, plan, seed } = await openJournal(options, workloads, outDir);
  const header = journal.header();
  const allowTestOnly = plan.allowTestOnlyBackends === true;
  for (const b of plan.backends) assertBackendName(b, { allowTestOnly }); // unknown names fail before any filesystem work
  // Every `${NAME}` of the plan needs a value (a resumed run has the journal's, and may give them anew).
  const vars = { ...header.vars, ...options.vars };
  requirePlanVars(plan, vars);
  // The key that will sign the receipt, read (or made) now: a key that cannot be had fails the run
  // before its cases, not after them.
  loadSigningKey();

  // A fresh store and work dir for this attempt (a previous attempt's are removed). The store's
  // parent: --store, then PDB_ENV_BENCH_STORE (so `npm run proof` can target a btrfs/XFS mount), then the plan.
  const parent = options.storeParent ?? (process.env.PDB_ENV_BENCH_STORE || undefined) ?? plan.store?.dir ?? tmpdir();
  const dirs = await makeRunDirs(header.runId, parent, header);
  journal.writeHeader({ ...header, ...dirs, vars, attempts: header.attempts + (options.resume ? 1 : 0) });

  // The run's own memory is a goal (issue 38): garbage between full collections is kept to 30% of what is live.
  boundHeapGrowth(30);
  const settler = createHeapSettler();
  const rss = createRssProbe({ beforeReset: settler.settle });
  const run: BenchRun = {
    options,
    workloads,
    progress: options.progress ?? silentProgress,
    outDir,
    journal,
    plan,
    seed,
    runId: header.runId,
    ...dirs,
    allowTestOnly,
    proc: options.processRunner ?? createProcessRunner(),
    processes: createCaseProcessRegistry(),
    finished: new Map(journal.cases().map((c) => [c.id, c])),
    index: 0,
    ranHere: 0,
    vars,
    rss,
    memory: createHarnessMemoryLog(rss),
    settle: () => void settler.settle(),
  };
  // Kill the running case's process groups at once; the case then stops and cleans up its sessions.
  const onAbort = () => void run.processes.killAll();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await runAttempt(run);
  } catch (err) {
    // Whatever failed once the run was interrupted (a tool killed by the same Ctrl-C) is the interruption.
    throw options.signal?.aborted && !isPdbError(err, 'E_INTERRUPTED') ? interrupted(run, err) : err;
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    if (plan.store?.keep !== true) await removeAttemptDirs(run);
  }
}

/** The plan, seed and journal: a new run's, or the interrupted run's that `resume` names. */
async function openJournal(
  options: BenchOptions,
  workloads: Record<string, Workload>,
  outDir: string,
): Promise<{ journal: RunJournal; plan: Plan; seed: number }> {
  const build = readBuildState(options.buildRoot ?? packageRoot());
  if (options.resume) {
    const journal = RunJournal.open(outDir, options.resume);
    const h = journal.header();
    await loadModules(h.backendModules ?? []);
    const plan = checkPlan(h.plan, workloads);
    if (options.plan && planDigest(options.plan) !== h.planDigest) {
      throw new PdbError('E_PLAN_INVALID', `the plan differs from the one run ${h.runId} started with`, {
        hint: 'Resume with the same plan (or without --plan: the journal holds it).',
      });
    }
    if (options.seed !== undefined && options.seed !== h.seed)
      throw new PdbError('E_USAGE', `run ${h.runId} uses seed ${h.seed}, not ${options.seed}`, { hint: 'Resume without --seed.' });
    return { journal, plan, seed: h.seed };
  }
  if (!options.plan) throw new PdbError('E_USAGE', 'bench needs a plan', { hint: 'pdb-env bench --plan plans/default.json' });
  const modules = await loadModules([
    ...(options.backendModules ?? []).map((f) => resolve(f)),
    ...(options.plan.backendModules ?? []).map((f) => resolve(options.planDir ?? process.cwd(), f)),
  ]);
  const plan = checkPlan(options.plan, workloads);
  const seed = options.seed ?? plan.seed;
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)
    throw new PdbError('E_USAGE', `--seed must be an integer in [0, 4294967295], got ${seed}`);
  requirePlanVars(plan, options.vars ?? {}); // before the journal exists, so a missing value leaves nothing behind
  const journal = RunJournal.create(outDir, {
    runId: newRunId(),
    plan,
    planDigest: planDigest(plan),
    seed,
    startedAt: new Date().toISOString(),
    checkout: await readCheckoutState(options.provenanceRepo ?? packageRoot(), [outDir]),
    loadAverage: loadavg(),
    build,
    ...(modules.length ? { backendModules: modules } : {}),
  });
  return { journal, plan, seed };
}

/** Load and check every backend module before the plan's names are checked; their real paths. */
async function loadModules(files: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const f of files) out.push((await loadBackendModule(f)).file);
  return [...new Set(out)];
}

async function runAttempt(run: BenchRun): Promise<BenchResult> {
  throwIfInterrupted(run);
  const svc = await SessionService.open(run.storeDir, { create: true });
  const host = await hostFingerprint(run.storeDir, run.journal.header().loadAverage ?? loadavg());
  const prepared = await run.memory.measure('prepare', () => prepareWorkloads(run, svc));
  const backends = await probeBackends(run, svc, prepared.values().next().value?.fixture.sourceDir);
  const available = new Set(backends.filter((b) => b.available).map((b) => b.name));
  const schedule = buildSchedule({
    backends: run.plan.backends,
    workloads: run.plan.workloads.map((w) => w.name),
    blocks: run.plan.blocks,
    warmupBlocks: run.plan.warmupBlocks,
    seed: run.seed,
  });
  await runBlocks(run, svc, schedule, prepared, available);
  throwIfInterrupted(run);
  return writeRunReceipt(run, { host, backends, schedule, available });
}

/** The receipt of every finished case in schedule order (checked and written), then the journal is removed. */
async function writeRunReceipt(
  run: BenchRun,
  r: { host: HostFingerprint; backends: BackendAvailability[]; schedule: ScheduledBlock[]; available: Set<string> },
): Promise<BenchResult> {
  const { plan, runId, outDir } = run;
  const header = run.journal.header();
  const end = await readCheckoutState(run.options.provenanceRepo ?? packageRoot(), [outDir]);
  const receipt = buildReceipt({
    ...r,
    runId,
    plan,
    planDigest: header.planDigest,
    seed: run.seed,
    startedAt: header.startedAt,
    // A journal written before provenance existed has no checkout: the run's start is then unknown.
    provenance: provenanceOf(header.checkout ?? { commit: null, dirty: null, state: null }, end, {
      start: header.build ?? { digest: null, stale: null },
      end: readBuildState(run.options.buildRoot ?? packageRoot()),
      allowedStale: run.options.allowStaleBuild === true,
    }),
    cases: run.finished.values(),
    harness: run.memory.record(),
    pathFree: run.options.pathFree,
  });
  const receiptPath = join(outDir, `${plan.name}-${runId}.json`);
  await writeReceipt(receiptPath, receipt, run.options.pathFree);
  let summaryPath: string | null = null;
  if (run.options.summary) {
    summaryPath = join(outDir, `${plan.name}-${runId}.md`);
    await writeFile(summaryPath, receiptMarkdown(receipt));
  }
  run.journal.remove();
  return { receiptPath, summaryPath, receipt };
}

/** Remove the attempt's work directory and store; a failure is a warning naming the local path to clean by hand. */
async function removeAttemptDirs(run: BenchRun): Promise<void> {
  try {
    rmSync(run.workDir, { recursive: true, force: true, maxRetries: 5 });
  } catch (err) {
    process.stderr.write(`pdb-env: warning: could not remove the run's work directory ${run.workDir}: ${(err as Error).message}\n`);
  }
  await removeRunStore(run.storeDir).catch((err: unknown) => {
    // Not evidence: the local path is what the user needs to clean up by hand.
    run.progress({ kind: 'note', message: `warning: could not remove the run's store ${run.storeDir}: ${(err as Error).message}` });
    process.stderr.write(`pdb-env: warning: could not remove the run's store ${run.storeDir}: ${(err as Error).message}\n`);
  });
}
