// `pdb-env bench`: plan -> randomized complete blocks -> cases -> receipt. Backends are probed once;
// unavailable ones are recorded and skipped (never replaced). Every finished case goes to the run
// journal first, so an interrupted run continues with --resume without repeating it.
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { getBackend, probeBackend } from '../backends/registry.js';
import { PdbError } from '../model/errors.js';
import type { Entry } from '../model/snapshot.js';
import { SessionService } from '../sessions/service.js';
import { createProcessRunner } from '../workloads/process-runner.js';
import { WORKLOADS } from '../workloads/registry.js';
import type { Fixture, ProcessRunner, Workload } from '../workloads/types.js';
import { activeCaseTokens, killCaseProcesses } from './case-processes.js';
import { applyDeferredOracle, runCase, type BaseInfo, type CaseEnv, type CaseResult } from './case-runner.js';
import { hostFingerprint } from './host.js';
import { checkPlan, planDigest, workloadParams, type Plan } from './plan.js';
import { scrubText, type PathFreeOptions } from './path-free.js';
import { silentProgress, type ProgressSink } from './progress.js';
import { summarize, writeReceipt } from './receipt.js';
import type { BackendAvailability, Receipt } from './receipt-types.js';
import { RunJournal, newRunId } from './run-journal.js';
import { buildSchedule, type ScheduledBlock } from './scheduler.js';
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

const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI_PATH = fileURLToPath(new URL('../cli/main.js', import.meta.url));

function toolVersion(): string {
  try {
    return (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '0.0.0';
  }
}

async function toolCommit(): Promise<string | null> {
  if (!existsSync(join(PACKAGE_ROOT, '.git'))) return null;
  const head = await execa('git', ['rev-parse', 'HEAD'], { cwd: PACKAGE_ROOT, reject: false });
  if (head.exitCode !== 0) return null;
  const dirty = await execa('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: PACKAGE_ROOT, reject: false });
  return `${String(head.stdout).trim()}${dirty.exitCode === 0 && String(dirty.stdout).trim() ? '-dirty' : ''}`;
}

/** Read-only btrfs subvolumes (materialized bases) that `rm -r` cannot remove: their inode is 256. */
async function deleteSubvolumes(storeDir: string): Promise<void> {
  const candidates: string[] = [];
  for (const digestDir of readdirSafe(join(storeDir, 'bases')))
    for (const f of readdirSafe(join(storeDir, 'bases', digestDir))) candidates.push(join(storeDir, 'bases', digestDir, f));
  for (const t of readdirSafe(join(storeDir, 'tmp'))) candidates.push(join(storeDir, 'tmp', t));
  for (const dir of candidates) {
    const st = statSafe(dir);
    if (!st?.isDirectory() || st.ino !== 256) continue;
    if (Number(statfsSync(dir).type) !== 0x9123683e) continue;
    const r = await execa('btrfs', ['subvolume', 'delete', dir], { reject: false });
    if (r.exitCode !== 0)
      throw new PdbError('E_IO', `could not delete the btrfs subvolume of a materialized base: ${String(r.stderr).trim()}`);
  }
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function statSafe(p: string): ReturnType<typeof lstatSync> | null {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}

/** Remove a run's store: release every session (unmount, delete subvolumes), the bases, then the tree. */
export async function removeRunStore(storeDir: string): Promise<void> {
  if (!existsSync(storeDir)) return;
  if (existsSync(join(storeDir, 'store.json'))) {
    const svc = await SessionService.open(storeDir);
    for (const s of await svc.list()) await svc.discard(s.name, { force: true });
    await deleteSubvolumes(storeDir);
  }
  rmSync(storeDir, { recursive: true, force: true });
}

function relOut(p: string): string {
  const rel = p.startsWith(`${process.cwd()}/`) ? p.slice(process.cwd().length + 1) : p;
  return rel;
}

export async function runBench(options: BenchOptions): Promise<BenchResult> {
  const workloads = options.workloads ?? (WORKLOADS as Record<string, Workload>);
  const progress = options.progress ?? silentProgress;
  const outDir = resolve(options.outDir);
  mkdirSync(outDir, { recursive: true });

  // ---- plan, run id, journal ----------------------------------------------------------------
  let journal: RunJournal;
  let plan: Plan;
  let seed: number;
  if (options.resume) {
    journal = RunJournal.open(outDir, options.resume);
    const h = journal.header();
    plan = checkPlan(h.plan, workloads);
    if (options.plan && planDigest(options.plan) !== h.planDigest) {
      throw new PdbError('E_PLAN_INVALID', `the plan differs from the one run ${h.runId} started with`, {
        hint: 'Resume with the same plan (or without --plan: the journal holds it).',
      });
    }
    if (options.seed !== undefined && options.seed !== h.seed)
      throw new PdbError('E_USAGE', `run ${h.runId} uses seed ${h.seed}, not ${options.seed}`, { hint: 'Resume without --seed.' });
    seed = h.seed;
  } else {
    if (!options.plan) throw new PdbError('E_USAGE', 'bench needs a plan', { hint: 'pdb-env bench --plan plans/default.json' });
    plan = checkPlan(options.plan, workloads);
    seed = options.seed ?? plan.seed;
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff)
      throw new PdbError('E_USAGE', `--seed must be an integer in [0, 4294967295], got ${seed}`);
    journal = RunJournal.create(outDir, {
      runId: newRunId(),
      plan,
      planDigest: planDigest(plan),
      seed,
      startedAt: new Date().toISOString(),
    });
  }
  const header = journal.header();
  const runId = header.runId;
  const allowTestOnly = plan.allowTestOnlyBackends === true;
  for (const b of plan.backends) getBackend(b, { allowTestOnly }); // unknown names fail before any filesystem work

  // ---- a fresh store and work dir for this attempt (a previous attempt's are removed) ----------
  if (header.storeDir) await removeRunStore(header.storeDir);
  if (header.workDir) rmSync(header.workDir, { recursive: true, force: true });
  // --store, then PDB_ENV_BENCH_STORE (so `npm run proof` can target a btrfs/XFS mount), then the plan.
  const parent = resolve(options.storeParent ?? (process.env.PDB_ENV_BENCH_STORE || undefined) ?? plan.store?.dir ?? tmpdir());
  if (!existsSync(parent))
    throw new PdbError('E_USAGE', `the store location ${parent} does not exist`, {
      hint: 'Pass an existing directory to --store (e.g. a btrfs or XFS mount).',
    });
  const storeDir = realpathSync(mkdtempSync(join(parent, `pdb-bench-${runId}-`)));
  const workDir = realpathSync(mkdtempSync(join(tmpdir(), `pdb-bench-work-${runId}-`)));
  journal.writeHeader({ ...header, storeDir, workDir, attempts: header.attempts + (options.resume ? 1 : 0) });
  const keep = plan.store?.keep === true;

  const proc = options.processRunner ?? createProcessRunner();
  const finished = new Map(journal.cases().map((c) => [c.id, c]));
  const onSignal = (sig: NodeJS.Signals) => {
    // Kill the running case's process groups; the store is left for --resume (or pdb-env gc) to clean.
    for (const token of activeCaseTokens) killCaseProcesses(token);
    progress({ kind: 'note', message: `interrupted by ${sig}; continue with: pdb-env bench --resume ${runId} --out ${relOut(outDir)}` });
    process.exit(130);
  };
  process.on('SIGINT', onSignal).on('SIGTERM', onSignal);

  try {
    const svc = await SessionService.open(storeDir, { create: true });
    const host = await hostFingerprint(storeDir);

    // ---- fixtures and the imported bases (one per workload) ------------------------------------
    const fixtures = new Map<string, { fixture: Fixture; base: BaseInfo; expected: Entry[] | null; params: Record<string, unknown> }>();
    for (const entry of plan.workloads) {
      const w = workloads[entry.name]!;
      const params = workloadParams(w, entry);
      progress({ kind: 'note', message: `preparing fixture for ${w.name}` });
      const fixture = await w.prepareFixture(join(workDir, 'fixtures'), params, proc);
      const imported = await svc.importSource(fixture.sourceDir);
      const base: BaseInfo = { digest: imported.digest, entries: imported.snapshot.entries, excludes: imported.snapshot.excludes };
      const expected = w.expected ? w.project(await w.expected(base.entries, params), params) : null;
      fixtures.set(w.name, { fixture, base, expected, params });
    }

    // ---- backends, probed once -------------------------------------------------------------------
    const firstSource = fixtures.values().next().value?.fixture.sourceDir;
    const backends: BackendAvailability[] = [];
    for (const name of plan.backends) {
      const r = await probeBackend(getBackend(name, { allowTestOnly }), svc.backendContext(firstSource));
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
      progress({
        kind: 'note',
        message: `backend ${name}: ${r.available ? 'available' : `unavailable (${r.reason}): ${scrubText(r.detail)}`}`,
      });
    }
    const available = new Set(backends.filter((b) => b.available).map((b) => b.name));

    // ---- schedule --------------------------------------------------------------------------------
    const schedule = buildSchedule({
      backends: plan.backends,
      workloads: plan.workloads.map((w) => w.name),
      blocks: plan.blocks,
      warmupBlocks: plan.warmupBlocks,
      seed,
    });
    const slots = schedule.flatMap((b) => b.cases);
    const runnable = slots.filter((c) => available.has(c.backend));
    const total = runnable.length;
    let index = runnable.filter((c) => finished.has(c.id)).length;
    if (index > 0) progress({ kind: 'note', message: `resuming run ${runId}: ${index} of ${total} cases already finished` });

    const env: CaseEnv = {
      svc,
      storeDir,
      cliPath: CLI_PATH,
      proc,
      // On the store's filesystem, so a shared package store (pnpm) can hard-link or clone into
      // sessions as it would for a user, instead of copying across devices.
      sharedDir: join(storeDir, 'run-shared'),
      scratchRoot: join(workDir, 'scratch'),
      allowTestOnly,
      caseTimeoutMs: plan.caseTimeoutMs,
      sessionPrefix: 'c',
      log: (m) => progress({ kind: 'note', message: scrubText(m) }),
      graceMs: options.graceMs,
      baseState: new Map(),
    };
    mkdirSync(env.sharedDir, { recursive: true });
    let ranHere = 0;

    for (const block of schedule) {
      const todo = block.cases.filter((c) => available.has(c.backend) && !finished.has(c.id));
      if (todo.length === 0) continue;
      const { fixture, base, expected, params } = fixtures.get(block.workload)!;
      const w = workloads[block.workload]!;
      const deferred = expected === null;
      // A full-copy sibling made before the block's first case must be untouched at every check.
      const sibling = `s-b${block.index}`;
      await svc.create(sibling, { from: fixture.sourceDir, base: base.digest, backend: 'full-copy' });
      const results: CaseResult[] = [];
      try {
        for (const sc of deferred ? block.cases.filter((c) => available.has(c.backend)) : todo) {
          if (options.stopAfterCases !== undefined && ranHere >= options.stopAfterCases) throw new BenchInterrupted(runId);
          index++;
          progress({ kind: 'case-start', index, total, caseId: sc.id, backend: sc.backend, workload: sc.workload });
          const r = await runCase(env, { scheduled: sc, workload: w, params, fixture, base, expected, sibling });
          ranHere++;
          progress({
            kind: 'case-end',
            index,
            total,
            caseId: sc.id,
            backend: sc.backend,
            workload: sc.workload,
            outcome: r.record.outcome,
            wallMs: r.record.wallMs,
            message: r.record.failure ? `${r.record.failure.code} in ${r.record.failure.phase}` : undefined,
          });
          if (deferred) results.push(r);
          else {
            journal.append(r.record);
            finished.set(r.record.id, r.record);
          }
        }
      } finally {
        await svc.discard(sibling, { force: true }).catch(() => {});
      }
      if (deferred) {
        // Workloads without a precomputed expectation: the block's full-copy case is the oracle.
        const oracle = results.find((r) => r.record.backend === 'full-copy') ?? null;
        for (const r of results) {
          applyDeferredOracle(r.record, r.projected, oracle ? { projected: oracle.projected, record: oracle.record } : null, base);
          journal.append(r.record);
          finished.set(r.record.id, r.record);
        }
      }
    }

    // ---- the receipt -------------------------------------------------------------------------------
    const order = new Map(slots.map((c, i) => [c.id, i]));
    const cases = [...finished.values()].filter((c) => order.has(c.id)).sort((a, b) => order.get(a.id)! - order.get(b.id)!);
    const receipt: Receipt = {
      schemaVersion: 1,
      kind: 'pdb-env-receipt',
      tool: { name: 'pdb-env', version: toolVersion(), commit: await toolCommit() },
      runId,
      planName: plan.name,
      planDigest: header.planDigest,
      seed,
      startedAt: header.startedAt,
      finishedAt: new Date().toISOString(),
      host,
      backends,
      blocks: schedule.map((b: ScheduledBlock) => ({ index: b.index, workload: b.workload, warmup: b.warmup, order: b.order })),
      cases,
      summary: summarize(cases, slots.length, slots.length - runnable.length),
    };
    const receiptPath = join(outDir, `${plan.name}-${runId}.json`);
    await writeReceipt(receiptPath, receipt, options.pathFree);
    let summaryPath: string | null = null;
    if (options.summary) {
      summaryPath = join(outDir, `${plan.name}-${runId}.md`);
      await writeFile(summaryPath, receiptMarkdown(receipt));
    }
    journal.remove();
    return { receiptPath, summaryPath, receipt };
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
    if (!keep) {
      try {
        rmSync(workDir, { recursive: true, force: true, maxRetries: 5 });
      } catch (err) {
        process.stderr.write(`pdb-env: warning: could not remove the run's work directory ${workDir}: ${(err as Error).message}\n`);
      }
      await removeRunStore(storeDir).catch((err: unknown) => {
        // Not evidence: the local path is what the user needs to clean up by hand.
        progress({ kind: 'note', message: `warning: could not remove the run's store ${storeDir}: ${(err as Error).message}` });
        process.stderr.write(`pdb-env: warning: could not remove the run's store ${storeDir}: ${(err as Error).message}\n`);
      });
    }
  }
}
