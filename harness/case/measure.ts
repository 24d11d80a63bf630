// What a case measures: each phase's monotonic wall time (with its own timeout, the child's CPU
// and peak RSS when the phase ran one process), and physical disk growth as the free-space delta
// of the store's filesystem (not `du`, which cannot see shared extents).
import { statfsSync } from 'node:fs';
import { PdbError, toPdbError } from '../../model/errors.js';
import { mountPointsUnder } from '../../model/os/mounts.js';
import { runTool } from '../../model/os/run-tool.js';
import { failedProcess } from '../../workloads/step-failure.js';
import type { ProcessResult } from '../../workloads/types.js';
import type { RssProbe } from './memory.js';
import type { PhaseOutcome, PhaseRecord } from '../receipt/receipt-types.js';

/** Flush dirty data of the store's filesystem so the free-space delta sees real allocation. */
async function syncFs(dir: string): Promise<void> {
  const r = await runTool('sync', ['-f', dir], { timeoutMs: 120_000 });
  if (r.exitCode !== 0) await runTool('sync', [], { timeoutMs: 120_000 });
}

function freeBytes(dir: string): number | null {
  try {
    const s = statfsSync(dir, { bigint: true });
    return Number(s.bfree * s.bsize);
  } catch {
    return null; // no statfs here: the receipt records diskBytes: null
  }
}

/** Free bytes of the filesystem holding `dir` after a sync, or null when statfs cannot tell. */
export async function freeBytesAfterSync(dir: string): Promise<number | null> {
  await syncFs(dir);
  return freeBytes(dir);
}

/** Growth between two free-space readings; null when either is unknown. */
export function diskGrowth(before: number | null, after: number | null): number | null {
  return before !== null && after !== null ? before - after : null;
}

/** Mount points at or under `dir` (a session left mounted). */
export function mountsUnder(dir: string): number {
  return mountPointsUnder(dir).length;
}

export function phaseRecord(
  name: string,
  outcome: PhaseOutcome,
  durationMs: number,
  timeoutMs: number | null,
  p?: ProcessResult,
  milestones: Record<string, number> = {},
  harnessPeakRssBytes: number | null = null,
  startMs?: number,
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
    harnessPeakRssBytes,
    ...(startMs === undefined ? {} : { startMs: Math.max(0, startMs) }),
  };
}

/** Thrown inside a case once it was stopped from outside (its timeout, or the run's interruption). */
export class CaseAborted extends Error {}

export interface PhaseOutput<T> {
  value: T;
  process?: ProcessResult;
  milestones?: Record<string, number>;
}

export interface PhaseTimer {
  /** Every phase recorded so far, in order. */
  readonly phases: PhaseRecord[];
  /** The phase running now, or the last one started. */
  readonly current: string;
  /**
   * Run and time one phase. A failure is recorded (as a phase outcome and through `onFailure`)
   * and rethrown; once the case is aborted, the phase ends with CaseAborted instead.
   */
  run<T>(name: string, timeoutMs: number | null, fn: () => Promise<PhaseOutput<T>>): Promise<T>;
  /** Start a phase the caller times (discard, which runs after the case's limits): returns its start. */
  begin(): number;
  /** Record a phase timed by the caller, started with `begin()`. */
  record(name: string, outcome: PhaseOutcome, t0: number): void;
}

export function createPhaseTimer(options: {
  signal: AbortSignal;
  onFailure(error: PdbError, phase: string): void;
  /** The harness's own peak RSS per phase (none: not recorded). */
  rss?: RssProbe;
  /** The case's start (performance.now()): each phase records its start from it (none: not recorded). */
  origin?: number;
}): PhaseTimer {
  const { signal, origin } = options;
  const at = (t0: number) => (origin === undefined ? undefined : t0 - origin);
  const rss = options.rss ?? { reset() {}, peak: () => null };
  const phases: PhaseRecord[] = [];
  let current = 'create';
  const run = async <T>(name: string, timeoutMs: number | null, fn: () => Promise<PhaseOutput<T>>): Promise<T> => {
    if (signal.aborted) throw new CaseAborted();
    current = name;
    rss.reset();
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
      if (signal.aborted) throw new CaseAborted();
      phases.push(phaseRecord(name, 'ok', performance.now() - t0, timeoutMs, out.process, out.milestones, rss.peak(), at(t0)));
      return out.value;
    } catch (err) {
      const e = err instanceof CaseAborted ? new PdbError('E_TIMEOUT', 'the case timed out') : toPdbError(err);
      const outcome: PhaseOutcome = signal.aborted || e.code === 'E_TIMEOUT' ? 'timeout' : 'failed';
      phases.push(phaseRecord(name, outcome, performance.now() - t0, timeoutMs, failedProcess(err), {}, rss.peak(), at(t0)));
      if (signal.aborted) throw new CaseAborted();
      options.onFailure(e, name);
      throw e;
    } finally {
      clearTimeout(stepTimer);
    }
  };
  return {
    phases,
    get current() {
      return current;
    },
    run,
    begin() {
      rss.reset();
      return performance.now();
    },
    record: (name, outcome, t0) =>
      void phases.push(phaseRecord(name, outcome, performance.now() - t0, null, undefined, {}, rss.peak(), at(t0))),
  };
}
