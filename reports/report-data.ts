// The report document's shape (what analyzeReceipts returns and the renderers print), and the
// case index every part of the analysis reads. Types and constants only, plus one helper.
import type { CaseRecord, Receipt } from '../harness/receipt-types.js';
import type { BootstrapCi, PermutationResult, RateBound, Summary } from './statistics.js';

export const REPORT_VERSION = 1 as const;
/** The pseudo-phase for a whole case: its wall time. */
export const TOTAL_PHASE = 'total';
/** Backends whose sessions are expected to share extents with the base. */
export const CLONE_BACKENDS: readonly string[] = ['reflink', 'apfs-clone', 'btrfs-snapshot'];
/** Failure codes that mean "the clone could not be made" (a typed fallback, never a silent copy). */
export const CLONE_FAILURE_CODES: readonly string[] = ['E_CLONE_UNSUPPORTED', 'E_CROSS_DEVICE', 'E_CLONE_NOT_OBSERVED'];

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

/** A case with where it ran: its receipt, its testbed's label, and its place in the testbed's run order. */
export interface IndexedCase {
  receipt: Receipt;
  testbed: string;
  /** Position of the case in its testbed's run order (receipts by start time, then block, position). */
  runIndex: number;
  c: CaseRecord;
}

export function uniqSorted(xs: Iterable<string>): string[] {
  return [...new Set(xs)].sort();
}
