import { existsSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { lstat, mkdir, open, readdir, readFile, rm, unlink } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { execa } from 'execa';
import { getBackend, probeBackend, type BackendReport } from '../backends/registry.js';
import type { AnyBackendName, Backend, BackendContext, BackendState } from '../backends/types.js';
import { isDigest, type Digest } from '../model/canonical-json.js';
import { PdbError, osErrorCode } from '../model/errors.js';
import { ObjectStore, writeFileAtomic } from '../model/object-store.js';
import { removeTree } from '../model/remove-tree.js';
import { SOURCE_CONFIG, parseStatCache, readSourceConfig, scanTree, serializeStatCache, type ScanResult } from '../model/scan.js';
import { createChangeset, createSnapshot, diffEntries, type Change, type Entry, type Snapshot } from '../model/snapshot.js';
import { Journal, type Intent } from './journal.js';
import { acquireLease, liveLeases } from './lease.js';
import { isProcessAlive, processStartTime } from './process-identity.js';
import { realpathOr, sourceKey } from '../model/paths.js';

export const SESSION_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export type SessionState = 'creating' | 'ready' | 'discarding';

export interface SessionRecord {
  version: 1;
  name: string;
  backend: AnyBackendName;
  /** The Snapshot the session was created from. */
  base: Digest;
  /** Absolute source directory (store-local; never written into receipts). */
  sourceDir: string | null;
  createdAt: string;
  state: SessionState;
  backendState: BackendState;
  lastCheckpoint: { snapshot: Digest; changeset: Digest; at: string } | null;
}

export interface SessionInfo extends SessionRecord {
  root: string;
  /** The current directory is inside this session's root. */
  current: boolean;
}

export interface ImportResult {
  digest: Digest;
  snapshot: Snapshot;
  scan: ScanResult;
}

export interface CreateOptions {
  from?: string;
  /** Create from an environment's head instead of importing the source. */
  env?: string;
  /**
   * Create from a Snapshot already in the store (e.g. the harness's one import per run) instead
   * of importing the source; `from` is still handed to the backend (git-worktree needs it).
   */
  base?: Digest;
  backend?: string;
  allowTestOnly?: boolean;
  /** Test seam: runs after the base is materialized and before the source is re-scanned. */
  afterMaterialize?: () => Promise<void>;
}

export interface CreateResult {
  session: string;
  backend: AnyBackendName;
  base: Digest;
  root: string;
  files: number;
  cloneObserved: boolean | null;
  import: { filesHashed: number; filesTrusted: number; objectsInstalled: number; bytes: number } | null;
}

export interface CheckpointResult {
  session: string;
  base: Digest;
  snapshot: Digest;
  changeset: Digest;
  changes: number;
  files: number;
  bytes: number;
}

export function assertSessionName(name: string): void {
  if (!SESSION_NAME_PATTERN.test(name)) {
    throw new PdbError('E_BAD_NAME', `"${name}" is not a safe session name`, {
      hint: 'Use 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit (no "/", no "..").',
    });
  }
}

export function assertEnvName(name: string): void {
  if (!SESSION_NAME_PATTERN.test(name))
    throw new PdbError('E_BAD_NAME', `"${name}" is not a safe environment name`, { hint: 'Use letters, digits, ".", "_" or "-".' });
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
    return { store: this.store, sourceDir, probeDir: this.store.paths.tmp };
  }

  sessionDir(name: string): string {
    assertSessionName(name);
    return join(this.store.paths.sessions, name);
  }

  sessionRoot(name: string): string {
    return join(this.sessionDir(name), 'root');
  }

  async probe(name: string, sourceDir?: string, allowTestOnly = false): Promise<BackendReport> {
    return probeBackend(getBackend(name, { allowTestOnly }), this.backendContext(sourceDir));
  }

  // ---- import -------------------------------------------------------------------------------

  /** Scan a source directory into the store (installing its bytes) and record its Snapshot. */
  async importSource(sourceDir: string): Promise<ImportResult> {
    const src = resolve(sourceDir);
    const st = await lstat(src).catch(() => null);
    if (!st || !st.isDirectory())
      throw new PdbError('E_SOURCE_MISSING', `source directory ${src} does not exist or is not a directory`, {
        hint: 'Pass --from DIR or run in your project directory.',
      });
    const { excludes } = await readSourceConfig(src);
    const cacheFile = join(this.store.paths.sources, `${sourceKey(src)}.stat-cache.json`);
    const statCache = parseStatCache(await readFile(cacheFile, 'utf8').catch(() => ''));
    const scan = await scanTree(src, { excludes, excludeAbsolute: [this.store.paths.root], store: this.store, statCache });
    const snapshot = createSnapshot(scan.entries, excludes, null);
    const digest = await this.store.putDocument(snapshot);
    await writeFileAtomic(this.store.paths, cacheFile, serializeStatCache(scan.statCache));
    return { digest, snapshot, scan };
  }

  /**
   * The race check of prepare: scan the source again (trusting only the stat signatures the
   * import just recorded) and list what differs from the imported Snapshot. Installs nothing and
   * writes nothing, so a clean check costs two walks, not two imports.
   */
  async sourceChangesSince(sourceDir: string, imported: ImportResult): Promise<Change[]> {
    const src = resolve(sourceDir);
    const { excludes } = await readSourceConfig(src);
    if (excludes.join('\0') !== imported.snapshot.excludes.join('\0')) {
      return [{ path: SOURCE_CONFIG, kind: 'modify', before: null, after: null }];
    }
    const again = await scanTree(src, { excludes, excludeAbsolute: [this.store.paths.root], statCache: imported.scan.statCache });
    return diffEntries(imported.snapshot.entries, again.entries);
  }

  readSnapshot(digest: Digest): Snapshot {
    return this.store.getDocument<Snapshot>(digest);
  }

  // ---- sessions ------------------------------------------------------------------------------

  async readSession(name: string): Promise<SessionRecord> {
    const dir = this.sessionDir(name);
    let text: string;
    try {
      text = await readFile(join(dir, 'session.json'), 'utf8');
    } catch (err) {
      if (osErrorCode(err) === 'ENOENT' || osErrorCode(err) === 'ENOTDIR') {
        throw new PdbError('E_SESSION_NOT_FOUND', `no session named "${name}" in this store`, {
          hint: 'pdb-env list shows the sessions; pdb-env create NAME makes one.',
        });
      }
      throw err;
    }
    return JSON.parse(text) as SessionRecord;
  }

  private async writeSession(rec: SessionRecord): Promise<void> {
    await writeFileAtomic(this.store.paths, join(this.sessionDir(rec.name), 'session.json'), `${JSON.stringify(rec, null, 2)}\n`);
  }

  async list(cwd = process.cwd()): Promise<SessionInfo[]> {
    const here = realpathOr(cwd);
    const out: SessionInfo[] = [];
    for (const name of (await readdir(this.store.paths.sessions).catch(() => [] as string[])).sort()) {
      if (!SESSION_NAME_PATTERN.test(name)) continue;
      const rec = await this.readSession(name).catch(() => null);
      if (!rec) continue;
      const root = this.sessionRoot(name);
      const rel = relative(root, here);
      out.push({ ...rec, root, current: rel === '' || (!rel.startsWith('..') && !rel.startsWith(sep) && !rel.includes(`..${sep}`)) });
    }
    return out;
  }

  async create(name: string, options: CreateOptions = {}): Promise<CreateResult> {
    assertSessionName(name);
    const backend = getBackend(options.backend ?? 'full-copy', { allowTestOnly: options.allowTestOnly });
    if (options.env && options.base) throw new PdbError('E_USAGE', 'create takes --env or --base, not both');
    if (options.base !== undefined && !isDigest(options.base))
      throw new PdbError('E_USAGE', `--base must be a digest like sha256:<64 hex>, got "${options.base}"`);
    const sourceDir = options.env ? null : resolve(options.from ?? process.cwd());
    const ctx = this.backendContext(sourceDir ?? undefined);
    const probe = await probeBackend(backend, ctx);
    if (!probe.available) {
      throw new PdbError('E_BACKEND_UNAVAILABLE', `backend ${backend.name} is not available here: ${probe.detail} (${probe.reason})`, {
        hint: 'pdb-env backends lists what this host can run.',
      });
    }
    const dir = this.sessionDir(name);
    try {
      await mkdir(dir);
    } catch (err) {
      if (osErrorCode(err) === 'EEXIST')
        throw new PdbError('E_SESSION_EXISTS', `a session named "${name}" already exists`, {
          hint: `Pick another name, or pdb-env discard ${name} first.`,
        });
      throw err;
    }
    const intent = await this.journal.begin('create', { session: name, detail: { backend: backend.name } });
    const root = join(dir, 'root');
    let created = false;
    try {
      let base: Digest;
      let snapshot: Snapshot;
      let imported: ImportResult | null = null;
      if (options.env || options.base) {
        base = options.base ?? (await this.envHead(options.env!));
        snapshot = this.readSnapshot(base);
      } else {
        imported = await this.importSource(sourceDir!);
        base = imported.digest;
        snapshot = imported.snapshot;
      }
      const rec: SessionRecord = {
        version: 1,
        name,
        backend: backend.name,
        base,
        sourceDir,
        createdAt: new Date().toISOString(),
        state: 'creating',
        backendState: {},
        lastCheckpoint: null,
      };
      await this.writeSession(rec);
      await backend.materializeBase(ctx, snapshot, base);
      created = true;
      const made = await backend.createSession(ctx, snapshot, base, root, dir);
      rec.backendState = made.state;
      await this.writeSession(rec);
      await options.afterMaterialize?.();
      if (imported) {
        // Prepare is race-checked: the source must still be what was imported.
        const changes = await this.sourceChangesSince(sourceDir!, imported);
        if (changes.length > 0) {
          const changed = changes.slice(0, 5).map((c) => `${c.kind} ${c.path}`);
          throw new PdbError('E_SOURCE_CHANGED', `the source changed while the session was prepared (${changed.join(', ')})`, {
            hint: 'Stop whatever writes into the source and create the session again.',
          });
        }
      }
      rec.state = 'ready';
      await this.writeSession(rec);
      if (imported) await this.initEnv('main', base);
      await this.journal.end(intent);
      return {
        session: name,
        backend: backend.name,
        base,
        root,
        files: made.files ?? snapshot.entries.filter((e) => e.kind === 'file').length,
        cloneObserved: made.cloneObserved ?? null,
        import: imported
          ? {
              filesHashed: imported.scan.filesHashed,
              filesTrusted: imported.scan.filesTrusted,
              objectsInstalled: imported.scan.objectsInstalled,
              bytes: imported.scan.bytes,
            }
          : null,
      };
    } catch (err) {
      // Leave nothing half-made: undo the backend's work and remove the session directory.
      if (created)
        await backend.release(ctx, root, dir, (await this.readSession(name).catch(() => null))?.backendState ?? {}).catch(() => {});
      await removeTree(dir).catch(() => {});
      await this.journal.end(intent);
      throw err;
    }
  }

  async session(name: string): Promise<{ rec: SessionRecord; backend: Backend; root: string; dir: string; ctx: BackendContext }> {
    const rec = await this.readSession(name);
    if (rec.state !== 'ready') {
      throw new PdbError('E_SESSION_BROKEN', `session "${name}" is ${rec.state}, not ready`, {
        hint: 'pdb-env doctor explains; pdb-env gc cleans up; pdb-env discard removes it.',
      });
    }
    const backend = getBackend(rec.backend, { allowTestOnly: true });
    return { rec, backend, root: this.sessionRoot(name), dir: this.sessionDir(name), ctx: this.backendContext(rec.sourceDir ?? undefined) };
  }

  /** The session root, re-activated (re-mounted) if its backend needs it. */
  async path(name: string): Promise<string> {
    const s = await this.session(name);
    await s.backend.resume(s.ctx, s.root, s.dir, s.rec.backendState);
    return s.root;
  }

  /**
   * Run a command in the session root under a shared writer lease, stdio passed through.
   * Returns the child's exit code (128 + signal number when it was killed by a signal).
   */
  async run(
    name: string,
    command: string,
    args: string[],
    options: { stdio?: 'inherit' | 'pipe'; env?: Record<string, string>; purpose?: string } = {},
  ): Promise<{ exitCode: number; stdout?: string; stderr?: string }> {
    const s = await this.session(name);
    await s.backend.resume(s.ctx, s.root, s.dir, s.rec.backendState);
    const lease = await acquireLease(join(s.dir, 'lease'), name, 'writer', options.purpose ?? `run ${command}`);
    try {
      const child = execa(command, args, {
        cwd: s.root,
        stdio: options.stdio ?? 'inherit',
        reject: false,
        env: { ...options.env, PDB_ENV_SESSION: name },
        windowsHide: true,
      });
      const forward = (sig: NodeJS.Signals) => child.kill(sig);
      process.on('SIGINT', forward).on('SIGTERM', forward).on('SIGHUP', forward);
      const result = await child;
      process.off('SIGINT', forward).off('SIGTERM', forward).off('SIGHUP', forward);
      if (result.failed && result.exitCode === undefined && !result.signal) {
        const code = (result.cause as NodeJS.ErrnoException | undefined)?.code;
        throw new PdbError('E_USAGE', `could not start "${command}": ${code ?? result.shortMessage}`, {
          hint: 'Check the command name and PATH.',
        });
      }
      const exitCode = result.exitCode ?? 128 + signalNumber(result.signal);
      return {
        exitCode,
        stdout: typeof result.stdout === 'string' ? result.stdout : undefined,
        stderr: typeof result.stderr === 'string' ? result.stderr : undefined,
      };
    } finally {
      await lease.release();
    }
  }

  private async scanSession(s: { rec: SessionRecord; root: string }, install: boolean): Promise<{ base: Snapshot; scan: ScanResult }> {
    const base = this.readSnapshot(s.rec.base);
    const scan = await scanTree(s.root, { excludes: base.excludes, store: install ? this.store : undefined });
    return { base, scan };
  }

  /** Complete scan of the quiesced session root: installs objects, records Snapshot + Changeset. Publishes nothing. */
  async checkpoint(name: string): Promise<CheckpointResult> {
    const s = await this.session(name);
    await s.backend.resume(s.ctx, s.root, s.dir, s.rec.backendState);
    const lease = await acquireLease(join(s.dir, 'lease'), name, 'exclusive', 'checkpoint');
    const intent = await this.journal.begin('checkpoint', { session: name });
    try {
      const { base, scan } = await this.scanSession(s, true);
      const result = createSnapshot(scan.entries, base.excludes, s.rec.base);
      const snapshot = await this.store.putDocument(result);
      const changes = diffEntries(base.entries, result.entries);
      const changeset = await this.store.putDocument(createChangeset(s.rec.base, snapshot, changes));
      const rec = await this.readSession(name);
      rec.lastCheckpoint = { snapshot, changeset, at: new Date().toISOString() };
      await this.writeSession(rec);
      return {
        session: name,
        base: s.rec.base,
        snapshot,
        changeset,
        changes: changes.length,
        files: scan.entries.filter((e) => e.kind === 'file').length,
        bytes: scan.bytes,
      };
    } finally {
      await this.journal.end(intent);
      await lease.release();
    }
  }

  /** Changes since the base, by relative path (read-only; installs nothing). */
  async diff(name: string): Promise<{ session: string; base: Digest; changes: Change[] }> {
    const s = await this.session(name);
    await s.backend.resume(s.ctx, s.root, s.dir, s.rec.backendState);
    const { base, scan } = await this.scanSession(s, false);
    return { session: name, base: s.rec.base, changes: diffEntries(base.entries, scan.entries) };
  }

  /** Entries of the session root right now (hash only). Used by oracle checks. */
  async scanEntries(name: string): Promise<Entry[]> {
    const s = await this.session(name);
    await s.backend.resume(s.ctx, s.root, s.dir, s.rec.backendState);
    return (await this.scanSession(s, false)).scan.entries;
  }

  /**
   * Remove the named session: only its directory inside `<store>/sessions`, never following a
   * symlink out of it. Succeeds (discarded: false) when it is already gone.
   */
  async discard(name: string, options: { force?: boolean } = {}): Promise<{ session: string; discarded: boolean }> {
    const dir = this.sessionDir(name);
    const st = await lstat(dir).catch(() => null);
    if (!st) return { session: name, discarded: false };
    if (!st.isDirectory()) {
      // A symlink (or file) planted in place of a session: remove the link itself, never its target.
      await unlink(dir);
      return { session: name, discarded: true };
    }
    const rec = await this.readSession(name).catch(() => null);
    const lease = options.force ? null : await acquireLease(join(dir, 'lease'), name, 'exclusive', 'discard');
    const intent = await this.journal.begin('discard', { session: name, detail: { backend: rec?.backend ?? null } });
    try {
      if (rec) {
        rec.state = 'discarding';
        await this.writeSession(rec);
        const backend = getBackend(rec.backend, { allowTestOnly: true });
        await backend.release(this.backendContext(rec.sourceDir ?? undefined), join(dir, 'root'), dir, rec.backendState);
      }
      await removeTree(dir);
    } finally {
      await lease?.release().catch(() => {});
      await this.journal.end(intent);
    }
    return { session: name, discarded: true };
  }

  // ---- environments --------------------------------------------------------------------------

  private envFile(env: string): string {
    assertEnvName(env);
    return join(this.store.paths.environments, `${env}.json`);
  }

  async envHead(env: string): Promise<Digest> {
    try {
      const doc = JSON.parse(await readFile(this.envFile(env), 'utf8')) as { head: Digest };
      return doc.head;
    } catch (err) {
      if (osErrorCode(err) === 'ENOENT')
        throw new PdbError('E_ENV_NOT_FOUND', `no environment named "${env}"`, {
          hint: 'An environment "main" is made by the first pdb-env create from a source.',
        });
      throw err;
    }
  }

  async listEnvs(): Promise<Array<{ name: string; head: Digest }>> {
    const out = [];
    for (const f of (await readdir(this.store.paths.environments).catch(() => [] as string[])).sort()) {
      if (!f.endsWith('.json')) continue;
      const name = f.slice(0, -5);
      out.push({ name, head: await this.envHead(name) });
    }
    return out;
  }

  private async initEnv(env: string, head: Digest): Promise<void> {
    if (existsSync(this.envFile(env))) return;
    await this.withEnvLock(env, async () => {
      if (!existsSync(this.envFile(env))) await this.writeEnv(env, head, null);
    });
  }

  private async writeEnv(env: string, head: Digest, previous: Digest | null): Promise<void> {
    await writeFileAtomic(
      this.store.paths,
      this.envFile(env),
      `${JSON.stringify({ name: env, head, previous, updatedAt: new Date().toISOString() }, null, 2)}\n`,
    );
  }

  private async withEnvLock<T>(env: string, fn: () => Promise<T>): Promise<T> {
    const lock = `${this.envFile(env)}.lock`;
    for (let attempt = 0; ; attempt++) {
      try {
        const fh = await open(lock, 'wx');
        await fh.writeFile(JSON.stringify({ pid: process.pid, pidStart: processStartTime(process.pid) }));
        await fh.close();
        break;
      } catch (err) {
        if (osErrorCode(err) !== 'EEXIST') throw err;
        const holder = JSON.parse(await readFile(lock, 'utf8').catch(() => '{}')) as { pid?: number; pidStart?: string | null };
        if (attempt === 0 && holder.pid && !isProcessAlive(holder.pid, holder.pidStart ?? null)) {
          await unlink(lock).catch(() => {});
          continue;
        }
        throw new PdbError('E_LEASE_BUSY', `environment "${env}" is being updated by process ${holder.pid ?? '?'}`, {
          hint: 'Try again in a moment.',
        });
      }
    }
    try {
      return await fn();
    } finally {
      await unlink(lock).catch(() => {});
    }
  }

  /** Expected-head compare-and-set: advance `env` from `expect` to the session's last checkpoint. */
  async publish(name: string, env: string, expect: string): Promise<{ env: string; previous: Digest; head: Digest }> {
    if (!isDigest(expect))
      throw new PdbError('E_USAGE', `--expect must be a digest like sha256:<64 hex>, got "${expect}"`, {
        hint: 'pdb-env envs shows each head.',
      });
    const rec = await this.readSession(name);
    if (!rec.lastCheckpoint)
      throw new PdbError('E_USAGE', `session "${name}" has no checkpoint to publish`, { hint: `Run pdb-env checkpoint ${name} first.` });
    const head = rec.lastCheckpoint.snapshot;
    return this.withEnvLock(env, async () => {
      const current = await this.envHead(env);
      if (current !== expect) {
        throw new PdbError('E_HEAD_MOVED', `environment "${env}" is at ${current}, not the expected ${expect}`, {
          hint: 'Re-base your work on the new head, then publish with the new --expect.',
        });
      }
      const intent = await this.journal.begin('publish', { session: name, env, detail: { from: current, to: head } });
      await this.writeEnv(env, head, current);
      await this.journal.end(intent);
      return { env, previous: current, head };
    });
  }

  // ---- health --------------------------------------------------------------------------------

  /** What a crash or a reboot left behind. Lists; changes nothing. */
  async doctor(): Promise<Finding[]> {
    const findings: Finding[] = [];
    const intents = await this.journal.list();
    for (const i of intents) {
      if (!i.live)
        findings.push({
          kind: 'abandoned-intent',
          id: i.id,
          session: i.session ?? null,
          detail: `${i.op} started ${i.startedAt} by process ${i.pid}, which is gone`,
          fix: 'gc',
        });
    }
    const liveSessions = new Set(intents.filter((i) => i.live && i.session).map((i) => i.session));
    for (const name of (await readdir(this.store.paths.sessions).catch(() => [] as string[])).sort()) {
      const rec = SESSION_NAME_PATTERN.test(name) ? await this.readSession(name).catch(() => null) : null;
      if (!rec) {
        findings.push({
          kind: 'orphan-session-dir',
          id: name,
          session: name,
          detail: 'a directory without a readable session.json',
          fix: 'gc',
        });
        continue;
      }
      if (rec.state !== 'ready' && !liveSessions.has(name))
        findings.push({ kind: 'unfinished-session', id: name, session: name, detail: `state is ${rec.state}`, fix: 'gc' });
      for (const l of await liveLeases(join(this.sessionDir(name), 'lease')))
        findings.push({
          kind: 'active-lease',
          id: `${name}:${l.pid}`,
          session: name,
          detail: `${l.kind} lease held by live process ${l.pid} (${l.purpose})`,
          fix: null,
        });
    }
    for (const t of await readdir(this.store.paths.tmp).catch(() => [] as string[])) {
      const pid = Number(t.split('-')[1]);
      if (!Number.isInteger(pid) || !isProcessAlive(pid, null))
        findings.push({ kind: 'temp-file', id: t, session: null, detail: 'temporary file of a process that is gone', fix: 'gc' });
    }
    return findings;
  }

  /** Finish or remove what `doctor` found. With dryRun, only report. */
  async gc(options: { dryRun?: boolean } = {}): Promise<{ actions: string[] }> {
    const actions: string[] = [];
    const findings = await this.doctor();
    for (const f of findings) {
      if (f.fix !== 'gc') continue;
      switch (f.kind) {
        case 'abandoned-intent': {
          const intent = (await this.journal.list()).find((i) => i.id === f.id);
          if (intent) actions.push(...(await this.recover(intent, options.dryRun ?? false)));
          break;
        }
        case 'orphan-session-dir':
        case 'unfinished-session':
          actions.push(`remove session ${f.session}`);
          if (!options.dryRun) await this.forceRemoveSession(f.session!);
          break;
        case 'temp-file':
          actions.push(`remove temp ${f.id}`);
          if (!options.dryRun) await rm(join(this.store.paths.tmp, f.id), { recursive: true, force: true });
          break;
        case 'active-lease':
          break;
        default: {
          const never: never = f.kind;
          throw new Error(`unknown finding ${String(never)}`);
        }
      }
    }
    return { actions: [...new Set(actions)] };
  }

  private async recover(intent: Intent, dryRun: boolean): Promise<string[]> {
    const actions: string[] = [];
    switch (intent.op) {
      case 'create':
      case 'discard':
        // A create that never reached "ready" is undone; a discard is finished. Both remove the session.
        if (intent.session) {
          const rec = await this.readSession(intent.session).catch(() => null);
          if (intent.op === 'discard' || !rec || rec.state !== 'ready') {
            actions.push(`remove session ${intent.session} (${intent.op} interrupted)`);
            if (!dryRun) await this.forceRemoveSession(intent.session);
          }
        }
        break;
      case 'checkpoint':
      case 'publish':
        // Objects are immutable and the env head is written atomically: nothing to undo.
        break;
      default: {
        const never: never = intent.op;
        throw new Error(`unknown intent ${String(never)}`);
      }
    }
    actions.push(`drop intent ${intent.id} (${intent.op})`);
    if (!dryRun) await this.journal.remove(intent.id);
    return actions;
  }

  private async forceRemoveSession(name: string): Promise<void> {
    const dir = this.sessionDir(name);
    const rec = await this.readSession(name).catch(() => null);
    if (rec) {
      const backend = getBackend(rec.backend, { allowTestOnly: true });
      await backend.release(this.backendContext(rec.sourceDir ?? undefined), join(dir, 'root'), dir, rec.backendState).catch(() => {});
    }
    const st = await lstat(dir).catch(() => null);
    if (st?.isDirectory()) await removeTree(dir);
    else if (st) await unlink(dir);
  }

  async verify(): Promise<{ checked: number; corrupt: Digest[] }> {
    return this.store.verifyAll();
  }
}

export interface Finding {
  kind: 'abandoned-intent' | 'orphan-session-dir' | 'unfinished-session' | 'temp-file' | 'active-lease';
  id: string;
  session: string | null;
  detail: string;
  /** 'gc' when `pdb-env gc` can finish or remove it. */
  fix: 'gc' | null;
}

function signalNumber(signal: string | undefined): number {
  return (signal && osConstants.signals[signal as NodeJS.Signals]) || 1;
}
