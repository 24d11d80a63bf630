// `pdb-env bench`: plan -> randomized complete blocks -> cases -> receipt. Backends are probed once;
// unavailable ones are recorded and skipped (never replaced). Every finished case goes to the run
// journal first, so an interrupted run (its signal aborted, or a crash) continues with --resume
// without repeating it. The caller owns signals and exit codes: aborting `signal` kills the running
// case's processes, stops scheduling and rejects with E_INTERRUPTED.
import { mkdirSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getBackend, probeBackend } from '../backends/registry.js';
import { isPdbError, PdbError } from '../model/errors.js';
import type { Entry } from '../model/snapshot.js';
import { SessionService } from '../sessions/service.js';
import { createProcessRunner } from '../workloads/process-runner.js';
import { WORKLOADS } from '../workloads/registry.js';
import type { Fixture, ProcessRunner, Workload } from '../workloads/types.js';
import { applyDeferredOracle, type BaseInfo } from './case-checks.js';
import { createCaseProcessRegistry, type CaseProcessRegistry } from './case-processes.js';
import { runCase, type CaseEnv, type CaseResult } from './case-runner.js';
import { hostFingerprint } from './host.js';
import { checkPlan, planDigest, workloadParams, type Plan } from './plan.js';
import { scrubText, type PathFreeOptions } from './path-free.js';
import { silentProgress, type ProgressSink } from './progress.js';
import { buildReceipt, writeReceipt } from './receipt.js';
import type { BackendAvailability, CaseRecord, HostFingerprint, Receipt } from './receipt-types.js';
import { RunJournal, newRunId } from './run-journal.js';
import { makeRunDirs, removeRunStore } from './run-store.js';
import { buildSchedule, type ScheduledBlock, type ScheduledCase } from './scheduler.js';
import { receiptMarkdown } from './summary-markdown.js';

export interface BenchOptions {
  /** A parsed plan (from loadPlan), or omitted with `resume` (the journal holds the plan). */
  plan?: Plan;
  seed?: number;
  /** Where the receipt (and the run journal) go. */
  outDir: string;
  /** Continue this interrupted run. */
  resume?: string;
  /** Also write a Markdown summary next to the receipt. */
  summary?: boolean;
  /** Parent directory for the run's store (overrides the plan's store.dir). */
  storeParent?: string;
  /** Workload registry (tests add their own). */
  workloads?: Record<string, Workload>;
  progress?: ProgressSink;
  /**
   * Interrupts the run: the running case's processes are killed, no further case starts, the run's
   * store and work directory are removed as at any end, the journal stays for --resume, and the
   * run rejects with E_INTERRUPTED (its hint says how to continue). A string reason (e.g. the
   * signal's name) is named in the message.
   */
  signal?: AbortSignal;
  /** Test seam: stop (as if interrupted) after this many cases ran in this process. */
  stopAfterCases?: number;
  /** Test seam: grace for in-process work after a case timeout. */
  graceMs?: number;
  pathFree?: PathFreeOptions;
  processRunner?: ProcessRunner;
}

export interface BenchResult {
  receiptPath: string;
  summaryPath: string | null;
  receipt: Receipt;
}

/** Thrown by the stopAfterCases seam: the run is left resumable, like a crash would leave it. */
export class BenchInterrupted extends Error {
  constructor(readonly runId: string) {
    super(`run ${runId} interrupted`);
  }
}

// A sibling in the compiled tree (dist/harness -> dist/cli), not a file the package ships as data.
const CLI_PATH = fileURLToPath(new URL('../cli/bin.js', import.meta.url));

interface PreparedWorkload {
  fixture: Fixture;
  base: BaseInfo;
  expected: Entry[] | null;
  params: Record<string, unknown>;
}

/** One attempt of a run: what every stage reads, and the counters they share. */
interface BenchRun {
  options: BenchOptions;
  workloads: Record<string, Workload>;
  progress: ProgressSink;
  outDir: string;
  journal: RunJournal;
  plan: Plan;
  seed: number;
  runId: string;
  storeDir: string;
  workDir: string;
  allowTestOnly: boolean;
  proc: ProcessRunner;
  processes: CaseProcessRegistry;
  /** Finished cases by id: from the journal, then from this attempt. */
  finished: Map<string, CaseRecord>;
  /** The "case i of N" counter, and the cases this process ran (for stopAfterCases). */
  index: number;
  ranHere: number;
}

export async function runBench(options: BenchOptions): Promise<BenchResult> {
  const workloads = options.workloads ?? (WORKLOADS as Record<string, Workload>);
  const outDir = resolve(options.outDir);
  mkdirSync(outDir, { recursive: true });
  const { journal, plan, seed } = openJournal(options, workloads, outDir);
  const header = journal.header();
  const allowTestOnly = plan.allowTestOnlyBackends === true;
  for (const b of plan.backends) getBackend(b, { allowTestOnly }); // unknown names fail before any filesystem work

  // A fresh store and work dir for this attempt (a previous attempt's are removed). The store's
  // parent: --store, then PDB_ENV_BENCH_STORE (so `npm run proof` can target a btrfs/XFS mount), then the plan.
  const parent = options.storeParent ?? (process.env.PDB_ENV_BENCH_STORE || undefined) ?? plan.store?.dir ?? tmpdir();
  const dirs = await makeRunDirs(header.runId, parent, header);
  journal.writeHeader({ ...header, ...dirs, attempts: header.attempts + (options.resume ? 1 : 0) });

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
function openJournal(
  options: BenchOptions,
  workloads: Record<string, Workload>,
  outDir: string,
): { journal: RunJournal; plan: Plan; seed: number } {
  if (options.resume) {
    const journal = RunJournal.open(outDir, options.resume);
    const h = journal.header();
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
  const plan = checkPlan(options.plan, workloads);
  const seed = options.seed ?? plan.seed;
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)
    throw new PdbError('E_USAGE', `--seed must be an integer in [0, 4294967295], got ${seed}`);
  const journal = RunJournal.create(outDir, {
    runId: newRunId(),
    plan,
    planDigest: planDigest(plan),
    seed,
    startedAt: new Date().toISOString(),
  });
  return { journal, plan, seed };
}

function relOut(p: string): string {
  return p.startsWith(`${process.cwd()}/`) ? p.slice(process.cwd().length + 1) : p;
}

function interrupted(run: BenchRun, cause?: unknown): PdbError {
  const reason: unknown = run.options.signal?.reason;
  const finished = run.journal.cases().length;
  return new PdbError(
    'E_INTERRUPTED',
    `interrupted${typeof reason === 'string' ? ` by ${reason}` : ''}: run ${run.runId} stopped with ${finished} finished case(s) kept in its journal`,
    { hint: `continue with: pdb-env bench --resume ${run.runId} --out ${relOut(run.outDir)}`, cause },
  );
}

function throwIfInterrupted(run: BenchRun): void {
  if (run.options.signal?.aborted) throw interrupted(run);
}

async function runAttempt(run: BenchRun): Promise<BenchResult> {
  throwIfInterrupted(run);
  const svc = await SessionService.open(run.storeDir, { create: true });
  const host = await hostFingerprint(run.storeDir);
  const prepared = await prepareWorkloads(run, svc);
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

/** Each workload's fixture and its imported base (one per workload), with the precomputed expectation when it has one. */
async function prepareWorkloads(run: BenchRun, svc: SessionService): Promise<Map<string, PreparedWorkload>> {
  const prepared = new Map<string, PreparedWorkload>();
  for (const entry of run.plan.workloads) {
    throwIfInterrupted(run);
    const w = run.workloads[entry.name]!;
    const params = workloadParams(w, entry);
    run.progress({ kind: 'note', message: `preparing fixture for ${w.name}` });
    const fixture = await w.prepareFixture(join(run.workDir, 'fixtures'), params, run.proc);
    const imported = await svc.importSource(fixture.sourceDir);
    const base: BaseInfo = { digest: imported.digest, entries: imported.snapshot.entries, excludes: imported.snapshot.excludes };
    const expected = w.expected ? w.project(await w.expected(base.entries, params), params) : null;
    prepared.set(w.name, { fixture, base, expected, params });
  }
  return prepared;
}

/** Every backend of the plan, probed once on the run's store. */
async function probeBackends(run: BenchRun, svc: SessionService, firstSource: string | undefined): Promise<BackendAvailability[]> {
  const backends: BackendAvailability[] = [];
  for (const name of run.plan.backends) {
    throwIfInterrupted(run);
    const r = await probeBackend(getBackend(name, { allowTestOnly: run.allowTestOnly }), svc.backendContext(firstSource));
    const evidence: BackendAvailability['evidence'] = {};
    for (const [k, v] of Object.entries(r.evidence)) evidence[k] = typeof v === 'string' ? scrubText(v) : v;
    backends.push({
      name,
      available: r.available,
      reason: r.reason,
      detail: scrubText(r.detail),
      experimental: r.experimental,
      evidence,
      capabilities: { ...r.capabilities },
    });
    run.progress({
      kind: 'note',
      message: `backend ${name}: ${r.available ? 'available' : `unavailable (${r.reason}): ${scrubText(r.detail)}`}`,
    });
  }
  return backends;
}

async function runBlocks(
  run: BenchRun,
  svc: SessionService,
  schedule: ScheduledBlock[],
  prepared: Map<string, PreparedWorkload>,
  available: Set<string>,
): Promise<void> {
  const runnable = schedule.flatMap((b) => b.cases).filter((c) => available.has(c.backend));
  run.index = runnable.filter((c) => run.finished.has(c.id)).length;
  if (run.index > 0)
    run.progress({ kind: 'note', message: `resuming run ${run.runId}: ${run.index} of ${runnable.length} cases already finished` });
  const env: CaseEnv = {
    svc,
    storeDir: run.storeDir,
    cliPath: CLI_PATH,
    proc: run.proc,
    // On the store's filesystem, so a shared package store (pnpm) can hard-link or clone into
    // sessions as it would for a user, instead of copying across devices.
    sharedDir: join(run.storeDir, 'run-shared'),
    scratchRoot: join(run.workDir, 'scratch'),
    allowTestOnly: run.allowTestOnly,
    caseTimeoutMs: run.plan.caseTimeoutMs,
    sessionPrefix: 'c',
    log: (m) => run.progress({ kind: 'note', message: scrubText(m) }),
    graceMs: run.options.graceMs,
    baseState: new Map(),
    processes: run.processes,
    signal: run.options.signal,
  };
  mkdirSync(env.sharedDir, { recursive: true });
  for (const block of schedule) await runBlock(run, env, block, prepared.get(block.workload)!, available, runnable.length);
}

/**
 * One block: a full-copy sibling made before its first case (it must be untouched at every check),
 * then its cases in their shuffled order. Cases with a precomputed expectation are journaled one by
 * one; without one, the block's full-copy case is the oracle, so the block is journaled at its end.
 */
async function runBlock(
  run: BenchRun,
  env: CaseEnv,
  block: ScheduledBlock,
  p: PreparedWorkload,
  available: Set<string>,
  total: number,
): Promise<void> {
  const todo = block.cases.filter((c) => available.has(c.backend) && !run.finished.has(c.id));
  if (todo.length === 0) return;
  throwIfInterrupted(run);
  const deferred = p.expected === null;
  const sibling = `s-b${block.index}`;
  await env.svc.create(sibling, { from: p.fixture.sourceDir, base: p.base.digest, backend: 'full-copy' });
  const results: CaseResult[] = [];
  try {
    for (const sc of deferred ? block.cases.filter((c) => available.has(c.backend)) : todo) {
      if (run.options.stopAfterCases !== undefined && run.ranHere >= run.options.stopAfterCases) throw new BenchInterrupted(run.runId);
      throwIfInterrupted(run);
      const r = await runScheduledCase(run, env, sc, p, sibling, total);
      if (deferred) results.push(r);
      else finish(run, r.record);
    }
  } finally {
    // Best effort: the sibling lives in the run's store, which is removed at the end of the attempt anyway.
    await env.svc.discard(sibling, { force: true }).catch(() => {});
  }
  if (deferred) {
    const oracle = results.find((r) => r.record.backend === 'full-copy') ?? null;
    for (const r of results) {
      applyDeferredOracle(r.record, r.projected, oracle ? { projected: oracle.projected, record: oracle.record } : null, p.base);
      finish(run, r.record);
    }
  }
}

function finish(run: BenchRun, record: CaseRecord): void {
  run.journal.append(record);
  run.finished.set(record.id, record);
}

/** One case with its progress lines. A case cut short by the run's interruption is not a result: --resume runs it again. */
async function runScheduledCase(
  run: BenchRun,
  env: CaseEnv,
  sc: ScheduledCase,
  p: PreparedWorkload,
  sibling: string,
  total: number,
): Promise<CaseResult> {
  const index = ++run.index;
  const shown = { index, total, caseId: sc.id, backend: sc.backend, workload: sc.workload };
  run.progress({ kind: 'case-start', ...shown });
  const w = run.workloads[sc.workload]!;
  const r = await runCase(env, {
    scheduled: sc,
    workload: w,
    params: p.params,
    fixture: p.fixture,
    base: p.base,
    expected: p.expected,
    sibling,
  });
  run.ranHere++;
  if (run.options.signal?.aborted) {
    run.progress({
      kind: 'case-end',
      ...shown,
      outcome: 'interrupted',
      wallMs: r.record.wallMs,
      message: 'not recorded; --resume runs it again',
    });
    throw interrupted(run);
  }
  run.progress({
    kind: 'case-end',
    ...shown,
    outcome: r.record.outcome,
    wallMs: r.record.wallMs,
    message: r.record.failure ? `${r.record.failure.code} in ${r.record.failure.phase}` : undefined,
  });
  return r;
}

/** The receipt of every finished case in schedule order (checked and written), then the journal is removed. */
async function writeRunReceipt(
  run: BenchRun,
  r: { host: HostFingerprint; backends: BackendAvailability[]; schedule: ScheduledBlock[]; available: Set<string> },
): Promise<BenchResult> {
  const { plan, runId, outDir } = run;
  const header = run.journal.header();
  const receipt = await buildReceipt({
    ...r,
    runId,
    plan,
    planDigest: header.planDigest,
    seed: run.seed,
    startedAt: header.startedAt,
    cases: run.finished.values(),
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
