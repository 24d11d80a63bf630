// The receipt contract, types only. Mirrored field by field (with the same one-line
// descriptions) in schemas/receipt.schema.json, which test/harness/receipt/receipt-types.test.ts checks;
// reports import only these types. Version 2 is what the harness writes; version 1 (below) is the
// shape of receipts written before provenance, outcome classes and fixture records existed, which
// reports still read but never count as gate evidence.
import type { Digest } from '../../model/canonical-json.js';
import type { MismatchCounts } from '../../model/snapshot.js';
import type { AgentRecord } from '../../workloads/types.js';
import type { Plan } from '../plan/plan.js';

/** A plan as a receipt carries it: without its store location (a local path). */
export type ReceiptPlan = Omit<Plan, 'store'>;

// A real agent's run is recorded by the workload that ran it (StepContext.recordAgent), so its record
// is defined there, one layer down, and is part of this contract from there.
export type { AgentFailureClass, AgentRecord } from '../../workloads/types.js';

export const RECEIPT_SCHEMA_VERSION = 4 as const;
/** Version 2 receipts (read-only) were written before the oracle hashed both trees it compares. */
export const ORACLE_HASHING_SINCE_VERSION = 3;
/** Since version 4 a receipt carries the plan it ran, each case its projected digest and each phase its start. */
export const PLAN_IN_RECEIPT_SINCE_VERSION = 4;

export const CASE_OUTCOMES = ['ok', 'mismatch', 'failed', 'environment', 'timeout', 'unavailable'] as const;

/**
 * How a case ended. ok; mismatch: its tree differs from the block's full-copy case (the oracle);
 * failed: pdb-env, the backend or an integrity check broke; environment: the registry, a tool, an
 * agent's credentials or the network failed (nothing is blamed on the filesystem); timeout;
 * unavailable: the backend or the lane cannot run on this host.
 */
export type CaseOutcome = (typeof CASE_OUTCOMES)[number];

/** How a phase ended. */
export type PhaseOutcome = 'ok' | 'failed' | 'timeout';

/** Where the host id came from. */
export type HostIdSource =
  'machine-id' | 'platform-uuid' | 'hostname' | 'machine-id+instance' | 'platform-uuid+instance' | 'hostname+instance';

export interface Provenance {
  /** Git commit of the pdb-env checkout when the run started; null outside a git checkout. */
  commit: string | null;
  /** Whether files outside the run's output directory differed from that commit when the run started; null outside a git checkout. */
  dirty: boolean | null;
  /** Whether HEAD or the working tree changed between the start and the end of the run; null outside a git checkout. */
  changedDuringRun: boolean | null;
  /** sha256 over the built package that ran (every file under dist/ but the tests, and package.json); null when it could not be read. */
  buildDigest?: Digest | null;
  /** True when the build was older than its sources and the run was let go on with --allow-stale-build: such a receipt is not evidence. */
  staleBuild?: boolean;
}

export interface HostFingerprint {
  /** sha256 of a per-project salt, the machine's stable id (/etc/machine-id, IOPlatformUUID on macOS) and its instance id (/var/lib/pdb-env/host-instance) when there is one; never a name or a home path. */
  hostId: string;
  /** Where the machine id came from: machine-id, platform-uuid, or hostname when the OS has neither; +instance when the machine's instance id was hashed with it. */
  hostIdSource: HostIdSource;
  /** os.platform(): linux, darwin, ... */
  os: string;
  /** Kernel release. */
  kernel: string;
  /** CPU architecture (os.arch()). */
  arch: string;
  /** CPU model name. */
  cpuModel: string;
  /** Logical CPU count. */
  cores: number;
  /** Total memory in bytes. */
  memoryBytes: number;
  /** 1, 5 and 15 minute load averages when the run started (os.loadavg()). */
  loadAverage: number[];
  /** Filesystem of the store, from statfs/mount table. */
  storeFs: { type: string; mountOptions: string[] };
  /** Tool versions (node, npm, git, pnpm...), null when absent. */
  tools: Record<string, string | null>;
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

export interface BackendAvailability {
  /** Backend name. */
  name: string;
  /** Whether this host can run it now. */
  available: boolean;
  /** Typed reason (error code) when not available. */
  reason: string | null;
  /** One sentence for people. */
  detail: string;
  /** Experimental until a gate says PROMOTE. */
  experimental: boolean;
  /** Probe evidence (for reflink: a forced clone was made and observed). */
  evidence: Record<string, string | number | boolean | null>;
  /** Declared capabilities of the backend; present only when the probe found it available (an unavailable backend records its reason and no claims). */
  capabilities?: BackendCapabilities;
  /** For a user's own backend loaded from a module: the module file's sha256 (its path is never recorded). */
  module?: { digest: Digest };
}

export interface PhaseRecord {
  /** "create", "checkpoint", "discard", or "step:<name>". */
  name: string;
  /** How the phase ended. */
  outcome: PhaseOutcome;
  /** Monotonic wall time of the phase in milliseconds. */
  durationMs: number;
  /** Exit code of the phase's main process, null when it had none. */
  exitCode: number | null;
  /** Child user CPU time in milliseconds, null when not measured. */
  cpuUserMs: number | null;
  /** Child system CPU time in milliseconds, null when not measured. */
  cpuSystemMs: number | null;
  /** Peak RSS of the phase's main process in bytes, null when not measured. */
  peakRssBytes: number | null;
  /** The phase's own timeout in milliseconds, when it has one. */
  timeoutMs: number | null;
  /** Named timings inside the phase (e.g. firstDiagnosticsMs). */
  milestones: Record<string, number>;
  /** Peak RSS of the harness process itself during the phase in bytes (Linux: VmHWM, reset at the phase's start); null where it is not measured per phase. */
  harnessPeakRssBytes?: number | null;
  /** When the phase started, in monotonic milliseconds since the case started (version 4 on). */
  startMs?: number;
}

/** The case a comparison was made with. */
export interface CheckReference {
  /** The reference case's backend (full-copy for the oracle). */
  backend: string;
  /** The reference case's id, in the same block. */
  caseId: string;
}

/** A count on each side of a comparison: the case's tree and the reference's (null when the reference is a precomputed expectation, which is not read from disk). */
export interface SideCounts {
  /** On the case's side. */
  case: number;
  /** On the reference's side; null when the reference was not read from disk. */
  reference: number | null;
}

/** What a tree comparison covers. */
export type OracleScopeName = 'source' | 'installed' | 'build';

export interface CheckRecord {
  /** "oracle", "expected", "base-unchanged", "sibling-unchanged", "cleanup", or a workload check. */
  name: string;
  /** Whether the check passed; false when it could not be evaluated. */
  passed: boolean;
  /** Whether the check could be evaluated (not when the block's full-copy case failed, or the case's steps did not complete). */
  evaluated: boolean;
  /** Entries that differ, for tree comparisons; null for other checks and when not evaluated. */
  mismatches: number | null;
  /** Differing entries by kind, when a tree comparison found differences. */
  counts: MismatchCounts | null;
  /** The first differing relative paths (at most 10). */
  paths: string[];
  /** The case compared with (the block's full-copy case, for the oracle); null when none. */
  reference: CheckReference | null;
  /** Path-free detail, null when none. */
  detail: string | null;
  /** Tree comparisons (oracle, expected): how many regular files each compared tree holds, after the projection. */
  files?: SideCounts;
  /** Tree comparisons (oracle, expected): how many of those files were hashed from their bytes for this comparison (equal to files when nothing was taken on trust). */
  filesHashed?: SideCounts;
  /** Tree comparisons (oracle, expected): what the comparison covers: source (the Snapshot's files), installed (dependency trees such as node_modules), build (tool output such as dist and .next). */
  scope?: OracleScopeName[];
}

export interface FailureRecord {
  /** Stable error code (E_TIMEOUT, E_ORACLE_MISMATCH, E_CLONE_UNSUPPORTED, ...). */
  code: string;
  /** The phase it happened in. */
  phase: string;
  /** Path-free message. */
  message: string;
}

export interface FixtureRecord {
  /** Path-free fixture name, version included (e.g. fileops@1-2000f-16m). */
  name: string;
  /** The workload the fixture belongs to. */
  workload: string;
  /** The fixture's version (the part of its name after "@"). */
  version: string;
  /** sha256 of the canonical JSON of the workload's effective parameters. */
  paramsDigest: Digest;
  /** Digest of the base Snapshot every case of the fixture starts from. */
  baseSnapshot: Digest;
}

export interface VolatileDrop {
  /** A volatile pattern of the workload (a glob over relative paths). */
  pattern: string;
  /** How many entries of the case's result it dropped. */
  entries: number;
}

export interface ProjectionRecord {
  /** The workload's volatile patterns, in the order they are tried. */
  volatile: string[];
  /** The patterns that dropped entries from the case's result, with how many each dropped (patterns that matched nothing are left out). */
  dropped: VolatileDrop[];
}

export interface CaseRecord {
  /** `b<block>-p<position>`. */
  id: string;
  /** Block index. */
  block: number;
  /** Position in the block's shuffled order. */
  position: number;
  /** Whether the case belongs to a warm-up block. */
  warmup: boolean;
  /** Backend under test. */
  backend: string;
  /** Workload name. */
  workload: string;
  /** UTC time the case started. */
  startedAt: string;
  /** UTC time the case finished (after discard and the cleanup check). */
  finishedAt: string;
  /** The fixture the case ran: workload, version, parameters and base Snapshot. */
  fixture: FixtureRecord;
  /** How the case ended. */
  outcome: CaseOutcome;
  /** The failure that decided the outcome, null when ok. */
  failure: FailureRecord | null;
  /** Every failure of the case: phase errors in the order they happened, then each failed check. */
  failures: FailureRecord[];
  /** Timed phases in order. */
  phases: PhaseRecord[];
  /** Every check of the case. */
  checks: CheckRecord[];
  /** Physical disk growth of the store's filesystem during create (free-space delta after sync). */
  diskBytes: number | null;
  /** For clone backends: whether shared extents were observed; null when not applicable. */
  cloneObserved: boolean | null;
  /** Digest of the checkpoint's result Snapshot, null when none was made. */
  resultSnapshot: Digest | null;
  /** Digest of the projected result the oracle check compared with (the block's full-copy case), null when none. */
  oracleSnapshot: Digest | null;
  /** Digest of this case's own projected result as the oracle read it from its bytes (version 4 on), null when it made none. */
  projectedSnapshot?: Digest | null;
  /** Whole case wall time in milliseconds. */
  wallMs: number;
  /** The part of the case wall time not spent in any phase (harness overhead). */
  overheadMs: number;
  /** Workload metrics (pnpm import method, agent name and version, ...). */
  metrics: Record<string, string | number | boolean>;
  /** What the projection dropped from the case's result before it was compared (volatile patterns and counts); null when the case made no result. */
  projection?: ProjectionRecord | null;
  /** The real agent CLIs the case ran against the scripted model, one per session; absent for other workloads. */
  agents?: AgentRecord[];
}

export interface BlockRecord {
  /** Block index. */
  index: number;
  /** The block's workload. */
  workload: string;
  /** Whether the block is a warm-up block. */
  warmup: boolean;
  /** Backend order after the seeded shuffle. */
  order: string[];
}

export interface ReceiptSummary {
  /** Case slots in the schedule (every block x every plan backend). */
  planned: number;
  /** Cases that ended ok. */
  ok: number;
  /** Cases whose tree differed from their block's full-copy case. */
  mismatch: number;
  /** Cases that failed (pdb-env, the backend or an integrity check). */
  failed: number;
  /** Cases stopped by the registry, a tool, credentials or the network; never counted in rates or gates. */
  environment: number;
  /** Cases killed by their timeout. */
  timeout: number;
  /** Case slots of unavailable backends, and cases of lanes this host cannot run. */
  unavailable: number;
  /** Cases whose oracle check was evaluated (every non-full-copy case whose block's full-copy case ended ok). */
  oracleChecked: number;
  /** Cases whose evaluated oracle check failed. */
  oracleMismatches: number;
  /** Non-full-copy cases whose oracle check could not be evaluated. */
  oracleNotEvaluated: number;
  /** Median share of case wall time not spent in phases. */
  overheadShareMedian: number | null;
  /** Largest share of case wall time not spent in phases. */
  overheadShareMax: number | null;
  /** The same shares per workload, in the order the workloads first appear (version 4 on). */
  overheadByWorkload?: WorkloadOverhead[];
}

export interface WorkloadOverhead {
  /** Workload name. */
  workload: string;
  /** Cases of the workload with a wall time. */
  cases: number;
  /** Median share of case wall time not spent in phases. */
  shareMedian: number;
  /** Largest share of case wall time not spent in phases. */
  shareMax: number;
}

export interface HarnessPhaseMemory {
  /** A run-level phase of the harness: prepare (fixtures and their import), siblings (each block's, made and scanned), oracle (each block's comparisons). */
  name: string;
  /** How many times the phase ran. */
  count: number;
  /** The largest peak RSS of the harness process in one run of the phase, in bytes; null when not measured per phase. */
  peakRssBytes: number | null;
}

export interface HarnessMemory {
  /** How phase peaks were measured: vmhwm-reset (Linux /proc/self/status VmHWM, reset through /proc/self/clear_refs at each phase's start), or none. */
  method: 'vmhwm-reset' | 'none';
  /** Peak RSS of the harness process over its whole life in bytes (getrusage maxrss; this attempt's process only). */
  processMaxRssBytes: number;
  /** The run-level phases, each with its peak RSS. */
  phases: HarnessPhaseMemory[];
}

export interface Receipt {
  /** Receipt schema version: 4 since it carries its plan; 3 since the oracle hashes both trees it compares from their bytes; 2 (written before, read-only) trusted what the checkpoint recorded. */
  schemaVersion: typeof RECEIPT_SCHEMA_VERSION | 3 | 2;
  /** Document kind marker. */
  kind: 'pdb-env-receipt';
  /** The tool that wrote the receipt. */
  tool: { name: 'pdb-env'; version: string };
  /** The code the run ran: commit and state of the checkout at the start, and whether it changed before the end. */
  provenance: Provenance;
  /** Run identifier (UTC start time plus random suffix); --resume takes it. */
  runId: string;
  /** The plan's name. */
  planName: string;
  /** sha256 of the plan's canonical JSON. */
  planDigest: Digest;
  /** The plan as it ran, path-free (its store location left out); its digest is planDigest. Validate replays the schedule from it (version 4 on). */
  plan?: ReceiptPlan;
  /** Seed of the PRNG that shuffled every block; replays the order exactly. */
  seed: number;
  /** UTC time the run started. */
  startedAt: string;
  /** UTC time the receipt was written. */
  finishedAt: string;
  /** Host fingerprint; identifies the machine by a salted hash, never by name. */
  host: HostFingerprint;
  /** Every backend of the plan, probed once at the start of the run. */
  backends: BackendAvailability[];
  /** Every block in run order, with its shuffled backend order. */
  blocks: BlockRecord[];
  /** Every case that ran, including failed and timed-out ones. */
  cases: CaseRecord[];
  /** Counts over all cases. */
  summary: ReceiptSummary;
  /** Memory of the harness process itself: its lifetime peak and the peak of each run-level phase. */
  harness?: HarnessMemory;
}

// ---------------------------------------------------------------------------------------------
// Schema version 1 (read-only): no provenance, four outcomes, the first failure only, the fixture
// as a name, tree checks with counts only, and a commit read when the receipt was written.

export interface CheckRecordV1 {
  name: string;
  passed: boolean;
  mismatches: MismatchCounts | null;
  detail: string | null;
}

export interface CaseRecordV1 extends Omit<
  CaseRecord,
  'startedAt' | 'finishedAt' | 'fixture' | 'outcome' | 'failures' | 'phases' | 'checks'
> {
  fixture: string;
  outcome: 'ok' | 'failed' | 'timeout' | 'unavailable';
  phases: (Omit<PhaseRecord, 'outcome'> & { outcome: 'ok' | 'failed' | 'timeout' | 'unavailable' })[];
  checks: CheckRecordV1[];
}

export interface ReceiptV1 extends Omit<Receipt, 'schemaVersion' | 'tool' | 'provenance' | 'host' | 'backends' | 'cases' | 'summary'> {
  schemaVersion: 1;
  tool: { name: 'pdb-env'; version: string; commit: string | null };
  host: Omit<HostFingerprint, 'hostIdSource' | 'loadAverage'>;
  backends: (Omit<BackendAvailability, 'capabilities'> & { capabilities?: BackendCapabilities })[];
  cases: CaseRecordV1[];
  summary: Omit<ReceiptSummary, 'mismatch' | 'environment' | 'oracleChecked' | 'oracleNotEvaluated'>;
}

/** A receipt of any version the reports read. */
export type AnyReceipt = Receipt | ReceiptV1;
