// One case: a fresh session made by the backend under test from the run's imported base, the
// workload's steps, a checkpoint, the checks, and discard, each phase timed with a monotonic clock.
// A failed or timed-out case is a result: it is recorded with a typed code and the phase it
// happened in, and cleanup still runs.
import { existsSync, readFileSync, statfsSync } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import type { Digest } from '../model/canonical-json.js';
import { PdbError, toPdbError, type PdbErrorCode } from '../model/errors.js';
import { scanTree } from '../model/scan.js';
import { countMismatches, createSnapshot, snapshotDigest, totalMismatches, type Entry, type MismatchCounts } from '../model/snapshot.js';
import type { SessionService } from '../sessions/service.js';
import type { Fixture, ProcessOptions, ProcessResult, ProcessRunner, SessionHandle, StepContext, Workload } from '../workloads/types.js';
import { activeCaseTokens, createCaseRunner, findCaseProcesses, killCaseProcesses, newCaseToken } from './case-processes.js';
import { parseMountInfo } from './host.js';
import { scrubText } from './path-free.js';
import type { CaseOutcome, CaseRecord, CheckRecord, PhaseRecord } from './receipt-types.js';
import type { ScheduledCase } from './scheduler.js';

export interface BaseInfo {
  digest: Digest;
  entries: Entry[];
  excludes: string[];
}

export interface CaseEnv {
  svc: SessionService;
  storeDir: string;
  /** The built CLI (dist/cli/main.js), for `pdb-env run` re-entry. */
  cliPath: string;
  proc: ProcessRunner;
  sharedDir: string;
  scratchRoot: string;
  allowTestOnly: boolean;
  caseTimeoutMs: number;
  /** Prefix of session names (unique per run). */
  sessionPrefix: string;
  log(message: string): void;
  /** State of each base location after the previous case (source and materialized bases), by base digest and directory. */
  baseState?: Map<string, Entry[]>;
  /** How long to wait for a timed-out case's in-process work to settle before cleaning up. */
  graceMs?: number;
}

export interface CaseInput {
  scheduled: ScheduledCase;
  workload: Workload;
  params: Record<string, unknown>;
  fixture: Fixture;
  base: BaseInfo;
  /** The projected expected result, or null when the full-copy case of the block is the oracle. */
  expected: Entry[] | null;
  /** The block's full-copy sibling session, made before the block's first case. */
  sibling: string | null;
}

export interface CaseResult {
  record: CaseRecord;
  /** Projected result entries, kept for a deferred oracle comparison. */
  projected: Entry[] | null;
}

const ZERO: MismatchCounts = { content: 0, mode: 0, symlink: 0, missing: 0, extra: 0, kind: 0 };

function addCounts(a: MismatchCounts, b: MismatchCounts): MismatchCounts {
  return {
    content: a.content + b.content,
    mode: a.mode + b.mode,
    symlink: a.symlink + b.symlink,
    missing: a.missing + b.missing,
    extra: a.extra + b.extra,
    kind: a.kind + b.kind,
  };
}

/** Flush dirty data of the store's filesystem so the free-space delta sees real allocation. */
async function syncFs(dir: string): Promise<void> {
  const r = await execa('sync', ['-f', dir], { reject: false, timeout: 120_000 });
  if (r.exitCode !== 0) await execa('sync', [], { reject: false, timeout: 120_000 });
}

function freeBytes(dir: string): number | null {
  try {
    const s = statfsSync(dir, { bigint: true });
    return Number(s.bfree * s.bsize);
  } catch {
    return null;
  }
}

/** Mount points at or under `dir` (a session left mounted). */
export function mountsUnder(dir: string): number {
  if (!existsSync('/proc/self/mountinfo')) return 0;
  const mounts = parseMountInfo(readFileSync('/proc/self/mountinfo', 'utf8'));
  return mounts.filter((m) => m.mountPoint === dir || m.mountPoint.startsWith(`${dir}/`)).length;
}

function phaseRecord(
  name: string,
  outcome: CaseOutcome,
  durationMs: number,
  timeoutMs: number | null,
  p?: ProcessResult,
  milestones: Record<string, number> = {},
): PhaseRecord {
  return {
    name,
    outcome,
    durationMs: Math.max(0, durationMs),
    exitCode: p?.exitCode ?? null,
    cpuUserMs: p?.cpuUserMs ?? null,
    cpuSystemMs: p?.cpuSystemMs ?? null,
    peakRssBytes: p?.peakRssBytes ?? null,
    timeoutMs,
    milestones,
  };
}

function treeCheck(name: string, expected: Entry[], actual: Entry[], what: string): CheckRecord {
  const m = countMismatches(expected, actual);
  const n = totalMismatches(m);
  return { name, passed: n === 0, mismatches: n === 0 ? null : m, detail: n === 0 ? null : `${what} differs in ${n} entries` };
}

/**
 * Re-scan the source and every materialized base of this digest. The check asks whether *this case*
 * changed them: each location is compared with its state after the previous case (or with the
 * imported base when it is new), so a base corrupted earlier is not blamed on every later case.
 */
async function baseUnchangedCheck(env: CaseEnv, fixture: Fixture, base: BaseInfo): Promise<CheckRecord> {
  let total = ZERO;
  const bad: string[] = [];
  const already: string[] = [];
  const compare = async (label: string, dir: string) => {
    const scan = await scanTree(dir, { excludes: base.excludes, excludeAbsolute: [env.storeDir] });
    const key = `${base.digest} ${dir}`;
    const before = env.baseState?.get(key) ?? base.entries;
    const m = countMismatches(before, scan.entries);
    if (totalMismatches(m)) {
      total = addCounts(total, m);
      bad.push(`${label} (${totalMismatches(m)})`);
    } else if (before !== base.entries && totalMismatches(countMismatches(base.entries, scan.entries))) {
      already.push(label);
    }
    env.baseState?.set(key, scan.entries);
  };
  await compare('source', fixture.sourceDir);
  const basesDir = join(env.svc.store.paths.bases, base.digest.slice('sha256:'.length));
  let families: string[] = [];
  try {
    families = (await readdir(basesDir, { withFileTypes: true }))
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
  } catch {
    /* no materialized base: full-copy copies straight from objects */
  }
  for (const f of families) await compare(`materialized ${f} base`, join(basesDir, f));
  const n = totalMismatches(total);
  const note = already.length ? `; already different from the import before this case: ${already.join(', ')}` : '';
  return {
    name: 'base-unchanged',
    passed: n === 0,
    mismatches: n === 0 ? null : total,
    detail:
      n === 0
        ? `source and ${families.length} materialized base(s) re-scanned${note}`
        : `changed during this case: ${bad.join(', ')}${note}`,
  };
}

const CHECK_CODES: Record<string, PdbErrorCode> = {
  oracle: 'E_ORACLE_MISMATCH',
  'base-unchanged': 'E_BASE_CHANGED',
  'sibling-unchanged': 'E_SIBLING_CHANGED',
  cleanup: 'E_CLEANUP_INCOMPLETE',
};

class CaseTimeout extends Error {}

export async function runCase(env: CaseEnv, input: CaseInput): Promise<CaseResult> {
  const { scheduled: sc, workload, params, fixture, base } = input;
  const started = performance.now();
  const phases: PhaseRecord[] = [];
  const checks: CheckRecord[] = [];
  const metrics: Record<string, string | number | boolean> = {};
  let failure: CaseRecord['failure'] = null;
  let timedOut = false;
  let diskBytes: number | null = null;
  let cloneObserved: boolean | null = null;
  let resultSnapshot: Digest | null = null;
  let projected: Entry[] | null = null;
  let current = 'create';

  const token = newCaseToken();
  activeCaseTokens.add(token);
  const proc = createCaseRunner(env.proc, token);
  const abort = new AbortController();
  const names = Array.from(
    { length: Math.max(1, workload.sessions) },
    (_, i) => `${env.sessionPrefix}-${sc.id}${i === 0 ? '' : `-peer${i}`}`,
  );
  const created: string[] = [];
  const scratchDir = join(env.scratchRoot, sc.id);
  await mkdir(scratchDir, { recursive: true });

  const fail = (code: PdbErrorCode | string, phase: string, message: string) => {
    failure ??= { code, phase, message: scrubText(message) };
  };

  const phase = async <T>(
    name: string,
    timeoutMs: number | null,
    fn: () => Promise<{ value: T; process?: ProcessResult; milestones?: Record<string, number> }>,
  ): Promise<T | undefined> => {
    if (abort.signal.aborted) throw new CaseTimeout();
    current = name;
    const t0 = performance.now();
    let stepTimer: NodeJS.Timeout | undefined;
    try {
      const work = fn();
      const limit =
        timeoutMs === null
          ? null
          : new Promise<never>((_, reject) => {
              stepTimer = setTimeout(
                () => reject(new PdbError('E_TIMEOUT', `${name} did not finish within its ${timeoutMs} ms timeout`)),
                timeoutMs,
              );
            });
      const out = await (limit ? Promise.race([work, limit]) : work);
      if (abort.signal.aborted) throw new CaseTimeout();
      phases.push(phaseRecord(name, 'ok', performance.now() - t0, timeoutMs, out.process, out.milestones));
      return out.value;
    } catch (err) {
      const e = err instanceof CaseTimeout ? new PdbError('E_TIMEOUT', 'the case timed out') : toPdbError(err);
      const outcome: CaseOutcome = abort.signal.aborted || e.code === 'E_TIMEOUT' ? 'timeout' : 'failed';
      phases.push(phaseRecord(name, outcome, performance.now() - t0, timeoutMs));
      if (abort.signal.aborted) throw new CaseTimeout();
      if (e.code === 'E_TIMEOUT') killCaseProcesses(token);
      fail(e.code, name, e.message);
      throw e;
    } finally {
      clearTimeout(stepTimer);
    }
  };

  const sessionHandles = (): SessionHandle[] => created.map((name) => ({ name, root: env.svc.sessionRoot(name) }));
  const ctx = (): StepContext => {
    const sessions = sessionHandles();
    return {
      session: sessions[0]!,
      sessions,
      scratchDir,
      sharedDir: env.sharedDir,
      params,
      proc,
      pdbEnvRun: (s: SessionHandle, command: string, args: string[], options: Omit<ProcessOptions, 'cwd'>) =>
        proc.run(process.execPath, [env.cliPath, 'run', s.name, '--store', env.storeDir, '--', command, ...args], {
          ...options,
          cwd: scratchDir,
        }),
      metric: (name, value) => {
        metrics[name] = typeof value === 'string' ? scrubText(value) : value;
      },
      log: env.log,
      signal: abort.signal,
      baseEntries: base.entries,
    };
  };

  const body = async (): Promise<void> => {
    // create: the session under test; its disk growth is the free-space delta around it.
    await syncFs(env.storeDir);
    const free0 = freeBytes(env.storeDir);
    const made = await phase('create', null, async () => {
      const r = await env.svc.create(names[0]!, {
        from: fixture.sourceDir,
        base: base.digest,
        backend: sc.backend,
        allowTestOnly: env.allowTestOnly,
      });
      created.push(names[0]!);
      return { value: r };
    });
    await syncFs(env.storeDir);
    const free1 = freeBytes(env.storeDir);
    if (free0 !== null && free1 !== null) diskBytes = free0 - free1;
    cloneObserved = made?.cloneObserved ?? null;
    if (made && made.base !== base.digest) {
      fail('E_SOURCE_CHANGED', 'create', 'the session was made from a different base than the run imported');
      return;
    }
    if (names.length > 1) {
      await phase('create:peers', null, async () => {
        for (const n of names.slice(1)) {
          await env.svc.create(n, { from: fixture.sourceDir, base: base.digest, backend: sc.backend, allowTestOnly: env.allowTestOnly });
          created.push(n);
        }
        return { value: undefined };
      });
    }

    // steps: the first failure stops the steps; checkpoint and checks still run, so the receipt
    // shows what the failed step left behind.
    let stepsOk = true;
    for (const step of workload.steps(params)) {
      try {
        await phase(`step:${step.name}`, step.timeoutMs, async () => {
          const out = (await step.run(ctx())) ?? {};
          return { value: undefined, process: out.process, milestones: out.milestones };
        });
      } catch (err) {
        if (err instanceof CaseTimeout) throw err;
        stepsOk = false;
        break;
      }
    }
    metrics.stepsCompleted = stepsOk;

    const cp = await phase('checkpoint', null, async () => ({ value: await env.svc.checkpoint(names[0]!) }));
    if (!cp) return;
    resultSnapshot = cp.snapshot;

    await phase('verify', null, async () => {
      const result = env.svc.readSnapshot(cp.snapshot).entries;
      projected = workload.project(result, params);
      if (input.expected) checks.push(treeCheck('oracle', input.expected, projected, 'the result'));
      const results: Entry[][] = [result];
      for (const n of created.slice(1)) results.push(await env.svc.scanEntries(n));
      if (workload.check) {
        for (const c of await workload.check(ctx(), results)) {
          checks.push({
            name: c.name,
            passed: c.passed,
            mismatches: c.mismatches && totalMismatches(c.mismatches) ? c.mismatches : null,
            detail: c.detail ? scrubText(c.detail) : null,
          });
        }
      }
      checks.push(await baseUnchangedCheck(env, fixture, base));
      if (input.sibling)
        checks.push(treeCheck('sibling-unchanged', base.entries, await env.svc.scanEntries(input.sibling), 'the block sibling session'));
      return { value: undefined };
    });
  };

  // Case timeout: abort in-process work, kill every process of the case, record "timeout".
  let caseTimer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    caseTimer = setTimeout(() => {
      timedOut = true;
      abort.abort();
      killCaseProcesses(token);
      resolve('timeout');
    }, env.caseTimeoutMs);
  });
  const work = body().then(
    () => 'done' as const,
    (err: unknown) => {
      if (!(err instanceof CaseTimeout) && !(err instanceof PdbError && failure))
        fail(toPdbError(err).code, current, toPdbError(err).message);
      return 'done' as const;
    },
  );
  const first = await Promise.race([work, timeout]);
  clearTimeout(caseTimer);
  if (first === 'timeout') {
    fail('E_TIMEOUT', current, `the case did not finish within its ${env.caseTimeoutMs} ms timeout (in ${current})`);
    // In-process work cannot be killed; give it a bounded time to notice the abort before cleanup.
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([work, new Promise((r) => (grace = setTimeout(r, env.graceMs ?? 60_000)))]);
    clearTimeout(grace);
  }

  // discard, always: the case session first (timed), then its peers.
  killCaseProcesses(token);
  const discardOne = async (n: string) => env.svc.discard(n, { force: timedOut });
  if (created.length) {
    const t0 = performance.now();
    try {
      await discardOne(created[0]!);
      phases.push(phaseRecord('discard', 'ok', performance.now() - t0, null));
    } catch (err) {
      phases.push(phaseRecord('discard', 'failed', performance.now() - t0, null));
      fail(toPdbError(err).code, 'discard', toPdbError(err).message);
    }
    for (const n of created.slice(1)) {
      await discardOne(n).catch((err) => fail(toPdbError(err).code, 'discard:peers', toPdbError(err).message));
    }
  }
  // A session whose create failed half-way is removed by create itself; check every name anyway.
  const left = names.filter((n) => existsSync(env.svc.sessionDir(n)));
  const mounted = names.reduce((sum, n) => sum + mountsUnder(env.svc.sessionDir(n)), 0);
  const strays = findCaseProcesses(token).length;
  if (strays) killCaseProcesses(token);
  activeCaseTokens.delete(token);
  const cleanOk = left.length === 0 && mounted === 0 && strays === 0;
  checks.push({
    name: 'cleanup',
    passed: cleanOk,
    mismatches: null,
    detail: cleanOk
      ? null
      : [
          left.length ? `${left.length} session dir(s) left` : '',
          mounted ? `${mounted} mount(s) left` : '',
          strays ? `${strays} process(es) still running` : '',
        ]
          .filter(Boolean)
          .join(', '),
  });

  for (const c of checks)
    if (!c.passed)
      fail(
        CHECK_CODES[c.name] ?? (c.name.endsWith('oracle') ? 'E_ORACLE_MISMATCH' : 'E_STEP_FAILED'),
        c.name === 'cleanup' ? 'discard' : 'verify',
        `check ${c.name} failed${c.detail ? `: ${c.detail}` : ''}`,
      );

  const wallMs = performance.now() - started;
  const inPhases = phases.reduce((s, p) => s + p.durationMs, 0);
  // A step that ran out of its own time is a timeout too, just a narrower one than the case's.
  let outcome: CaseOutcome = timedOut || (failure as CaseRecord['failure'])?.code === 'E_TIMEOUT' ? 'timeout' : failure ? 'failed' : 'ok';
  // The workload may say a failure means "cannot run here" (e.g. an agent without credentials
  // that touched nothing); the failure and every check stay in the receipt either way.
  if (outcome === 'failed' && failure && workload.classifyFailure?.(failure, metrics) === 'unavailable') outcome = 'unavailable';
  const record: CaseRecord = {
    id: sc.id,
    block: sc.block,
    position: sc.position,
    warmup: sc.warmup,
    backend: sc.backend,
    workload: workload.name,
    fixture: fixture.name,
    outcome,
    failure,
    phases,
    checks,
    diskBytes,
    cloneObserved,
    resultSnapshot,
    oracleSnapshot: input.expected ? snapshotDigest(createSnapshot(input.expected, base.excludes, base.digest)) : null,
    wallMs,
    overheadMs: Math.max(0, wallMs - inPhases),
    metrics,
  };
  return { record, projected };
}

/** The deferred oracle: compare a case with the full-copy case of its block (workloads without `expected`). */
export function applyDeferredOracle(
  record: CaseRecord,
  projected: Entry[] | null,
  oracle: { projected: Entry[] | null; record: CaseRecord } | null,
  base: BaseInfo,
): void {
  let check: CheckRecord;
  if (!oracle || !oracle.projected) {
    check = { name: 'oracle', passed: false, mismatches: null, detail: 'no full-copy result in this block to compare with' };
  } else if (!projected) {
    check = { name: 'oracle', passed: false, mismatches: null, detail: 'the case has no result to compare' };
  } else {
    check = treeCheck('oracle', oracle.projected, projected, "the projected result (vs full-copy's)");
    record.oracleSnapshot = snapshotDigest(createSnapshot(oracle.projected, base.excludes, base.digest));
  }
  record.checks.unshift(check);
  if (!check.passed && record.outcome === 'ok') {
    record.outcome = 'failed';
    record.failure = { code: 'E_ORACLE_MISMATCH', phase: 'verify', message: scrubText(`check oracle failed: ${check.detail ?? ''}`) };
  }
}
