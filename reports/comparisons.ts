// Paired comparisons with the baseline (per-block ratios, a seeded bootstrap interval and a
// sign-flip test) and failure / mismatch / fallback rates with their 95% bounds.
import type { CaseRecord } from '../harness/receipt-types.js';
import { phaseDuration } from './phase-cells.js';
import { CLONE_BACKENDS, CLONE_FAILURE_CODES, type Comparison, type Diagnostic, type IndexedCase, type RateRow } from './report-data.js';
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

export function compare(
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

function fmtP(p: number | undefined): string {
  return p === undefined ? '-' : p < 0.001 ? p.toExponential(1) : p.toFixed(3);
}

/** Below 6 paired blocks no sign-flip test can reach p < 0.05: say so once, on the whole-case row. */
export function tooFewBlocks(cmp: Comparison): Diagnostic {
  return {
    kind: 'too-few-samples',
    testbed: cmp.testbed,
    backend: cmp.backend,
    workload: cmp.workload,
    phase: '*',
    message: `${cmp.blocks} paired block(s): the sign-flip test cannot reach p < 0.05 below 6 blocks (smallest p here ${fmtP(cmp.permutation?.minAttainableP)}) and the bootstrap interval is unreliable`,
  };
}

export function rateRows(testbed: string, backend: string, workload: string, cs: CaseRecord[]): RateRow[] {
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
