// The session service: one facade over the store's modules (records, import, create, session
// operations, environments, recovery). The CLI, the harness, scripts and tests call this class.
import { getBackend, probeBackend, type BackendReport } from '../backends/registry.js';
import type { BackendContext } from '../backends/types.js';
import type { Digest } from '../model/canonical-json.js';
import { ObjectStore } from '../model/object-store.js';
import type { Change, Entry, Snapshot } from '../model/snapshot.js';
import { createSession, type CreateOptions, type CreateResult } from './create.js';
import { envHead, listEnvs, publish } from './environments.js';
import { importSource, sourceChangesSince, type ImportResult } from './import.js';
import { discardSession } from './discard.js';
import { doctor, type Finding } from './doctor.js';
import { gc, type GcResult } from './gc.js';
import { verifyStore, type VerifyResult } from './integrity.js';
import { Journal } from './journal.js';
import { backendContext, listSessions, readSession, sessionDir, sessionRoot, type SessionInfo, type SessionRecord } from './records.js';
import {
  checkpointSession,
  diffSession,
  openSession,
  resumeSession,
  runInSession,
  scanSessionEntries,
  type CheckpointResult,
  type OpenSession,
  type RunOptions,
} from './session-ops.js';

export { SESSION_NAME_PATTERN, assertEnvName, assertSessionName } from './records.js';
export type { DamagedSession, SessionInfo, SessionRecord, SessionState } from './records.js';
export type { ImportResult } from './import.js';
export type { CreateOptions, CreateResult } from './create.js';
export type { CheckpointResult, OpenSession, RunOptions } from './session-ops.js';
export type { Finding, FindingKind } from './doctor.js';
export type { GcResult } from './gc.js';
export type { ObjectProblem, VerifyResult } from './integrity.js';

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
    return probeBackend(getBackend(name, { allowTestOnly }), this.backendContext(sourceDir));
  }

  // ---- import

  /** Scan a source directory into the store (installing its bytes) and record its Snapshot. */
  importSource(sourceDir: string): Promise<ImportResult> {
    return importSource(this.store, sourceDir);
  }

  /** The race check of prepare: what differs in the source from the imported Snapshot (writes nothing). */
  sourceChangesSince(sourceDir: string, imported: ImportResult): Promise<Change[]> {
    return sourceChangesSince(this.store, sourceDir, imported);
  }

  readSnapshot(digest: Digest): Snapshot {
    return this.store.getDocument<Snapshot>(digest);
  }

  // ---- sessions

  readSession(name: string): Promise<SessionRecord> {
    return readSession(this.store, name);
  }

  /** Every session, damaged ones included (state "damaged", with why). */
  async list(cwd = process.cwd()): Promise<SessionInfo[]> {
    const creating = (await this.journal.list()).filter((i) => i.live && i.op === 'create' && i.session).map((i) => i.session!);
    return listSessions(this.store, cwd, new Set(creating));
  }

  create(name: string, options: CreateOptions = {}): Promise<CreateResult> {
    return createSession(this, name, options);
  }

  /** A ready session with its backend; E_SESSION_BROKEN when it is not ready. */
  session(name: string): Promise<OpenSession> {
    return openSession(this, name);
  }

  /** The session root, re-activated (re-mounted) if its backend needs it. */
  async path(name: string): Promise<string> {
    return (await resumeSession(this, name)).root;
  }

  /** Run a command in the session root under a shared writer lease; 128 + signal number when killed. */
  run(
    name: string,
    command: string,
    args: string[],
    options: RunOptions = {},
  ): Promise<{ exitCode: number; stdout?: string; stderr?: string }> {
    return runInSession(this, name, command, args, options);
  }

  /** Complete scan of the quiesced session root: installs objects, records Snapshot + Changeset. Publishes nothing. */
  checkpoint(name: string): Promise<CheckpointResult> {
    return checkpointSession(this, name);
  }

  /** Changes since the base, by relative path (read-only; installs nothing). */
  diff(name: string): Promise<{ session: string; base: Digest; changes: Change[] }> {
    return diffSession(this, name);
  }

  /** Entries of the session root right now (hash only). Used by oracle checks. */
  scanEntries(name: string): Promise<Entry[]> {
    return scanSessionEntries(this, name);
  }

  /** Remove only the session's directory, never following a symlink out; discarded: false when already gone. */
  discard(name: string, options: { force?: boolean } = {}): Promise<{ session: string; discarded: boolean }> {
    return discardSession(this, name, options);
  }

  // ---- environments

  envHead(env: string): Promise<Digest> {
    return envHead(this.store, env);
  }

  listEnvs(): Promise<Array<{ name: string; head: Digest }>> {
    return listEnvs(this.store);
  }

  /** Expected-head compare-and-set: advance `env` from `expect` to the session's last checkpoint. */
  publish(name: string, env: string, expect: string): Promise<{ env: string; previous: Digest; head: Digest }> {
    return publish(this, name, env, expect);
  }

  // ---- health

  /** What a crash, a reboot or damage left behind, each with its fix. Lists; changes nothing. */
  doctor(): Promise<Finding[]> {
    return doctor(this);
  }

  /** Finish or remove what `doctor` found, safely next to live work. With dryRun, only report. */
  gc(options: { dryRun?: boolean } = {}): Promise<GcResult> {
    return gc(this, options);
  }

  /** Re-hash every object (corrupt ones go to the quarantine) and list what reachable documents miss. */
  verify(): Promise<VerifyResult> {
    return verifyStore(this);
  }
}
