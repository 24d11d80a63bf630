// The report document's shape (what analyzeReceipts returns and the renderers print), and the
// case index every part of the analysis reads. Types and constants only, plus one helper.
// The backends' traits come from their table, which imports no backend (test/architecture.test.ts).
import { backendsWith } from '../../backends/table.js';
import type { ReportCase, ReportReceipt } from '../receipts/receipts.js';
import type { BootstrapCi, PermutationResult, RateBound, Summary } from './statistics.js';

export const REPORT_VERSION = 2 as const;
/** Below this many paired blocks a sign-flip test cannot reach p < 0.05 (2 / 2^5 = 0.0625): too few blocks to tell. */
export const MIN_BLOCKS_TO_TELL = 6;
/** The pseudo-phase for a whole case: its wall time. */
export const TOTAL_PHASE = 'total';
/** Backends whose sessions are expected to share extents with the base: the table's clone family. */
export const CLONE_BACKENDS: readonly string[] = backendsWith('cloneFamily');
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
  /** True when no receipt of the testbed may count as gate evidence (schema version 1, dirty or changed code). */
  noGateEvidence: boolean;
  /** Load averages at the start of each run (1, 5, 15 min), where the receipt recorded them. */
  loadAverages: number[][];
  /** Backends reported unavailable on this testbed, with their typed reason. */
  unavailable: { backend: string; reason: string | null }[];
  /** Tool versions as reported by the first receipt. */
  tools: Record<string, string | null>;
}

/** A fixture of the report: its label (its name, made unique within the report) and identity. */
export interface FixtureInfo {
  label: string;
  key: string;
  name: string;
  workload: string;
  version: string | null;
  paramsDigest: string | null;
  baseSnapshot: string | null;
}

export interface PhaseCell {
  testbed: string;
  backend: string;
  workload: string;
  /** The one fixture of the cell (its label): cells never pool fixtures. */
  fixture: string;
  phase: string;
  /** Slots the plans scheduled for this backend and workload on this testbed (blocks x 1), warm-up included. */
  planned: number;
  /** Planned warm-up slots. */
  warmup: number;
  /** Measured (non-warm-up) cases whose phase finished ok. */
  completed: number;
  /** Measured cases whose tree differed from the oracle (counted on the whole-case row). */
  mismatch: number;
  failed: number;
  timeout: number;
  /** Planned slots not run because the backend was unavailable on the host (warm-up included). */
  unavailable: number;
  /** Planned slots with no case and no unavailability recorded (an interrupted run). */
  notRun: number;
  /** Measured cases that ended before reaching this phase. */
  notReached: number;
  /** Measured cases stopped by the environment (registry, credentials, network): counted, never in a statistic or a rate. */
  environment: number;
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
  fixture: string;
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
  /** The verdict in words: faster, slower, "no difference shown", or "too few blocks to tell". */
  words: string;
  /** Paired per-block differences candidate - baseline in milliseconds (the absolute slack rule reads them). */
  differencesMs: number[];
  medianDifferenceMs: number | null;
  differenceCi: BootstrapCi | null;
}

export type RateKind = 'failure' | 'mismatch' | 'fallback';

export interface RateRow {
  testbed: string;
  backend: string;
  /** A workload name, or "*" for every workload of the backend on the testbed. */
  workload: string;
  /** A fixture label, or "*" for every fixture (of the workload, or of the backend). */
  fixture: string;
  kind: RateKind;
  bound: RateBound;
}

export type DiagnosticKind = 'outlier' | 'slow-first-block' | 'drift' | 'too-few-samples' | 'unpaired';

export interface Diagnostic {
  kind: DiagnosticKind;
  testbed: string;
  backend: string;
  workload: string;
  fixture: string;
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
    schemaVersion: 1 | 2 | 3 | 4;
    /** The commit the run started at (version 1: the commit read when the receipt was written). */
    commit: string | null;
    /** os.loadavg() when the run started; null in version 1 receipts. */
    loadAverage: number[] | null;
    /** Whether it may count as gate evidence, and why not. */
    gateEvidence: boolean;
    gateEvidenceReason: string | null;
    /** Harness overhead (case wall time not in any timed phase) per workload: the median and the largest share. */
    overheadByWorkload: { workload: string; cases: number; shareMedian: number; shareMax: number }[];
  }[];
  testbeds: Testbed[];
  backends: string[];
  workloads: string[];
  fixtures: FixtureInfo[];
  /** Per testbed and fixture: which backends were correct there and the fastest correct one (answers.ts). */
  answers: Answer[];
  phases: string[];
  cells: PhaseCell[];
  comparisons: Comparison[];
  rates: RateRow[];
  diagnostics: Diagnostic[];
}

/** One backend's standing in a testbed x fixture cell: correct, not correct (and why), or not judged. */
export interface BackendStanding {
  backend: string;
  status: 'correct' | 'incorrect' | 'not-judged' | 'unavailable';
  /** Attempted cases: not environment, not unavailable. */
  attempted: number;
  /** In words: "6 ok", "2 mismatch, 1 failed", "environment only (E_REGISTRY_UNREACHABLE)", "E_CLONE_UNSUPPORTED". */
  detail: string;
}

/** The question a report answers first, for one testbed and fixture. */
export interface Answer {
  testbed: string;
  workload: string;
  fixture: string;
  backends: BackendStanding[];
  /** The fastest correct backend by whole-case time against the baseline, or the baseline when none is shown faster. */
  fastest: { backend: string; medianRatio: number | null; ci: BootstrapCi | null; blocks: number; words: string } | null;
  /** What "correct here" covers: what the oracle compared, in words (source files, installed tree, build output). */
  compared: string;
}

/** A case with where it ran: its receipt, its testbed's label, its fixture's label and its place in the testbed's run order. */
export interface IndexedCase {
  receipt: ReportReceipt;
  testbed: string;
  fixture: string;
  /** Position of the case in its testbed's run order (receipts by start time, then block, position). */
  runIndex: number;
  c: ReportCase;
}

export function uniqSorted(xs: Iterable<string>): string[] {
  return [...new Set(xs)].sort();
}
