// The receipt contract, types only. Mirrored field by field (with the same one-line
// descriptions) in schemas/receipt.schema.json; reports import only these types.
import type { Digest } from '../model/canonical-json.js';
import type { MismatchCounts } from '../model/snapshot.js';

export const RECEIPT_SCHEMA_VERSION = 1 as const;

/** A failed case is a result, not a crash. */
export type CaseOutcome = 'ok' | 'failed' | 'timeout' | 'unavailable';

export interface HostFingerprint {
  /** Salted sha256 of the host name and machine id; never the name itself. */
  hostId: string;
  /** os.platform(): linux, darwin, ... */
  os: string;
  /** Kernel release. */
  kernel: string;
  arch: string;
  cpuModel: string;
  cores: number;
  memoryBytes: number;
  /** Filesystem of the store, from statfs/mount table. */
  storeFs: { type: string; mountOptions: string[] };
  /** Tool versions (node, npm, git, pnpm...), null when absent. */
  tools: Record<string, string | null>;
}

export interface BackendAvailability {
  name: string;
  available: boolean;
  /** Typed reason (error code) when not available. */
  reason: string | null;
  detail: string;
  experimental: boolean;
  /** Probe evidence (for reflink: a forced clone was made and observed). */
  evidence: Record<string, string | number | boolean | null>;
  /** Declared capabilities of the backend (absent in receipts written before this field existed). */
  capabilities?: BackendCapabilities;
}

/** What a backend can do in principle (mirrors backends/types.ts Capabilities). */
export interface BackendCapabilities {
  /** Session create cost does not grow with the tree (snapshot or mount). */
  constantTimeCreate: boolean;
  /** Sessions share unchanged bytes with the base on disk. */
  sharesExtents: boolean;
  /** A session needs re-activation (a mount) after a reboot. */
  needsRemount: boolean;
  /** Carries every file of the Snapshot (git-worktree carries only committed files). */
  carriesFullSnapshot: boolean;
  /** Always false: workspace isolation is not a security sandbox. */
  securityIsolation: false;
}

export interface PhaseRecord {
  /** "create", "checkpoint", "discard", or "step:<name>". */
  name: string;
  outcome: CaseOutcome;
  /** Monotonic wall time of the phase in milliseconds. */
  durationMs: number;
  exitCode: number | null;
  cpuUserMs: number | null;
  cpuSystemMs: number | null;
  peakRssBytes: number | null;
  /** The phase's own timeout in milliseconds, when it has one. */
  timeoutMs: number | null;
  /** Named timings inside the phase (e.g. firstDiagnosticsMs). */
  milestones: Record<string, number>;
}

export interface CheckRecord {
  /** "oracle", "base-unchanged", "sibling-unchanged", "cleanup", or a workload check. */
  name: string;
  passed: boolean;
  /** Counts by kind when a tree comparison failed. */
  mismatches: MismatchCounts | null;
  detail: string | null;
}

export interface FailureRecord {
  /** Stable error code (E_TIMEOUT, E_ORACLE_MISMATCH, E_CLONE_UNSUPPORTED, ...). */
  code: string;
  /** The phase it happened in. */
  phase: string;
  /** Path-free message. */
  message: string;
}

export interface CaseRecord {
  /** `b<block>-p<position>`. */
  id: string;
  block: number;
  position: number;
  warmup: boolean;
  backend: string;
  workload: string;
  /** Path-free fixture name. */
  fixture: string;
  outcome: CaseOutcome;
  failure: FailureRecord | null;
  phases: PhaseRecord[];
  checks: CheckRecord[];
  /** Physical disk growth of the store's filesystem during create (free-space delta after sync). */
  diskBytes: number | null;
  /** For clone backends: whether shared extents were observed; null when not applicable. */
  cloneObserved: boolean | null;
  resultSnapshot: Digest | null;
  oracleSnapshot: Digest | null;
  /** Whole case wall time, and the part not spent in any phase (harness overhead). */
  wallMs: number;
  overheadMs: number;
  /** Workload metrics (pnpm import method, agent name and version, ...). */
  metrics: Record<string, string | number | boolean>;
}

export interface BlockRecord {
  index: number;
  workload: string;
  warmup: boolean;
  /** Backend order after the seeded shuffle. */
  order: string[];
}

export interface ReceiptSummary {
  planned: number;
  ok: number;
  failed: number;
  timeout: number;
  unavailable: number;
  /** Cases whose oracle check failed (unavailable cases are not counted). */
  oracleMismatches: number;
  /** Median share of case wall time not spent in phases. */
  overheadShareMedian: number | null;
  overheadShareMax: number | null;
}

export interface Receipt {
  schemaVersion: typeof RECEIPT_SCHEMA_VERSION;
  kind: 'pdb-env-receipt';
  tool: { name: 'pdb-env'; version: string; commit: string | null };
  runId: string;
  planName: string;
  planDigest: Digest;
  seed: number;
  startedAt: string;
  finishedAt: string;
  host: HostFingerprint;
  backends: BackendAvailability[];
  blocks: BlockRecord[];
  cases: CaseRecord[];
  summary: ReceiptSummary;
}
