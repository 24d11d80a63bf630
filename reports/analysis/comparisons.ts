// Paired comparisons with the baseline (per-block ratios and differences, seeded bootstrap intervals
// and a sign-flip test) and failure / mismatch / fallback rates with their 95% bounds. Environment
// and unavailable cases are counted elsewhere, never in a rate.
import { phaseDuration } from './phase-cells.js';
import type { ReportCase as CaseRecord } from '../receipts/receipts.js';
import {
  CLONE_BACKENDS,
  CLONE_FAILURE_CODES,
  MIN_BLOCKS_TO_TELL,
  type Comparison,
  type Diagnostic,
  type IndexedCase,
  type RateRow,
} from './report-data.js';
import { fmtP } from './format.js';
import { bootstrapMedianCi, rateBound, signFlipTest, summarize } from './statistics.js';

/** A stable 32-bit seed per comparison, so adding a testbed does not change another's interval. */
export function seedFor(seed: number, key: string): number {
  let h = 0x811c9dc5 ^ seed;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function blockKey(x: IndexedCase): string {
  return JSON.stringify([x.receipt.runId, x.c.block]);
}

/** The verdict in words, so a reader never has to decode "~". */
export function verdictWords(blocks: number, verdict: Comparison['verdict']): string {
  if (blocks < MIN_BLOCKS_TO_TELL) return 'too few blocks to tell';
  return verdict === '~' ? 'no difference shown' : verdict;
}

/** Where a comparison belongs: testbed, backend against baseline, workload, fixture and phase. */
export interface ComparisonKey {
  testbed: string;
  backend: string;
  baseline: string;
  workload: string;
  fixture: string;
  phase: string;
}

export function compare(
  key: ComparisonKey,
  group: IndexedCase[],
  base: IndexedCase[],
  o: { seed: number; alpha: number; bootstrapResamples: number; permutationDraws: number },
): Comparison {
  const { phase } = key;
  const baseByBlock = new Map<string, number>();
  for (const x of base) {
    if (x.c.warmup) continue;
    const d = phaseDuration(x.c, phase);
    if (d.ms !== null && d.ms > 0) baseByBlock.set(blockKey(x), d.ms);
  }
  const ratios: number[] = [];
  const differencesMs: number[] = [];
  for (const x of group) {
    if (x.c.warmup) continue;
    const d = phaseDuration(x.c, phase);
    const b = baseByBlock.get(blockKey(x));
    if (d.ms !== null && d.ms > 0 && b !== undefined) {
      ratios.push(d.ms / b);
      differencesMs.push(d.ms - b);
    }
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
    ...key,
    blocks: ratios.length,
    ratios,
    medianRatio: summary.median,
    ci,
    permutation,
    significant,
    verdict,
    words: verdictWords(ratios.length, verdict),
    differencesMs,
    medianDifferenceMs: summarize(differencesMs).median,
    differenceCi: bootstrapMedianCi(differencesMs, o.seed ^ 0x5bd1e995, o.bootstrapResamples),
  };
}

/** Below 6 paired blocks no sign-flip test can reach p < 0.05: say so once, on the whole-case row. */
export function tooFewBlocks(cmp: Comparison): Diagnostic {
  return {
    kind: 'too-few-samples',
    testbed: cmp.testbed,
    backend: cmp.backend,
    workload: cmp.workload,
    fixture: cmp.fixture,
    phase: '*',
    message: `${cmp.blocks} paired block(s), too few to tell: the sign-flip test cannot reach p < 0.05 below ${MIN_BLOCKS_TO_TELL} blocks (smallest p here ${fmtP(cmp.permutation?.minAttainableP)}) and the bootstrap interval is unreliable`,
  };
}

/** Cases a rate counts: neither environment (nothing blamed on the filesystem) nor unavailable. */
export function attemptedCases(cs: CaseRecord[]): CaseRecord[] {
  return cs.filter((c) => c.outcome !== 'unavailable' && c.outcome !== 'environment');
}

/** Failure, mismatch (and fallback) rates of measured cases: warm-up blocks are left out, as from every statistic. */
export function rateRows(where: { testbed: string; backend: string; workload: string; fixture: string }, cs: CaseRecord[]): RateRow[] {
  const attempted = attemptedCases(cs.filter((c) => !c.warmup));
  const failures = attempted.filter((c) => c.outcome === 'failed' || c.outcome === 'timeout').length;
  const oracle = attempted.map((c) => c.checks.find((k) => k.name === 'oracle' && k.evaluated)).filter((k) => k !== undefined);
  const mismatches = oracle.filter((k) => !k.passed).length;
  const rows: RateRow[] = [
    { ...where, kind: 'failure', bound: rateBound(failures, attempted.length) },
    { ...where, kind: 'mismatch', bound: rateBound(mismatches, oracle.length) },
  ];
  if (CLONE_BACKENDS.includes(where.backend) || attempted.some((c) => c.cloneObserved !== null))
    rows.push({ ...where, kind: 'fallback', bound: rateBound(attempted.filter(isCloneFallback).length, attempted.length) });
  return rows;
}

/** A case where the clone was not made: not observed, or a typed clone failure. */
export function isCloneFallback(c: CaseRecord): boolean {
  return c.cloneObserved === false || (c.failure !== null && CLONE_FAILURE_CODES.includes(c.failure.code));
}
