// The backend contract, types only. Each backend is one file that imports these types and never
// another backend; the table in ./table.ts is the one place that names them all.
import type { Digest } from '../model/canonical-json.js';
import type { PdbErrorCode } from '../model/errors.js';
import type { ObjectStore } from '../model/store/object-store.js';
import type { ProgressFn } from '../model/progress.js';
import type { Snapshot } from '../model/snapshot.js';
import type { ChangedPaths, LeftOut } from '../model/scan/changed-paths.js';
import type { RowStats } from '../model/scan/materialized-index.js';

/** What a backend can do in principle; `probe()` says whether this host allows it now. */
export interface Capabilities {
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

export interface ProbeResult {
  available: boolean;
  /** The typed reason when not available. */
  reason: PdbErrorCode | null;
  /** One sentence for people. */
  detail: string;
  /** What the probe did and saw (for reflink: a forced clone was made and observed). */
  evidence: Record<string, string | number | boolean | null>;
}

export interface BackendContext {
  store: ObjectStore;
  /** The source directory the base came from (git-worktree needs the repository). */
  sourceDir?: string;
  /** Scratch directory on the store's filesystem for probes. */
  probeDir: string;
}

/** What a backend remembers about one session, stored in session.json. Plain JSON. */
export type BackendState = Record<string, string | number | boolean | null>;

export interface CreatedSession {
  state: BackendState;
  /** Files cloned or copied, for receipts. */
  files?: number;
  /** For clone backends: was sharing observed on a sample of files. */
  cloneObserved?: boolean | null;
  /** For CoW backends: how many files the session shares with the base (cloned, snapshotted, or lower), and their bytes. */
  clone?: { files: number; bytes: number } | null;
  /** A tree index (store-relative path) that describes the new root as made: the materialized base's. */
  index?: string | null;
  /** Each file's stat signature as it was written, by relative path (a copy or clone): the root's tree index. */
  sigs?: ReadonlyMap<string, string>;
  /** The same as stat data by row of the Snapshot's columns (model/scan/materialized-index.ts): what a byte copy records, with no string per file. */
  stats?: RowStats;
}

/** How a session's bytes were measured: allocated blocks (st_blocks) or extents (FIEMAP's shared flag). */
export type UsageMethod = 'st_blocks' | 'fiemap';

/** The physical bytes of a tree, split by whether anything outside it holds them too. */
export interface TreeUsage {
  /** Bytes only this tree holds: st_blocks * 512, or the lengths of extents FIEMAP does not flag shared. */
  exclusiveBytes: number;
  /** Bytes it holds with something else (shared extents, each physical range once; files hard-linked from outside). */
  sharedBytes: number;
  /** btrfs file data kept inline in metadata: FIEMAP cannot say whether it is shared, so it is in neither figure. */
  inlineBytes: number;
  /** Regular files measured. */
  files: number;
  method: UsageMethod;
}

/** A session's disk cost as its backend measured it. */
export interface MeasuredUsage extends TreeUsage {
  measured: true;
  /** Entries of the session directory this covers (root, an overlay's upper and work); the caller measures the rest as the session's own. */
  covered: string[];
  /** One sentence for people: what was measured and how. */
  detail: string;
}

/** A backend that cannot measure says why, with a typed reason; it never guesses. */
export interface UnmeasuredUsage {
  measured: false;
  reason: PdbErrorCode;
  detail: string;
}

export type SessionUsage = MeasuredUsage | UnmeasuredUsage;

/** Measurements of trees several sessions share (a base), kept for one `du` run, by path. */
export type UsageMemo = Map<string, Promise<TreeUsage>>;

/** What a long create may report while it runs. */
export interface BackendHooks {
  onProgress?: ProgressFn;
}

export interface Backend {
  /** A name in ./table.ts, or the one a user's module declares (the table's AnyBackendName). */
  readonly name: string;
  readonly experimental: boolean;
  readonly testOnly: boolean;
  readonly capabilities: Capabilities;
  /** One line for `pdb-env backends`. */
  readonly summary: string;
  probe(ctx: BackendContext): Promise<ProbeResult>;
  /** Make the base ready for sessions (idempotent; may be a no-op). */
  materializeBase(ctx: BackendContext, snapshot: Snapshot, digest: Digest, hooks?: BackendHooks): Promise<void>;
  /** Create the session root at `root` (which does not exist yet) holding exactly `snapshot`. */
  createSession(
    ctx: BackendContext,
    snapshot: Snapshot,
    digest: Digest,
    root: string,
    sessionDir: string,
    hooks?: BackendHooks,
  ): Promise<CreatedSession>;
  /**
   * Create the session from the verified, materialized base of `digest` when its marker is there,
   * reading only the marker, never the manifest (so the cost does not grow with the tree). Null
   * when there is no marked base yet: the caller then reads the Snapshot and calls createSession.
   */
  createFromBase?(ctx: BackendContext, digest: Digest, root: string, sessionDir: string): Promise<CreatedSession | null>;
  /** Make an existing session usable again (re-mount after reboot). No-op when already active. */
  resume(ctx: BackendContext, root: string, sessionDir: string, state: BackendState): Promise<void>;
  /**
   * The session's physical disk cost: bytes only it holds, bytes it shares with its base or other
   * sessions. Measured, never estimated; a backend without it is reported unmeasured.
   */
  usage?(ctx: BackendContext, root: string, sessionDir: string, state: BackendState, memo?: UsageMemo): Promise<SessionUsage>;
  /**
   * What can differ from the base in the session root, from the backend's own record of it (an
   * overlay's upper directory), so that a checkpoint lstats only that (model/scan/changed-paths.ts);
   * `skip` is what the scan leaves out, whose subtrees need not be listed. Absent, or `paths: null` with the reason: the walk is whole.
   */
  changedPaths?(ctx: BackendContext, root: string, sessionDir: string, state: BackendState, skip: LeftOut): Promise<ChangedPaths>;
  /** Undo what createSession did outside plain files (unmount, delete subvolume, prune worktree). */
  release(ctx: BackendContext, root: string, sessionDir: string, state: BackendState): Promise<void>;
}
