// One case: a fresh session made by the backend under test from the run's imported base, the
// workload's steps, a checkpoint, the checks, and discard, each phase timed with a monotonic clock.
// A failed or timed-out case is a result: every failure is recorded with a typed code and the
// phase it happened in, and cleanup still runs. The checks live in case-checks.ts, the outcome
// rules in case-outcome.ts, the measuring in case-measure.ts; this file only puts them in order.
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Digest } from '../../model/canonical-json.js';
import { toPdbError, type PdbErrorCode } from '../../model/errors.js';
import type { Entry } from '../../model/snapshot.js';
import type { Fixture, ProcessOptions, ProcessRunner, SessionHandle, StepContext, Workload } from '../../workloads/types.js';
import {
  baseEntryList,
  cleanupCheck,
  createdTreeCheck,
  verifyCase,
  type BaseInfo,
  type CheckEnv,
  type SiblingInfo,
} from './case-checks.js';
import { CaseAborted, createPhaseTimer, diskGrowth, freeBytesAfterSync, mountsUnder, type PhaseTimer } from './measure.js';
import { createCaseRunner, findCaseProcesses, killCaseProcesses, newCaseToken, type CaseProcessRegistry } from './processes.js';
import { classifyCase, notJudgedReason } from './outcome.js';
import type { RssProbe } from './memory.js';
import { scrubText } from '../../model/scrub.js';
import { keepOracleTree, scanOracleTree, trustedOracleTree, type KeptOracleTree } from './oracle-tree.js';
import type { AgentRecord, CaseRecord, CheckRecord, FailureRecord, FixtureRecord, ProjectionRecord } from '../receipt/receipt-types.js';
import type { ScheduledCase } from '../plan/scheduler.js';

export interface CaseEnv extends CheckEnv {
  /** The built CLI (model/paths.ts cliEntry()), for `pdb-env run` re-entry. */
  cliPath: string;
  proc: ProcessRunner;
  sharedDir: string;
  scratchRoot: string;
  /**
   * Where the oracle keeps each case's tree until its block ends: a directory no step is given
   * (0700, outside the scratch, shared and session directories), each file checked against its
   * digest when read back.
   */
  oracleDir: string;
  allowTestOnly: boolean;
  caseTimeoutMs: number;
  /** Prefix of session names (unique per run). */
  sessionPrefix: string;
  log(message: string): void;
  /** How long to wait for a timed-out case's in-process work to settle before cleaning up. */
  graceMs?: number;
  /** The run's cases and their processes: the case registers its token while it runs. */
  processes: CaseProcessRegistry;
  /** The run's interruption: the case stops as at its timeout and records E_INTERRUPTED. */
  signal?: AbortSignal;
  /** The harness's own peak RSS, recorded per phase. */
  rss?: RssProbe;
  /** Test-only switches that take checks away, to show what the oracle alone catches. */
  switches?: CheckSwitches;
}

/** Checks a test may switch off (never a plan or the CLI): each defaults to on. */
export interface CheckSwitches {
  siblingCheck?: boolean;
  baseCheck?: boolean;
  createdTreeCheck?: boolean;
  /** Off: the oracle compares what the checkpoint recorded (trusting stat signatures), as before it hashed. */
  oracleHashing?: boolean;
}

export interface CaseInput {
  scheduled: ScheduledCase;
  workload: Workload;
  params: Record<string, unknown>;
  fixture: Fixture;
  /** The fixture as the receipt records it (workload, version, parameters digest, base Snapshot). */
  fixtureRecord: FixtureRecord;
  base: BaseInfo;
  /** The workload's projected precomputed expectation (the `expected` check), or null when it has none. */
  expected: Entry[] | null;
  /** The block's sibling session of this case's backend, made before the block's first case. */
  sibling: SiblingInfo | null;
}

export interface CaseResult {
  record: CaseRecord;
  /**
   * The tree the oracle compares at the block's end, read from the session's bytes after its
   * checkpoint and kept in a file beside the case, streamed back from it (so the block's end holds
   * no case's tree whole); null when the case made none.
   */
  oracleTree(): KeptOracleTree | null;
  /** The phase failures in the order they happened (the outcome is classified again once the oracle check is in). */
  phaseFailures: FailureRecord[];
  /** Why the case's result is not judged by the oracle (the environment stopped it), or null. */
  notJudged: string | null;
}

/** One case in progress: what it made, what it recorded so far, and how it is stopped. */
interface CaseRun {
  env: CaseEnv;
  input: CaseInput;
  /** Session names: the one under test first, then the workload's peers. */
  names: string[];
  created: string[];
  scratchDir: string;
  token: string;
  proc: ProcessRunner;
  abort: AbortController;
  timer: PhaseTimer;
  checks: CheckRecord[];
  metrics: Record<string, string | number | boolean>;
  /** Every phase failure, in the order it happened. */
  failures: FailureRecord[];
  /** Errors already recorded (by the phase timer), so the body's catch does not record them twice. */
  recorded: WeakSet<object>;
  startedAt: string;
  stepsCompleted: boolean;
  diskBytes: number | null;
  cloneObserved: boolean | null;
  resultSnapshot: Digest | null;
  /** What the projection dropped, once the result was read and projected (null: no result to compare). */
  projection: ProjectionRecord | null;
  /** Reads the oracle's tree of the case back, once it was made. */
  oracleTree: (() => KeptOracleTree) | null;
  /** Digest of the case's projected tree as the oracle read it, once it was made. */
  projectedSnapshot: Digest | null;
  /** Why the case was stopped from outside, if it was. */
  stopped: 'timeout' | 'interrupted' | null;
  /** The real agents the workload ran, as it recorded them. */
  agents: AgentRecord[];
}

export async function runCase(env: CaseEnv, input: CaseInput): Promise<CaseResult> {
  const started = performance.now();
  const run = await startCase(env, input, started);
  await withinCaseLimits(run, () => caseBody(run));
  await discardSessions(run);
  const record = caseRecord(run, performance.now() - started);
  const tree = run.projection ? run.oracleTree : null;
  return {
    record,
    oracleTree: () => (tree ? tree() : null),
    phaseFailures: run.failures,
    notJudged: notJudgedReason(run.failures, record.metrics, input.workload),
  };
}

function fail(run: CaseRun, code: PdbErrorCode | string, phase: string, message: string): void {
  run.failures.push({ code, phase, message: scrubText(message) });
}

async function startCase(env: CaseEnv, input: CaseInput, origin: number): Promise<CaseRun> {
  const sc = input.scheduled;
  const token = newCaseToken();
  env.processes.add(token);
  const abort = new AbortController();
  const scratchDir = join(env.scratchRoot, sc.id);
  await mkdir(scratchDir, { recursive: true });
  const run: CaseRun = {
    env,
    input,
    names: Array.from(
      { length: Math.max(1, input.workload.sessions) },
      (_, i) => `${env.sessionPrefix}-${sc.id}${i === 0 ? '' : `-peer${i}`}`,
    ),
    created: [],
    scratchDir,
    token,
    proc: createCaseRunner(env.proc, token),
    abort,
    timer: createPhaseTimer({
      signal: abort.signal,
      rss: env.rss,
      origin,
      onFailure: (e, phase) => {
        if (e.code === 'E_TIMEOUT') killCaseProcesses(token);
        run.recorded.add(e);
        fail(run, e.code, phase, e.message);
      },
    }),
    checks: [],
    metrics: {},
    failures: [],
    recorded: new WeakSet(),
    startedAt: new Date().toISOString(),
    stepsCompleted: false,
    diskBytes: null,
    cloneObserved: null,
    resultSnapshot: null,
    projection: null,
    oracleTree: null,
    projectedSnapshot: null,
    stopped: null,
    agents: [],
  };
  return run;
}

/**
 * Run the case's work under its timeout and the run's interruption. Either stops it: in-process work
 * is aborted, every process of the case is killed, and the work gets a bounded time to notice
 * before cleanup starts.
 */
async function withinCaseLimits(run: CaseRun, body: () => Promise<void>): Promise<void> {
  const { env } = run;
  let caseTimer: NodeJS.Timeout | undefined;
  let onInterrupt: (() => void) | undefined;
  const stopped = new Promise<'timeout' | 'interrupted'>((resolve) => {
    const stop = (why: 'timeout' | 'interrupted') => {
      run.stopped ??= why;
      run.abort.abort();
      killCaseProcesses(run.token);
      resolve(why);
    };
    caseTimer = setTimeout(() => stop('timeout'), env.caseTimeoutMs);
    onInterrupt = () => stop('interrupted');
    if (env.signal?.aborted) onInterrupt();
    else env.signal?.addEventListener('abort', onInterrupt, { once: true });
  });
  const work = body().then(
    () => 'done' as const,
    (err: unknown) => {
      if (!(err instanceof CaseAborted) && !(typeof err === 'object' && err !== null && run.recorded.has(err)))
        fail(run, toPdbError(err).code, run.timer.current, toPdbError(err).message);
      return 'done' as const;
    },
  );
  const first = await Promise.race([work, stopped]);
  clearTimeout(caseTimer);
  if (onInterrupt) env.signal?.removeEventListener('abort', onInterrupt);
  if (first === 'done') return;
  const current = run.timer.current;
  if (first === 'timeout')
    fail(run, 'E_TIMEOUT', current, `the case did not finish within its ${env.caseTimeoutMs} ms timeout (in ${current})`);
  else fail(run, 'E_INTERRUPTED', current, `the run was interrupted (in ${current})`);
  // In-process work cannot be killed; give it a bounded time to notice the abort before cleanup.
  let grace: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise((r) => (grace = setTimeout(r, env.graceMs ?? 60_000)))]);
  clearTimeout(grace);
}

async function caseBody(run: CaseRun): Promise<void> {
  if (!(await createSessions(run))) return;
  // The first failed step stops the steps; checkpoint and the checks still run, so the receipt shows
  // what the failed step left behind (judged, unless the environment stopped the case).
  run.stepsCompleted = await runSteps(run);
  run.metrics.stepsCompleted = run.stepsCompleted;
  const { env, input, timer } = run;
  const cp = await timer.run('checkpoint', null, async () => ({ value: await env.svc.checkpoint(run.names[0]!) }));
  run.resultSnapshot = cp.snapshot;
  const { workload, params, fixture, base, expected, sibling } = input;
  // Its own phase, so the price of hashing everything the oracle compares shows in the receipt; the
  // tree is kept (out of the steps' reach) and its projected digest recorded, so validate can hold
  // an ok case's result to its reference.
  const tree = await timer.run('oracle-scan', null, async () => {
    const value =
      env.switches?.oracleHashing === false
        ? trustedOracleTree(env.svc.readSnapshot(cp.snapshot).entries, workload, params, cp.filesHashed)
        : await scanOracleTree(env.svc.sessionRoot(run.names[0]!), workload, params, base.excludes, env.storeDir);
    const kept = keepOracleTree(env.oracleDir, input.scheduled.id, value, base);
    run.oracleTree = kept.read;
    run.projectedSnapshot = kept.projectedSnapshot;
    // The checks read the tree back from its file: its entries are not held through their scans.
    return { value: kept.read() };
  });
  await timer.run('verify', null, async () => {
    const v = {
      workload,
      params,
      sourceDir: fixture.sourceDir,
      base,
      expected,
      sibling,
      notJudged: notJudgedReason(run.failures, run.metrics, workload),
      sessions: run.created,
      resultSnapshot: cp.snapshot,
      tree,
    };
    await verifyCase(env, { ...v, ctx: () => stepContext(run) }, run, env.switches);
    return { value: undefined };
  });
}

/** The session under test (its disk growth is the free-space delta around it), then its peers. False when the case cannot go on. */
async function createSessions(run: CaseRun): Promise<boolean> {
  const { env, input, names, timer } = run;
  const options = {
    from: input.fixture.sourceDir,
    base: input.base.digest,
    backend: input.scheduled.backend,
    allowTestOnly: env.allowTestOnly,
  };
  // The syncs around create are timed as the phases `disk:before` and `disk:after` (the second one
  // is create's own write-back: 1,530 ms of a 6,161 ms full-copy case on XFS was this, untimed).
  const measureDisk = (name: string) => timer.run(name, null, async () => ({ value: await freeBytesAfterSync(env.storeDir) }));
  const free0 = await measureDisk('disk:before');
  const made = await timer.run('create', null, async () => {
    const r = await env.svc.create(names[0]!, options);
    run.created.push(names[0]!);
    return { value: r };
  });
  run.diskBytes = diskGrowth(free0, await measureDisk('disk:after'));
  run.cloneObserved = made.cloneObserved ?? null;
  // Beside the boolean, how much the create shared with its base (files cloned, bytes shared).
  if (made.cloneCounts) Object.assign(run.metrics, { cloneFiles: made.cloneCounts.files, cloneBytes: made.cloneCounts.bytes });
  if (made.base !== input.base.digest) {
    fail(run, 'E_SOURCE_CHANGED', 'create', 'the session was made from a different base than the run imported');
    return false;
  }
  if (env.switches?.createdTreeCheck !== false)
    await timer.run('verify:created', null, async () => {
      run.checks.push(await createdTreeCheck(env.svc.sessionRoot(names[0]!), input.base));
      return { value: undefined };
    });
  if (names.length > 1) {
    await timer.run('create:peers', null, async () => {
      for (const n of names.slice(1)) {
        await env.svc.create(n, options);
        run.created.push(n);
      }
      return { value: undefined };
    });
  }
  return true;
}

/** The workload's steps, each timed under its own timeout; false when one failed. */
async function runSteps(run: CaseRun): Promise<boolean> {
  for (const step of run.input.workload.steps(run.input.params)) {
    try {
      await run.timer.run(`step:${step.name}`, step.timeoutMs, async () => {
        const out = (await step.run(stepContext(run))) ?? {};
        return { value: undefined, process: out.process, milestones: out.milestones };
      });
    } catch (err) {
      if (err instanceof CaseAborted) throw err;
      return false;
    }
  }
  return true;
}

function stepContext(run: CaseRun): StepContext {
  const { env, proc, scratchDir } = run;
  const sessions: SessionHandle[] = run.created.map((name) => ({ name, root: env.svc.sessionRoot(name) }));
  return {
    session: sessions[0]!,
    sessions,
    scratchDir,
    sharedDir: env.sharedDir,
    params: run.input.params,
    proc,
    pdbEnvRun: (s: SessionHandle, command: string, args: string[], options: Omit<ProcessOptions, 'cwd'>) =>
      proc.run(process.execPath, [env.cliPath, 'run', s.name, '--store', env.storeDir, '--', command, ...args], {
        ...options,
        cwd: scratchDir,
      }),
    pdbEnv: (args: string[], options: Omit<ProcessOptions, 'cwd'>) =>
      proc.run(process.execPath, [env.cliPath, ...args, '--store', env.storeDir], { ...options, cwd: scratchDir }),
    metric: (name, value) => {
      run.metrics[name] = typeof value === 'string' ? scrubText(value) : value;
    },
    log: env.log,
    signal: run.abort.signal,
    // Made when a step reads it (few do), not held for every case.
    get baseEntries() {
      return baseEntryList(run.input.base);
    },
    recordAgent: (r) => void run.agents.push({ ...r, outcome: scrubText(r.outcome) }),
  };
}

/** Discard, always: the case session first (timed), then its peers; then check nothing is left. */
async function discardSessions(run: CaseRun): Promise<void> {
  const { env, token, created } = run;
  killCaseProcesses(token);
  const discard = (n: string) => env.svc.discard(n, { force: run.stopped !== null });
  if (created.length) {
    const t0 = run.timer.begin();
    try {
      await discard(created[0]!);
      run.timer.record('discard', 'ok', t0);
    } catch (err) {
      run.timer.record('discard', 'failed', t0);
      fail(run, toPdbError(err).code, 'discard', toPdbError(err).message);
    }
    if (created.length > 1) {
      // Timed like create:peers, so the harness's own work stays out of the case's overhead.
      const t1 = run.timer.begin();
      let peersFailed = false;
      for (const n of created.slice(1))
        await discard(n).catch((err) => {
          peersFailed = true;
          fail(run, toPdbError(err).code, 'discard:peers', toPdbError(err).message);
        });
      run.timer.record('discard:peers', peersFailed ? 'failed' : 'ok', t1);
    }
  }
  // A session whose create failed half-way is removed by create itself; check every name anyway.
  const t2 = run.timer.begin();
  const left = {
    sessionDirs: run.names.filter((n) => existsSync(env.svc.sessionDir(n))).length,
    mounts: run.names.reduce((sum, n) => sum + mountsUnder(env.svc.sessionDir(n)), 0),
    processes: findCaseProcesses(token).length,
  };
  if (left.processes) killCaseProcesses(token);
  env.processes.remove(token);
  run.checks.push(cleanupCheck(left));
  run.timer.record('verify:cleanup', 'ok', t2);
}

function caseRecord(run: CaseRun, wallMs: number): CaseRecord {
  const { input, metrics } = run;
  const sc = input.scheduled;
  const phases = run.timer.phases;
  const inPhases = phases.reduce((s, p) => s + p.durationMs, 0);
  const record: CaseRecord = {
    id: sc.id,
    block: sc.block,
    position: sc.position,
    warmup: sc.warmup,
    backend: sc.backend,
    workload: input.workload.name,
    startedAt: run.startedAt,
    finishedAt: new Date().toISOString(),
    fixture: input.fixtureRecord,
    outcome: 'ok',
    failure: null,
    failures: [],
    phases,
    checks: run.checks,
    diskBytes: run.diskBytes,
    cloneObserved: run.cloneObserved,
    resultSnapshot: run.resultSnapshot,
    oracleSnapshot: null,
    projectedSnapshot: run.projection ? run.projectedSnapshot : null,
    wallMs,
    overheadMs: Math.max(0, wallMs - inPhases),
    metrics,
    projection: run.projection,
    ...(run.agents.length ? { agents: run.agents } : {}),
  };
  return { ...record, ...classifyCase(record, run.failures, input.workload) };
}
