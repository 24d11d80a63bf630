// Receipts -> report numbers. A pure function: no clock, no file system, no environment; the same
// receipts and options give the same document byte for byte (resampling is seeded per comparison).
import type { CaseRecord, Receipt } from '../harness/receipt-types.js';
import {
  bootstrapMedianCi,
  modifiedZOutliers,
  rateBound,
  signFlipTest,
  spearman,
  summarize,
  type BootstrapCi,
  type PermutationResult,
  type RateBound,
  type Summary,
} from './statistics.js';

export const REPORT_VERSION = 1 as const;
/** The pseudo-phase for a whole case: its wall time. */
export const TOTAL_PHASE = 'total';
/** Backends whose sessions are expected to share extents with the base. */
export const CLONE_BACKENDS: readonly string[] = ['reflink', 'apfs-clone', 'btrfs-snapshot'];
/** Failure codes that mean "the clone could not be made" (a typed fallback, never a silent copy). */
export const CLONE_FAILURE_CODES: readonly string[] = ['E_CLONE_UNSUPPORTED', 'E_CROSS_DEVICE', 'E_CLONE_NOT_OBSERVED'];

export interface AnalyzeOptions {
  /** The reference backend for paired ratios. */
  baseline?: string;
  /** Seed for the bootstrap and Monte Carlo permutations; recorded in the report. */
  seed?: number;
  /** Significance level of the permutation test. */
  alpha?: number;
  bootstrapResamples?: number;
  permutationDraws?: number;
  /** Testbed labels by testbedKey (from labelTestbeds over a larger receipt set), so a subset keeps its labels. */
  labels?: Map<string, string>;
}

/**
 * One testbed: a host (salted id, OS, CPU model) with one store filesystem. Receipts from the same
 * host on btrfs and on XFS are two testbeds, because the backends measure different filesystems.
 */
export interface Testbed {
  /** Short label, T1, T2, ... in order of first receipt start. */
  id: string;
  /** First 12 hex characters of the salted host id. */
  hostId: string;
  os: string;
  kernels: string[];
  arch: string;
  cpuModel: string;
  cores: number;
  memoryBytes: number;
  storeFs: string;
  receipts: number;
  runIds: string[];
  planNames: string[];
  /** True when every receipt of the testbed is a synthetic one (planName starts with "synthetic"). */
  synthetic: boolean;
  /** Backends reported unavailable on this testbed, with their typed reason. */
  unavailable: { backend: string; reason: string | null }[];
  /** Tool versions as reported by the first receipt. */
  tools: Record<string, string | null>;
}

export interface PhaseCell {
  testbed: string;
  backend: string;
  workload: string;
  phase: string;
  fixtures: string[];
  /** Slots the plans scheduled for this backend and workload on this testbed (blocks x 1), warm-up included. */
  planned: number;
  /** Planned warm-up slots. */
  warmup: number;
  /** Measured (non-warm-up) cases whose phase finished ok. */
  completed: number;
  failed: number;
  timeout: number;
  /** Planned slots not run because the backend was unavailable on the host (warm-up included). */
  unavailable: number;
  /** Planned slots with no case and no unavailability recorded (an interrupted run). */
  notRun: number;
  /** Measured cases that ended before reaching this phase. */
  notReached: number;
  summary: Summary;
  /** Measured durations in run order, for charts and diagnostics. */
  valuesMs: number[];
  warmupValuesMs: number[];
}

export interface Comparison {
  testbed: string;
  backend: string;
  baseline: string;
  workload: string;
  phase: string;
  /** Blocks where both cases finished this phase ok. */
  blocks: number;
  ratios: number[];
  medianRatio: number | null;
  ci: BootstrapCi | null;
  permutation: PermutationResult | null;
  /** Permutation p < alpha and the bootstrap CI excludes 1. */
  significant: boolean;
  /** "faster" / "slower" when significant at alpha, "~" otherwise. */
  verdict: 'faster' | 'slower' | '~';
}

export type RateKind = 'failure' | 'mismatch' | 'fallback';

export interface RateRow {
  testbed: string;
  backend: string;
  /** A workload name, or "*" for every workload of the backend on the testbed. */
  workload: string;
  kind: RateKind;
  bound: RateBound;
}

export type DiagnosticKind = 'outlier' | 'slow-first-block' | 'drift' | 'too-few-samples' | 'unpaired';

export interface Diagnostic {
  kind: DiagnosticKind;
  testbed: string;
  backend: string;
  workload: string;
  /** A phase, or "*" for a note about every phase of the backend and workload. */
  phase: string;
  message: string;
}

export interface ReportData {
  kind: 'pdb-env-report';
  reportVersion: typeof REPORT_VERSION;
  baseline: string;
  seed: number;
  alpha: number;
  bootstrapResamples: number;
  permutationDraws: number;
  receipts: {
    runId: string;
    planName: string;
    testbed: string;
    startedAt: string;
    finishedAt: string;
    cases: number;
    synthetic: boolean;
  }[];
  testbeds: Testbed[];
  backends: string[];
  workloads: string[];
  phases: string[];
  cells: PhaseCell[];
  comparisons: Comparison[];
  rates: RateRow[];
  diagnostics: Diagnostic[];
}

/** Which cases count as a testbed: the host's salted id, OS, CPU model and the store filesystem. */
export function testbedKey(r: Receipt): string {
  return JSON.stringify([r.host.hostId, r.host.os, r.host.cpuModel, r.host.storeFs.type]);
}

export function isSyntheticReceipt(r: Receipt): boolean {
  return r.planName.startsWith('synthetic');
}

function sortReceipts(receipts: Receipt[]): Receipt[] {
  return [...receipts].sort((a, b) => a.startedAt.localeCompare(b.startedAt) || a.runId.localeCompare(b.runId));
}

/** Testbed labels T1, T2, ... in order of each testbed's first receipt, independent of argument order. */
export function labelTestbeds(receipts: Receipt[]): Map<string, string> {
  const labels = new Map<string, string>();
  for (const r of sortReceipts(receipts)) if (!labels.has(testbedKey(r))) labels.set(testbedKey(r), `T${labels.size + 1}`);
  return labels;
}

/** A stable 32-bit seed per comparison, so adding a testbed does not change another's interval. */
function seedFor(seed: number, key: string): number {
  let h = 0x811c9dc5 ^ seed;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function phaseOrder(a: string, b: string, firstSeen: Map<string, number>): number {
  const rank = (p: string): number =>
    p === 'create' ? 0 : p.startsWith('step:') ? 1 : p === 'checkpoint' ? 2 : p === 'discard' ? 3 : p === TOTAL_PHASE ? 5 : 4;
  return rank(a) - rank(b) || (firstSeen.get(a) ?? 0) - (firstSeen.get(b) ?? 0) || a.localeCompare(b);
}

/** The duration of `phase` in a case, when that phase finished ok; the total is the case wall time. */
function phaseDuration(
  c: CaseRecord,
  phase: string,
): { state: 'ok' | 'failed' | 'timeout' | 'unavailable' | 'not-reached'; ms: number | null } {
  if (c.outcome === 'unavailable') return { state: 'unavailable', ms: null };
  if (phase === TOTAL_PHASE) {
    if (c.outcome === 'ok') return { state: 'ok', ms: c.wallMs };
    return { state: c.outcome, ms: null };
  }
  const p = c.phases.find((x) => x.name === phase);
  if (!p) return { state: 'not-reached', ms: null };
  if (p.outcome === 'ok') return { state: 'ok', ms: p.durationMs };
  return { state: p.outcome === 'timeout' ? 'timeout' : p.outcome === 'unavailable' ? 'unavailable' : 'failed', ms: null };
}

function uniqSorted(xs: Iterable<string>): string[] {
  return [...new Set(xs)].sort();
}

interface IndexedCase {
  receipt: Receipt;
  testbed: string;
  /** Position of the case in its testbed's run order (receipts by start time, then block, position). */
  runIndex: number;
  c: CaseRecord;
}

export function analyzeReceipts(receipts: Receipt[], options: AnalyzeOptions = {}): ReportData {
  const baseline = options.baseline ?? 'full-copy';
  const seed = options.seed ?? 20260101;
  const alpha = options.alpha ?? 0.05;
  const bootstrapResamples = options.bootstrapResamples ?? 4000;
  const permutationDraws = options.permutationDraws ?? 9999;

  const ordered = sortReceipts(receipts);
  const testbedIds = new Map<string, string>();
  const labels = options.labels ?? labelTestbeds(receipts);
  for (const r of ordered)
    if (!testbedIds.has(testbedKey(r))) testbedIds.set(testbedKey(r), labels.get(testbedKey(r)) ?? `T?${testbedIds.size + 1}`);
  const testbeds: Testbed[] = [];
  for (const [key, id] of testbedIds) {
    const rs = ordered.filter((r) => testbedKey(r) === key);
    const h = rs[0]!.host;
    const unavailable = new Map<string, string | null>();
    for (const r of rs) for (const b of r.backends) if (!b.available) unavailable.set(b.name, b.reason);
    testbeds.push({
      id,
      hostId: h.hostId.replace(/^sha256:/, '').slice(0, 12),
      os: h.os,
      kernels: uniqSorted(rs.map((r) => r.host.kernel)),
      arch: h.arch,
      cpuModel: h.cpuModel,
      cores: h.cores,
      memoryBytes: h.memoryBytes,
      storeFs: h.storeFs.type,
      receipts: rs.length,
      runIds: rs.map((r) => r.runId),
      planNames: uniqSorted(rs.map((r) => r.planName)),
      synthetic: rs.every(isSyntheticReceipt),
      unavailable: [...unavailable].map(([backend, reason]) => ({ backend, reason })).sort((a, b) => a.backend.localeCompare(b.backend)),
      tools: h.tools,
    });
  }

  const cases: IndexedCase[] = [];
  const runCounter = new Map<string, number>();
  for (const r of ordered) {
    const testbed = testbedIds.get(testbedKey(r))!;
    const sorted = [...r.cases].sort((a, b) => a.block - b.block || a.position - b.position);
    for (const c of sorted) {
      const runIndex = runCounter.get(testbed) ?? 0;
      runCounter.set(testbed, runIndex + 1);
      cases.push({ receipt: r, testbed, runIndex, c });
    }
  }

  const firstSeen = new Map<string, number>();
  for (const { c } of cases) for (const p of c.phases) if (!firstSeen.has(p.name)) firstSeen.set(p.name, firstSeen.size);
  const phases = [...firstSeen.keys(), TOTAL_PHASE].sort((a, b) => phaseOrder(a, b, firstSeen));
  const slots = plannedSlots(ordered, testbedIds);
  const slotKeys = [...slots.keys()].map((k) => JSON.parse(k) as [string, string, string]);
  const backends = uniqSorted([...cases.map((x) => x.c.backend), ...slotKeys.map((k) => k[1])]).sort((a, b) =>
    a === baseline ? -1 : b === baseline ? 1 : a.localeCompare(b),
  );
  const workloads = uniqSorted([...cases.map((x) => x.c.workload), ...slotKeys.map((k) => k[2])]);

  const groups = new Map<string, IndexedCase[]>();
  for (const x of cases) {
    const k = JSON.stringify([x.testbed, x.c.backend, x.c.workload]);
    const g = groups.get(k);
    if (g) g.push(x);
    else groups.set(k, [x]);
  }

  const cells: PhaseCell[] = [];
  const comparisons: Comparison[] = [];
  const rates: RateRow[] = [];
  const diagnostics: Diagnostic[] = [];

  for (const tb of testbeds) {
    for (const backend of backends) {
      const all = cases.filter((x) => x.testbed === tb.id && x.c.backend === backend);
      if (all.length > 0)
        rates.push(
          ...rateRows(
            tb.id,
            backend,
            '*',
            all.map((x) => x.c),
          ),
        );
      for (const workload of workloads) {
        const key = JSON.stringify([tb.id, backend, workload]);
        const group = groups.get(key);
        const slot = slots.get(key);
        if (!group) {
          // Planned but never run here (backend unavailable, run interrupted): counts only.
          if (slot) cells.push(phaseCell(tb.id, backend, workload, TOTAL_PHASE, [], slot));
          continue;
        }
        rates.push(
          ...rateRows(
            tb.id,
            backend,
            workload,
            group.map((x) => x.c),
          ),
        );
        for (const phase of phases) {
          const cell = phaseCell(tb.id, backend, workload, phase, group, slot);
          if (cell.completed + cell.failed + cell.timeout + cell.unavailable === 0 && cell.warmupValuesMs.length === 0) continue;
          cells.push(cell);
          diagnostics.push(...cellDiagnostics(cell, group, phase));
          if (backend !== baseline) {
            const base = groups.get(JSON.stringify([tb.id, baseline, workload]));
            if (!base) continue;
            const cmp = compare(tb.id, backend, baseline, workload, phase, group, base, {
              seed: seedFor(seed, JSON.stringify([tb.id, backend, workload, phase])),
              alpha,
              bootstrapResamples,
              permutationDraws,
            });
            comparisons.push(cmp);
            if (phase === TOTAL_PHASE && cmp.blocks > 0 && cmp.blocks < 6) {
              diagnostics.push({
                kind: 'too-few-samples',
                testbed: tb.id,
                backend,
                workload,
                phase: '*',
                message: `${cmp.blocks} paired block(s): the sign-flip test cannot reach p < 0.05 below 6 blocks (smallest p here ${fmtP(cmp.permutation?.minAttainableP)}) and the bootstrap interval is unreliable`,
              });
            }
          }
        }
      }
    }
  }

  return {
    kind: 'pdb-env-report',
    reportVersion: REPORT_VERSION,
    baseline,
    seed,
    alpha,
    bootstrapResamples,
    permutationDraws,
    receipts: ordered.map((r) => ({
      runId: r.runId,
      planName: r.planName,
      testbed: testbedIds.get(testbedKey(r))!,
      startedAt: r.startedAt,
      finishedAt: r.finishedAt,
      cases: r.cases.length,
      synthetic: isSyntheticReceipt(r),
    })),
    testbeds,
    backends,
    workloads,
    phases,
    cells,
    comparisons,
    rates,
    diagnostics,
  };
}

function fmtP(p: number | undefined): string {
  return p === undefined ? '-' : p < 0.001 ? p.toExponential(1) : p.toFixed(3);
}

interface Slots {
  planned: number;
  warmup: number;
  unavailable: number;
  notRun: number;
}

/** Planned slots per [testbed, backend, workload] from each receipt's block orders. */
function plannedSlots(receipts: Receipt[], testbedIds: Map<string, string>): Map<string, Slots> {
  const out = new Map<string, Slots>();
  for (const r of receipts) {
    const testbed = testbedIds.get(testbedKey(r))!;
    const ran = new Set(r.cases.map((c) => `${c.block}\u0000${c.backend}`));
    const unavailable = new Set(r.backends.filter((b) => !b.available).map((b) => b.name));
    for (const b of r.blocks) {
      for (const backend of b.order) {
        const key = JSON.stringify([testbed, backend, b.workload]);
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

function phaseCell(
  testbed: string,
  backend: string,
  workload: string,
  phase: string,
  group: IndexedCase[],
  slot: Slots | undefined,
): PhaseCell {
  const cell: PhaseCell = {
    testbed,
    backend,
    workload,
    phase,
    fixtures: uniqSorted(group.map((x) => x.c.fixture)),
    // Receipts without block records (older or hand-made) fall back to the recorded cases.
    planned: slot?.planned ?? group.length,
    warmup: slot?.warmup ?? group.filter((x) => x.c.warmup).length,
    completed: 0,
    failed: 0,
    timeout: 0,
    unavailable: slot?.unavailable ?? 0,
    notRun: slot?.notRun ?? 0,
    notReached: 0,
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
      case 'failed':
        cell.failed++;
        break;
      case 'timeout':
        cell.timeout++;
        break;
      case 'unavailable':
        cell.unavailable++;
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

function cellDiagnostics(cell: PhaseCell, group: IndexedCase[], phase: string): Diagnostic[] {
  const out: Diagnostic[] = [];
  const base = { testbed: cell.testbed, backend: cell.backend, workload: cell.workload, phase };
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
    if (x.c.warmup) continue;
    for (const p of x.c.phases) if (p.outcome === 'ok') counts.set(p.name, (counts.get(p.name) ?? 0) + 1);
    if (x.c.outcome === 'ok') counts.set(TOTAL_PHASE, (counts.get(TOTAL_PHASE) ?? 0) + 1);
  }
  return [...counts].map(([phase, n]) => ({ phase, n }));
}

function summarizePhases(phases: string[]): string {
  return phases.length <= 4 ? phases.join(', ') : `${phases.slice(0, 3).join(', ')} and ${phases.length - 3} more`;
}

function blockKey(x: IndexedCase): string {
  return JSON.stringify([x.receipt.runId, x.c.block]);
}

function compare(
  testbed: string,
  backend: string,
  baseline: string,
  workload: string,
  phase: string,
  group: IndexedCase[],
  base: IndexedCase[],
  o: { seed: number; alpha: number; bootstrapResamples: number; permutationDraws: number },
): Comparison {
  const baseByBlock = new Map<string, number>();
  for (const x of base) {
    if (x.c.warmup) continue;
    const d = phaseDuration(x.c, phase);
    if (d.ms !== null && d.ms > 0) baseByBlock.set(blockKey(x), d.ms);
  }
  const ratios: number[] = [];
  for (const x of group) {
    if (x.c.warmup) continue;
    const d = phaseDuration(x.c, phase);
    const b = baseByBlock.get(blockKey(x));
    if (d.ms !== null && d.ms > 0 && b !== undefined) ratios.push(d.ms / b);
  }
  const summary = summarize(ratios);
  const ci = bootstrapMedianCi(ratios, o.seed, o.bootstrapResamples);
  const permutation = signFlipTest(ratios.map(Math.log), o.seed ^ 0x9e3779b9, o.permutationDraws);
  // Significant only when the permutation test and the bootstrap interval agree, so a "faster" row
  // never shows an interval that still contains 1.
  const ciExcludesOne = ci !== null && (ci.upper < 1 || ci.lower > 1);
  const significant = permutation !== null && permutation.p < o.alpha && ciExcludesOne;
  const verdict = !significant || summary.median === null ? '~' : summary.median < 1 ? 'faster' : 'slower';
  return {
    testbed,
    backend,
    baseline,
    workload,
    phase,
    blocks: ratios.length,
    ratios,
    medianRatio: summary.median,
    ci,
    permutation,
    significant,
    verdict,
  };
}

function rateRows(testbed: string, backend: string, workload: string, cs: CaseRecord[]): RateRow[] {
  const attempted = cs.filter((c) => c.outcome !== 'unavailable');
  const failures = attempted.filter((c) => c.outcome === 'failed' || c.outcome === 'timeout').length;
  const oracle = attempted.map((c) => c.checks.find((k) => k.name === 'oracle')).filter((k) => k !== undefined);
  const mismatches = oracle.filter((k) => !k.passed).length;
  const rows: RateRow[] = [
    { testbed, backend, workload, kind: 'failure', bound: rateBound(failures, attempted.length) },
    { testbed, backend, workload, kind: 'mismatch', bound: rateBound(mismatches, oracle.length) },
  ];
  if (CLONE_BACKENDS.includes(backend) || attempted.some((c) => c.cloneObserved !== null)) {
    rows.push({
      testbed,
      backend,
      workload,
      kind: 'fallback',
      bound: rateBound(attempted.filter(isCloneFallback).length, attempted.length),
    });
  }
  return rows;
}

/** A case where the clone was not made: not observed, or a typed clone failure. */
export function isCloneFallback(c: CaseRecord): boolean {
  return c.cloneObserved === false || (c.failure !== null && CLONE_FAILURE_CODES.includes(c.failure.code));
}
