// Blocks: at a block's start one sibling session per backend is made from the same base (each case
// checks its own backend's sibling is untouched afterwards, so sharing between two sessions of the
// backend under test shows); then the cases run in their shuffled order; at the block's end every
// case is compared with the block's full-copy case (the oracle) and the block is journaled at once.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toPdbError } from '../model/errors.js';
import { cliEntry } from '../model/paths.js';
import type { SessionService } from '../sessions/service.js';
import { BenchInterrupted, interrupted, throwIfInterrupted, type BenchRun, type PreparedWorkload } from './bench-run.js';
import { applyBlockOracle } from './block-oracle.js';
import { scanAgainstBase, type SiblingInfo } from './case/case-checks.js';
import { runCase, type CaseEnv, type CaseResult } from './case/runner.js';
import { scrubText } from '../model/scrub.js';
import type { CaseRecord } from './receipt/receipt-types.js';
import type { ScheduledBlock, ScheduledCase } from './plan/scheduler.js';

export async function runBlocks(
  run: BenchRun,
  svc: SessionService,
  schedule: ScheduledBlock[],
  prepared: Map<string, PreparedWorkload>,
  available: Set<string>,
): Promise<void> {
  const planned = schedule.flatMap((b) => b.cases);
  const runnable = planned.filter((c) => available.has(c.backend));
  // "case N of M" counts what runs; the end counts planned, ran and unavailable: say how they meet.
  if (runnable.length < planned.length)
    run.progress({
      kind: 'note',
      message: `${runnable.length} of ${planned.length} planned cases run here; ${planned.length - runnable.length} are of backends this host cannot run (unavailable)`,
    });
  run.index = runnable.filter((c) => run.finished.has(c.id)).length;
  if (run.index > 0)
    run.progress({ kind: 'note', message: `resuming run ${run.runId}: ${run.index} of ${runnable.length} cases already finished` });
  const env: CaseEnv = {
    svc,
    storeDir: run.storeDir,
    cliPath: cliEntry(),
    proc: run.proc,
    // On the store's filesystem, so a shared package store (pnpm) can hard-link or clone into
    // sessions as it would for a user, instead of copying across devices.
    sharedDir: join(run.storeDir, 'run-shared'),
    scratchRoot: join(run.workDir, 'scratch'),
    // Apart from the work directory whose scratch folders the steps run in (mkdtemp makes it 0700).
    oracleDir: mkdtempSync(join(tmpdir(), `pdb-bench-oracle-${run.runId}-`)),
    allowTestOnly: run.allowTestOnly,
    caseTimeoutMs: run.plan.caseTimeoutMs,
    sessionPrefix: 'c',
    log: (m) => run.progress({ kind: 'note', message: scrubText(m) }),
    graceMs: run.options.graceMs,
    baseState: new Map(),
    processes: run.processes,
    signal: run.options.signal,
    rss: run.rss,
    settle: run.settle,
    switches: run.options.checkSwitches,
  };
  mkdirSync(env.sharedDir, { recursive: true });
  try {
    for (const block of schedule) await runBlock(run, env, block, prepared.get(block.workload)!, available, runnable.length);
  } finally {
    rmSync(env.oracleDir, { recursive: true, force: true });
  }
}

/** One sibling per backend of the block, made from the block's base and scanned at once; a failure is recorded, not thrown. */
async function makeSiblings(run: BenchRun, env: CaseEnv, block: ScheduledBlock, p: PreparedWorkload, backends: string[]) {
  const siblings = new Map<string, SiblingInfo>();
  for (const backend of backends) {
    const name = `s-b${block.index}-${backend}`;
    try {
      await env.svc.create(name, { from: p.fixture.sourceDir, base: p.base.digest, backend, allowTestOnly: run.allowTestOnly });
      // A sibling equal to the base (every backend that reproduces the tree) holds no copy of its own.
      siblings.set(backend, { name, backend, entries: await scanAgainstBase(env.svc.sessionRoot(name), p.base) });
      env.settle?.(); // the create's and the scan's garbage, before the next sibling's
    } catch (err) {
      const e = toPdbError(err);
      siblings.set(backend, { backend, failure: { code: e.code, phase: 'sibling', message: scrubText(e.message) } });
    }
  }
  return siblings;
}

/**
 * One block: its siblings, then its cases in their shuffled order, then the oracle comparison and the
 * journal. The block is journaled as a whole, so --resume runs an unfinished block again from its start.
 */
async function runBlock(
  run: BenchRun,
  env: CaseEnv,
  block: ScheduledBlock,
  p: PreparedWorkload,
  available: Set<string>,
  total: number,
): Promise<void> {
  const todo = block.cases.filter((c) => available.has(c.backend));
  if (todo.length === 0 || todo.every((c) => run.finished.has(c.id))) return;
  throwIfInterrupted(run);
  const backends = env.switches?.siblingCheck === false ? [] : [...new Set(todo.map((c) => c.backend))];
  const siblings = await run.memory.measure('siblings', () => makeSiblings(run, env, block, p, backends));
  const results: CaseResult[] = [];
  try {
    for (const sc of todo) {
      if (run.options.stopAfterCases !== undefined && run.ranHere >= run.options.stopAfterCases) throw new BenchInterrupted(run.runId);
      throwIfInterrupted(run);
      results.push(await runScheduledCase(run, env, sc, p, siblings.get(sc.backend) ?? null, total));
    }
  } finally {
    for (const s of siblings.values()) {
      // Best effort: the sibling lives in the run's store, which is removed at the end of the attempt anyway.
      if ('name' in s) await env.svc.discard(s.name, { force: true }).catch(() => {});
    }
  }
  await run.memory.measure('oracle', async () => applyBlockOracle(results, run.workloads[block.workload]!));
  for (const r of results) finish(run, r.record);
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
  sibling: SiblingInfo | null,
  total: number,
): Promise<CaseResult> {
  const index = ++run.index;
  const shown = { index, total, caseId: sc.id, backend: sc.backend, workload: sc.workload };
  run.progress({ kind: 'case-start', ...shown });
  const r = await runCase(env, {
    scheduled: sc,
    workload: run.workloads[sc.workload]!,
    params: p.params,
    fixture: p.fixture,
    fixtureRecord: p.fixtureRecord,
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
  // The outcome shown here is the case's own; the oracle comparison at the block's end may change it.
  run.progress({
    kind: 'case-end',
    ...shown,
    outcome: r.record.outcome,
    wallMs: r.record.wallMs,
    message: r.record.failure ? `${r.record.failure.code} in ${r.record.failure.phase}` : undefined,
  });
  return r;
}
