// Phase cells: per testbed x backend x workload x phase, the planned slots, how the cases ended in
// that phase, the measured durations and their summary, and the diagnostics a reader should see
// next to them (outliers, a slow first block, drift, small samples).
import type { ReportCase as CaseRecord, ReportReceipt as Receipt } from '../receipts/receipts.js';
import { TOTAL_PHASE, type Diagnostic, type IndexedCase, type PhaseCell } from './report-data.js';
import { modifiedZOutliers, spearman, summarize } from './statistics.js';
import { testbedKey } from './testbeds.js';

export type PhaseState = 'ok' | 'mismatch' | 'failed' | 'timeout' | 'unavailable' | 'environment' | 'not-reached';

/**
 * The duration of `phase` in a case, when that phase finished ok; the total is the wall time of a
 * case that ended ok. Environment cases are in no statistic.
 */
export function phaseDuration(c: CaseRecord, phase: string): { state: PhaseState; ms: number | null } {
  if (c.outcome === 'unavailable') return { state: 'unavailable', ms: null };
  if (c.outcome === 'environment') return { state: 'environment', ms: null };
  if (phase === TOTAL_PHASE) {
    if (c.outcome === 'ok') return { state: 'ok', ms: c.wallMs };
    return { state: c.outcome === 'timeout' ? 'timeout' : c.outcome === 'mismatch' ? 'mismatch' : 'failed', ms: null };
  }
  const p = c.phases.find((x) => x.name === phase);
  if (!p) return { state: 'not-reached', ms: null };
  if (p.outcome === 'ok') return { state: 'ok', ms: p.durationMs };
  return { state: p.outcome === 'timeout' ? 'timeout' : 'failed', ms: null };
}

export interface Slots {
  planned: number;
  warmup: number;
  unavailable: number;
  notRun: number;
}

/** The label of the fixture a receipt ran for `workload` ("unknown" when no case of it ran). */
function receiptFixture(r: Receipt, workload: string, labels: Map<string, string>): string {
  const c = r.cases.find((x) => x.workload === workload);
  return c ? (labels.get(c.fixture.key) ?? c.fixture.name) : 'unknown';
}

/** Planned slots per [testbed, backend, workload, fixture] from each receipt's block orders. */
export function plannedSlots(receipts: Receipt[], testbedIds: Map<string, string>, labels: Map<string, string>): Map<string, Slots> {
  const out = new Map<string, Slots>();
  for (const r of receipts) {
    const testbed = testbedIds.get(testbedKey(r))!;
    const ran = new Set(r.cases.map((c) => `${c.block}\u0000${c.backend}`));
    const unavailable = new Set(r.backends.filter((b) => !b.available).map((b) => b.name));
    for (const b of r.blocks) {
      const fixture = receiptFixture(r, b.workload, labels);
      for (const backend of b.order) {
        const key = JSON.stringify([testbed, backend, b.workload, fixture]);
        const s = out.get(key) ?? { planned: 0, warmup: 0, unavailable: 0, notRun: 0 };
        s.planned++;
        if (b.warmup) s.warmup++;
        if (!ran.has(`${b.index}\u0000${backend}`)) {
          if (unavailable.has(backend)) s.unavailable++;
          else s.notRun++;
        }
        out.set(key, s);
      }
    }
  }
  return out;
}

/** Where a cell belongs: one testbed, backend, workload and fixture. */
export interface CellKey {
  testbed: string;
  backend: string;
  workload: string;
  fixture: string;
}

export function phaseCell(key: CellKey, phase: string, group: IndexedCase[], slot: Slots | undefined): PhaseCell {
  const cell: PhaseCell = {
    ...key,
    phase,
    // Receipts without block records (older or hand-made) fall back to the recorded cases.
    planned: slot?.planned ?? group.length,
    warmup: slot?.warmup ?? group.filter((x) => x.c.warmup).length,
    completed: 0,
    mismatch: 0,
    failed: 0,
    timeout: 0,
    unavailable: slot?.unavailable ?? 0,
    notRun: slot?.notRun ?? 0,
    notReached: 0,
    environment: 0,
    summary: summarize([]),
    valuesMs: [],
    warmupValuesMs: [],
  };
  for (const x of group) {
    const d = phaseDuration(x.c, phase);
    if (x.c.warmup) {
      if (d.ms !== null) cell.warmupValuesMs.push(d.ms);
      continue;
    }
    switch (d.state) {
      case 'ok':
        cell.completed++;
        cell.valuesMs.push(d.ms!);
        break;
      case 'mismatch':
        cell.mismatch++;
        break;
      case 'failed':
        cell.failed++;
        break;
      case 'timeout':
        cell.timeout++;
        break;
      case 'unavailable':
        cell.unavailable++;
        break;
      case 'environment':
        cell.environment++;
        break;
      case 'not-reached':
        cell.notReached++;
        break;
      default: {
        const never: never = d.state;
        throw new Error(`unknown phase state ${String(never)}`);
      }
    }
  }
  cell.summary = summarize(cell.valuesMs);
  return cell;
}

export function cellDiagnostics(cell: PhaseCell, group: IndexedCase[], phase: string): Diagnostic[] {
  const out: Diagnostic[] = [];
  const base = { testbed: cell.testbed, backend: cell.backend, workload: cell.workload, fixture: cell.fixture, phase };
  const measured = group.filter((x) => !x.c.warmup && phaseDuration(x.c, phase).state === 'ok');
  const n = cell.valuesMs.length;
  // With fewer than 6 values the MAD is too coarse for the 3.5 cut-off to mean anything.
  for (const o of n >= 6 ? modifiedZOutliers(cell.valuesMs) : []) {
    const x = measured[o.index]!;
    out.push({
      ...base,
      kind: 'outlier',
      message: `case ${x.c.id} of run ${x.receipt.runId} took ${o.value.toFixed(1)} ms, modified z = ${o.score.toFixed(1)}; kept in every statistic`,
    });
  }
  if (n >= 4) {
    const first = cell.valuesMs[0]!;
    const rest = [...cell.valuesMs.slice(1)].sort((a, b) => a - b);
    const restMedian = rest.length % 2 ? rest[(rest.length - 1) / 2]! : (rest[rest.length / 2 - 1]! + rest[rest.length / 2]!) / 2;
    if (first > 1.5 * restMedian && first >= rest[rest.length - 1]!) {
      out.push({
        ...base,
        kind: 'slow-first-block',
        message: `first measured block took ${first.toFixed(1)} ms, ${(first / restMedian).toFixed(1)}x the median of the rest; consider a warm-up block`,
      });
    }
  }
  if (n >= 8) {
    const rho = spearman(
      measured.map((x) => x.runIndex),
      cell.valuesMs,
    );
    // |rho| above ~2/sqrt(n-1) is the usual large-sample 5% line for a rank correlation.
    if (rho !== null && Math.abs(rho) > 1.96 / Math.sqrt(n - 1)) {
      out.push({
        ...base,
        kind: 'drift',
        message: `durations ${rho > 0 ? 'rise' : 'fall'} over the run (Spearman rho = ${rho.toFixed(2)}, n = ${n})`,
      });
    }
  }
  // Sample-size notes once per backend and workload (on the whole-case row), not once per phase.
  if (phase === TOTAL_PHASE) {
    const sizes = measuredPerPhase(group);
    const small = sizes.filter((s) => s.n > 0 && s.n < 6).map((s) => s.phase);
    const noP95 = sizes.filter((s) => s.n >= 6 && s.n < 20).map((s) => s.phase);
    if (small.length > 0)
      out.push({
        ...base,
        phase: '*',
        kind: 'too-few-samples',
        message: `fewer than 6 measured cases in ${small.length} phase(s) (${summarizePhases(small)}): no 95% interval for their median`,
      });
    if (noP95.length > 0)
      out.push({
        ...base,
        phase: '*',
        kind: 'too-few-samples',
        message: `6-19 measured cases in ${noP95.length} phase(s) (${summarizePhases(noP95)}): median CI shown, p95 needs 20`,
      });
  }
  return out;
}

function measuredPerPhase(group: IndexedCase[]): { phase: string; n: number }[] {
  const counts = new Map<string, number>();
  for (const x of group) {
    if (x.c.warmup || x.c.outcome === 'environment' || x.c.outcome === 'unavailable') continue;
    for (const p of x.c.phases) if (p.outcome === 'ok') counts.set(p.name, (counts.get(p.name) ?? 0) + 1);
    if (x.c.outcome === 'ok') counts.set(TOTAL_PHASE, (counts.get(TOTAL_PHASE) ?? 0) + 1);
  }
  return [...counts].map(([phase, n]) => ({ phase, n }));
}

function summarizePhases(phases: string[]): string {
  return phases.length <= 4 ? phases.join(', ') : `${phases.slice(0, 3).join(', ')} and ${phases.length - 3} more`;
}
