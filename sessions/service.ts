// The session service: one facade over the store's modules (records, import, create, session
// operations, environments, recovery). The CLI, the harness, scripts and tests call this class.
// Each operation loads its module when it is first called, so a command loads only what it uses:
// `pdb-env list` needs the records and the journal, not the backends, the scanner or gc.
import type { BackendReport } from '../backends/registry.js';
import type { BackendContext } from '../backends/types.js';
import type { Digest } from '../model/canonical-json.js';
import { ObjectStore } from '../model/store/object-store.js';
import type { ProgressFn } from '../model/progress.js';
import type { Change, Entry, Snapshot } from '../model/snapshot.js';
import type { CheckpointOptions, CheckpointResult } from './lifecycle/checkpoint.js';
import type { Checkpoint, CheckpointDiff } from './history/log.js';
import type { RestoreResult } from './history/restore.js';
import type { ExportPatchResult, PatchFormat } from './way-back/patch.js';
import type { ApplyResult } from './way-back/apply/apply.js';
import type { ExportGitResult } from './way-back/export-git.js';
import type { CreateOptions, CreateResult } from './lifecycle/create.js';
import type { Finding } from './health/doctor.js';
import type { GcResult } from './health/gc.js';
import type { ImportOptions, ImportResult } from './lifecycle/import.js';
import type { VerifyResult } from './health/integrity.js';
import { Journal } from './records/journal.js';
import {
  backendContext,
  listSessions,
  readSession,
  sessionDir,
  sessionRoot,
  type SessionInfo,
  type SessionRecord,
} from './records/session-record.js';
import type { RunOptions } from './lifecycle/run.js';
import type { OpenSession } from './lifecycle/open.js';
import type { PsResult } from './runtime/control.js';
import type { DuResult } from './health/du.js';
import type { CachedUsage } from './health/usage-cache.js';

export { SESSION_NAME_PATTERN, assertEnvName, assertSessionName } from './records/names.js';
export type { DamagedSession, SessionInfo, SessionRecord, SessionState } from './records/session-record.js';
export type { ImportOptions, ImportResult } from './lifecycle/import.js';
export type { CreateOptions, CreateResult } from './lifecycle/create.js';
export type { RunOptions } from './lifecycle/run.js';
export type { OpenSession } from './lifecycle/open.js';
export type { CheckpointOptions, CheckpointResult } from './lifecycle/checkpoint.js';
export type { Checkpoint, CheckpointDiff, ResolvedRef } from './history/log.js';
export type { RestoreResult } from './history/restore.js';
export type { ExportPatchResult, PatchFormat } from './way-back/patch.js';
export type { ApplyResult } from './way-back/apply/apply.js';
export type { ExportGitResult } from './way-back/export-git.js';
export type { Finding, FindingKind } from './health/doctor.js';
export type { GcResult } from './health/gc.js';
export type { PsEntry, PsResult } from './runtime/control.js';
export type { ObjectProblem, VerifyResult } from './health/integrity.js';
export type { BaseDiskUsage, DuResult, SessionDiskUsage, StoreDiskUsage } from './health/du.js';
export type { CachedUsage } from './health/usage-cache.js';

/** A listed session's runtime: its port block and private temp dir (null: none allocated yet); its last `du`. */
export interface SessionPorts {
  ports: number[] | null;
  tmpDir: string | null;
  /** The figures of its last `pdb-env du` (null: never measured); list never measures. */
  usage: CachedUsage | null;
}

/** The session lifecycle over one store: create, run, checkpoint, diff, publish, discard, doctor, gc. */
export class SessionService {
  readonly journal: Journal;

  constructor(readonly store: ObjectStore) {
    this.journal = new Journal(store.paths);
  }

  static async open(storeDir: string, options: { create?: boolean } = {}): Promise<SessionService> {
    const store = options.create ? await ObjectStore.init(storeDir) : ObjectStore.open(storeDir);
    return new SessionService(store);
  }

  backendContext(sourceDir?: string): BackendContext {
    return backendContext(this.store, sourceDir);
  }

  sessionDir(name: string): string {
    return sessionDir(this.store, name);
  }

  sessionRoot(name: string): string {
    return sessionRoot(this.store, name);
  }

  async probe(name: string, sourceDir?: string, allowTestOnly = false): Promise<BackendReport> {
    const { getBackend, probeBackend } = await import('../backends/registry.js');
    return probeBackend(await getBackend(name, { allowTestOnly }), this.backendContext(sourceDir));
  }

  // ---- import

  /** Scan a source directory into the store (installing its bytes) and record its Snapshot. */
  async importSource(sourceDir: string, options: ImportOptions = {}): Promise<ImportResult> {
    const [{ openOperation }, { importSource }] = await Promise.all([import('./locks/operation.js'), import('./lifecycle/import.js')]);
    const op = await openOperation(this, { objects: 'import' });
    try {
      return await importSource(this.store, sourceDir, options);
    } finally {
      await op.release();
    }
  }

  /** The race check of prepare: what differs in the source from the imported Snapshot (writes nothing). */
  async sourceChangesSince(sourceDir: string, imported: ImportResult): Promise<Change[]> {
    return (await import('./lifecycle/import.js')).sourceChangesSince(this.store, sourceDir, imported);
  }

  readSnapshot(digest: Digest): Snapshot {
    return this.store.getDocument<Snapshot>(digest);
  }

  // ---- sessions

  readSession(name: string): Promise<SessionRecord> {
    return readSession(this.store, name);
  }

  /** Every session, damaged ones included (state "damaged", with why). */
  async list(cwd = process.cwd()): Promise<Array<SessionInfo & SessionPorts>> {
    const creating = (await this.journal.list()).filter((i) => i.live && i.op === 'create' && i.session).map((i) => i.session!);
    const sessions = await listSessions(this.store, cwd, new Set(creating));
    const [{ readRuntime }, { readUsageCache }] = await Promise.all([import('./runtime/runtime.js'), import('./health/usage-cache.js')]);
    return Promise.all(
      sessions.map(async (s) => {
        const rt = await readRuntime(this.store, s.name);
        const usage = s.state === 'damaged' ? null : await readUsageCache(this.store, s.name, s.createdAt);
        return { ...s, ports: rt?.ports ?? null, tmpDir: rt?.tmpDir ?? null, usage };
      }),
    );
  }

  async create(name: string, options: CreateOptions = {}): Promise<CreateResult> {
    return (await import('./lifecycle/create.js')).createSession(this, name, options);
  }

  /** A ready session with its backend; E_SESSION_BROKEN when it is not ready. */
  async session(name: string): Promise<OpenSession> {
    return (await import('./lifecycle/open.js')).openSession(this, name);
  }

  /** The session root, re-activated (re-mounted) if its backend needs it. */
  async path(name: string): Promise<string> {
    return (await (await import('./lifecycle/open.js')).resumeSession(this, name)).root;
  }

  /** Run a command in the session root under a shared writer lease; 128 + signal number when killed. */
  async run(
    name: string,
    command: string,
    args: string[],
    options: RunOptions = {},
  ): Promise<{ exitCode: number; stdout?: string; stderr?: string }> {
    return (await import('./lifecycle/run.js')).runInSession(this, name, command, args, options);
  }

  /**
   * Complete scan of the quiesced session root: installs objects, records Snapshot + Changeset.
   * Publishes nothing. Files whose stat signature is unchanged keep their digest (git's rule);
   * `verify` re-hashes every file.
   */
  async checkpoint(name: string, options: CheckpointOptions = {}): Promise<CheckpointResult> {
    return (await import('./lifecycle/checkpoint.js')).checkpointSession(this, name, options);
  }

  /** The session's checkpoints, oldest first, numbered from 1 (label, counts, restoredFrom; collected ones marked). */
  async log(name: string): Promise<{ session: string; base: Digest; checkpoints: Checkpoint[] }> {
    return (await import('./history/log.js')).sessionLog(this, name);
  }

  /**
   * Make the session root exactly the Snapshot REF names (a checkpoint number, a digest prefix,
   * `base`), after a checkpoint of the tree as it was; crash-safe (gc finishes it).
   */
  async restore(name: string, to: string, options: { onProgress?: ProgressFn; caller?: number } = {}): Promise<RestoreResult> {
    return (await import('./history/restore.js')).restoreSession(this, name, to, options);
  }

  /** The changes between two checkpoints (REFs) of a session (read-only). */
  async diffCheckpoints(name: string, from: string, to: string): Promise<CheckpointDiff> {
    return (await import('./history/log.js')).diffCheckpoints(this, name, from, to);
  }

  /** Changes since the base, by relative path (read-only; installs nothing). */
  async diff(name: string, options: CheckpointOptions = {}): Promise<{ session: string; base: Digest; changes: Change[] }> {
    return (await import('./lifecycle/checkpoint.js')).diffSession(this, name, options);
  }

  /** The changes since the base as git's patch (or its --stat), made by git from a private object database. */
  async diffPatch(name: string, format: PatchFormat, options: CheckpointOptions = {}): Promise<Buffer> {
    const [{ diffSession }, { resumeSession }, { makePatch }] = await Promise.all([
      import('./lifecycle/checkpoint.js'),
      import('./lifecycle/open.js'),
      import('./way-back/patch.js'),
    ]);
    const d = await diffSession(this, name, options);
    const { root } = await resumeSession(this, name);
    return makePatch(this, { session: name, base: d.base, result: null, changes: d.changes, root }, format, options.onProgress);
  }

  /** The last checkpoint's changes as a git binary patch in `file` (written atomically). */
  async exportPatch(name: string, file: string, options: { onProgress?: ProgressFn } = {}): Promise<ExportPatchResult> {
    return (await import('./way-back/patch.js')).exportPatch(this, name, file, options.onProgress);
  }

  /** The last checkpoint as a commit on a branch of the source repository (plumbing only; the user's tree, index and HEAD untouched). */
  async exportGit(name: string, options: { branch?: string; message?: string; onProgress?: ProgressFn } = {}): Promise<ExportGitResult> {
    return (await import('./way-back/export-git.js')).exportGit(this, name, options);
  }

  /** Write the last checkpoint's changes into `to` (default: the source), compare-and-set per path; staged and journaled. */
  async apply(name: string, options: { to?: string; onProgress?: ProgressFn } = {}): Promise<ApplyResult> {
    return (await import('./way-back/apply/apply.js')).applySession(this, name, options);
  }

  /** Entries of the session root right now (hash only). Used by oracle checks. */
  async scanEntries(name: string): Promise<Entry[]> {
    return (await import('./lifecycle/run.js')).scanSessionEntries(this, name);
  }

  /** Remove only the session's directory, never following a symlink out; discarded: false when already gone. */
  async discard(name: string, options: { force?: boolean } = {}): Promise<{ session: string; discarded: boolean }> {
    return (await import('./lifecycle/discard.js')).discardSession(this, name, options);
  }

  /**
   * Each session's true disk cost (bytes only it holds, bytes it shares with its base or other
   * sessions), measured by its backend, and the store's (objects, bases, what gc would free).
   */
  async du(name?: string): Promise<DuResult> {
    return (await import('./health/du.js')).du(this, name);
  }

  // ---- runtime

  /** The live processes the session's runs started: pid, command, age, listening ports. */
  async ps(name: string): Promise<PsResult> {
    return (await import('./runtime/control.js')).psSession(this.store, name);
  }

  /** TERM everything the session's runs started, then KILL after `graceMs` (default 5000). */
  async stop(name: string, options: { graceMs?: number } = {}): Promise<{ session: string; stopped: number[] }> {
    return (await import('./runtime/control.js')).stopSession(this.store, name, options.graceMs);
  }

  // ---- environments

  async envHead(env: string): Promise<Digest> {
    return (await import('./records/environments.js')).envHead(this.store, env);
  }

  async listEnvs(): Promise<Array<{ name: string; head: Digest }>> {
    return (await import('./records/environments.js')).listEnvs(this.store);
  }

  /** Expected-head compare-and-set onto the checkpoint's own base (E_STALE_BASE), or merged onto `expect` with `rebase`. */
  async publish(
    name: string,
    env: string,
    expect: string,
    options: { rebase?: boolean } = {},
  ): Promise<{ env: string; previous: Digest; head: Digest; rebased?: true }> {
    return (await import('./way-back/publish.js')).publish(this, name, env, expect, options);
  }

  // ---- health

  /** What a crash, a reboot or damage left behind, each with its fix. Lists; changes nothing. */
  async doctor(): Promise<Finding[]> {
    return (await import('./health/doctor.js')).doctor(this);
  }

  /**
   * Finish or remove what `doctor` found, safely next to live work; then sweep the objects and
   * materialized bases no root reaches. With dryRun, only report (with the bytes it would free).
   */
  async gc(options: { dryRun?: boolean } = {}): Promise<GcResult> {
    return (await import('./health/gc.js')).gc(this, options);
  }

  /** Keep `digest` (and all it reaches) through every gc until unpinned. */
  async pin(digest: string): Promise<{ digest: Digest; pinned: true }> {
    return (await import('./health/pins.js')).pin(this.store, digest);
  }

  async unpin(digest: string): Promise<{ digest: Digest; wasPinned: boolean }> {
    return (await import('./health/pins.js')).unpin(this.store, digest);
  }

  async pins(): Promise<Digest[]> {
    return (await import('./health/pins.js')).listPins(this.store);
  }

  /** Re-hash every object (corrupt ones go to the quarantine) and list what reachable documents miss. */
  async verify(): Promise<VerifyResult> {
    return (await import('./health/integrity.js')).verifyStore(this);
  }
}
