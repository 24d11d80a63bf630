// Create: check the request and the backend, pick or import the base, then (under the store lock)
// write the intent and claim the name, let the backend make the root, race-check the source and
// mark the session ready. The intent comes before anything is created, and every failure after
// it undoes what was made, so a failed or killed create leaves nothing gc cannot explain.
import { lstat, mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { loadBackendModule, moduleBackend } from '../../backends/module.js';
import { getBackend } from '../../backends/registry.js';
import type { AnyBackendName } from '../../backends/table.js';
import type { Backend, BackendContext, CreatedSession } from '../../backends/types.js';
import { isDigest, type Digest } from '../../model/canonical-json.js';
import { crashPoint } from '../../model/crash-point.js';
import { PdbError, isPdbError, osErrorCode, toPdbError } from '../../model/errors.js';
import { writeFileAtomic, type ObjectStore } from '../../model/store/object-store.js';
import type { ProgressFn } from '../../model/progress.js';
import { removeTree } from '../../model/os/remove-tree.js';
import type { Snapshot } from '../../model/snapshot.js';
import { treeIndexPieces } from '../../model/scan/tree-index.js';
import { materializedIndex, recordDirStats, rowStatsFromSigs, snapshotColumns } from '../../model/scan/materialized-index.js';
import { resolveDigestArg } from '../records/digests.js';
import { envHead, headRepair, initEnv } from '../records/environments.js';
import { assertSourceUnchanged, importSource, type ImportResult } from './import.js';
import { openOperation, type Operation } from '../locks/operation.js';
import { forgetProbe, probeOnce } from './probe-cache.js';
import {
  backendContext,
  sessionDir,
  sessionIndexFile,
  writeSession,
  type SessionRecord,
  type StoreContext,
  readSession,
} from '../records/session-record.js';
import { assertSessionName } from '../records/names.js';
import { ensureRuntime } from '../runtime/runtime.js';
import { withStoreLock } from '../locks/store-lock.js';
import { readSourceGit, withBase } from '../way-back/source-git.js';

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
  /** A user's own backend: the module whose default export implements backends/types.ts (backends/module.ts). */
  backendModule?: string;
  allowTestOnly?: boolean;
  /** Test seam: runs after the base is materialized and before the source is re-scanned. */
  afterMaterialize?: () => Promise<void>;
  onProgress?: ProgressFn;
  /** Create from this session's last checkpoint; its source (and git HEAD) become the new session's. */
  fork?: string;
}

export interface CreateResult {
  session: string;
  backend: AnyBackendName;
  base: Digest;
  root: string;
  files: number;
  cloneObserved: boolean | null;
  /** CoW backends: files the session shares with the base (cloned, snapshotted, or in the lower dir) and their logical bytes. */
  cloneCounts: { files: number; bytes: number } | null;
  import: { filesHashed: number; filesTrusted: number; objectsInstalled: number; bytes: number } | null;
}

interface Request {
  name: string;
  backend: Backend;
  /** The module file of a user's own backend and its sha256 (a later process loads only those bytes), null for a built-in one. */
  module: { file: string; digest: string } | null;
  sourceDir: string | null;
  bctx: BackendContext;
  options: CreateOptions;
}

function sessionExists(name: string): PdbError {
  return new PdbError('E_SESSION_EXISTS', `a session named "${name}" already exists`, {
    hint: `Pick another name, or pdb-env discard ${name} first.`,
  });
}

/** Validate the request and probe the backend, before anything is made. */
async function checkRequest(store: ObjectStore, name: string, options: CreateOptions): Promise<Request> {
  assertSessionName(name);
  const module = options.backendModule ? await loadBackendModule(options.backendModule) : null;
  if (module && options.backend && options.backend !== module.backend.name)
    throw new PdbError(
      'E_USAGE',
      `--backend ${options.backend} and --backend-module ${options.backendModule} (backend "${module.backend.name}") disagree`,
      {
        hint: 'Give the module alone: its backend is the one it names.',
      },
    );
  const backend = await getBackend(module?.backend.name ?? options.backend ?? 'full-copy', { allowTestOnly: options.allowTestOnly });
  if (options.env && options.base) throw new PdbError('E_USAGE', 'create takes --env or --base, not both');
  if (options.base !== undefined && !isDigest(options.base))
    throw new PdbError('E_USAGE', `--base must be a digest like sha256:<64 hex>, got "${options.base}"`);
  const sourceDir = options.env ? null : resolve(options.from ?? process.cwd());
  const bctx = backendContext(store, sourceDir ?? undefined);
  const probe = await probeOnce(store, backend, bctx);
  if (!probe.available) {
    throw new PdbError('E_BACKEND_UNAVAILABLE', `backend ${backend.name} is not available here: ${probe.detail} (${probe.reason})`, {
      hint: 'pdb-env backends lists what this host can run.',
    });
  }
  // Early and cheap, so a taken name is not found only after a long import; claimName decides.
  if (await lstat(sessionDir(store, name)).catch(() => null)) throw sessionExists(name);
  // A module backend loaded earlier in this process (a bench's) is recorded by its file too, so a later process can load it.
  const from = module ?? moduleBackend(backend.name);
  return { name, backend, module: from ? { file: from.file, digest: from.digest } : null, sourceDir, bctx, options };
}

/**
 * A Snapshot document; E_USAGE when the digest given names something else (a file object, a
 * Changeset), E_RECORD_CORRUPT when an environment's head does.
 */
function readSnapshot(store: ObjectStore, digest: Digest, env?: string): Snapshot {
  let doc: Snapshot | null = null;
  try {
    doc = store.getDocument<Snapshot>(digest, 'Snapshot');
  } catch (err) {
    if (!env || !isPdbError(err, 'E_USAGE')) throw err;
  }
  if (doc && typeof doc === 'object' && Array.isArray(doc.entries) && Array.isArray(doc.excludes)) return doc;
  if (env)
    throw new PdbError('E_RECORD_CORRUPT', `the head of environment ${env}, ${digest}, is not a Snapshot`, {
      hint: `${headRepair(store, env)} pdb-env doctor lists it.`,
    });
  throw new PdbError('E_USAGE', `${digest} is not a Snapshot`, {
    hint: 'Pass the digest of a Snapshot (pdb-env envs lists heads; checkpoint --json prints a result Snapshot).',
  });
}

/** The base a create starts from; its Snapshot is read only when the backend needs the manifest. */
interface Chosen {
  base: Digest;
  snapshot: () => Snapshot;
  imported: ImportResult | null;
}

/**
 * The base: an environment's head, a Snapshot in the store, or a fresh import of the source. An
 * import only adds immutable objects and the source's tree index (each written atomically), so it
 * runs before the intent: a crash in it leaves nothing half-made, only temp files of a dead owner.
 */
async function chooseBase(store: ObjectStore, req: Request): Promise<Chosen> {
  if (req.options.env || req.options.base) {
    const base = req.options.base ?? (await envHead(store, req.options.env!));
    let snapshot: Snapshot | undefined;
    return {
      base,
      snapshot: () => (snapshot ??= readSnapshot(store, base, req.options.base ? undefined : req.options.env)),
      imported: null,
    };
  }
  const imported = await importSource(store, req.sourceDir!, { onProgress: req.options.onProgress });
  return { base: imported.digest, snapshot: () => imported.snapshot, imported };
}

/** Under the store lock: write the intent, then make the session directory (the name is taken by whoever makes it first). */
async function claimName(ctx: StoreContext, req: Request, base: Digest, op: Operation): Promise<string> {
  const dir = sessionDir(ctx.store, req.name);
  return withStoreLock(ctx.store, `create ${req.name}`, async () => {
    await op.begin({ op: 'create', session: req.name, detail: { backend: req.backend.name, base } });
    crashPoint('create:after-intent');
    try {
      await mkdir(dir);
    } catch (err) {
      await op.finish(); // nothing was made
      if (osErrorCode(err) === 'EEXIST') throw sessionExists(req.name);
      throw toPdbError(err, 'E_IO', { action: 'making the session directory', path: dir });
    }
    crashPoint('create:after-mkdir');
    return dir;
  });
}

function newRecord(
  name: string,
  backend: AnyBackendName,
  base: Digest,
  sourceDir: string | null,
  module: Request['module'],
): SessionRecord {
  return {
    ...(module ? { backendModule: module.file, backendModuleDigest: module.digest } : {}),
    version: 1,
    name,
    backend,
    base,
    sourceDir,
    createdAt: new Date().toISOString(),
    state: 'creating',
    backendState: {},
    lastCheckpoint: null,
  };
}

function createResult(rec: SessionRecord, root: string, chosen: Chosen, made: CreatedSession): CreateResult {
  const imported = chosen.imported;
  return {
    session: rec.name,
    backend: rec.backend,
    base: rec.base,
    root,
    files: made.files ?? chosen.snapshot().entries.filter((e) => e.kind === 'file').length,
    cloneObserved: made.cloneObserved ?? null,
    cloneCounts: made.clone ?? null,
    import: imported
      ? {
          filesHashed: imported.scan.filesHashed,
          filesTrusted: imported.scan.filesTrusted,
          objectsInstalled: imported.scan.objectsInstalled,
          bytes: imported.scan.bytes,
        }
      : null,
  };
}

function isObjectFault(err: unknown): boolean {
  return isPdbError(err, 'E_OBJECT_CORRUPT') || isPdbError(err, 'E_OBJECT_MISSING');
}

/**
 * Let the backend make the base and the root. Every byte is verified on the way out; when an
 * object turns out corrupt (now quarantined) or missing and the base was imported, the source is
 * imported again (which installs those bytes anew, if the source still has them) and the root
 * made once more. Without a source, or when that fails too, the typed error stands.
 */
async function materialize(ctx: StoreContext, req: Request, rec: SessionRecord, dir: string, chosen: Chosen): Promise<CreatedSession> {
  const root = join(dir, 'root');
  const hooks = { onProgress: req.options.onProgress };
  // A verified, materialized base with its marker: the session is made from the marker alone.
  const fast = await req.backend.createFromBase?.(req.bctx, rec.base, root, dir);
  if (fast) {
    crashPoint('create:after-base');
    return fast;
  }
  for (let attempt = 1; ; attempt++) {
    try {
      await req.backend.materializeBase(req.bctx, chosen.snapshot(), rec.base, hooks);
      crashPoint('create:after-base');
      return await req.backend.createSession(req.bctx, chosen.snapshot(), rec.base, root, dir, hooks);
    } catch (err) {
      if (attempt > 1 || !chosen.imported || !isObjectFault(err)) throw err;
      await req.backend.release(req.bctx, root, dir, {}).catch(() => {}); // rollback of a half-made root before the retry
      await removeTree(root);
      // Trust no recorded object this time: the import re-installs what is missing.
      const again = await importSource(ctx.store, req.sourceDir!, { checkObjects: true, onProgress: req.options.onProgress });
      if (again.digest !== rec.base) throw err; // the source moved on: the race check would refuse it anyway
      chosen.imported = again;
    }
  }
}

/** The session's own tree index, from the stat data the backend recorded as it wrote each file. */
async function writeCreateIndex(ctx: StoreContext, rec: SessionRecord, chosen: Chosen, root: string, made: CreatedSession) {
  // Nothing but this create has written into the root yet: the signatures hold from now on.
  const snapshot = chosen.snapshot();
  const stats = made.stats ?? rowStatsFromSigs(snapshot, made.sigs!);
  const c = snapshotColumns(snapshot);
  const rootStat = recordDirStats(root, c, stats);
  const fields = { digest: rec.base, base: snapshot.base, excludes: snapshot.excludes, generation: ctx.store.generation() };
  const index = materializedIndex(c, fields, stats, Date.now(), rootStat);
  await writeFileAtomic(ctx.store.paths, sessionIndexFile(ctx.store, rec.name), treeIndexPieces(index), 0o644, { sync: false });
}

/**
 * The first import makes `main`. A lock on it that stays busy past the wait (a live updater, or an
 * unreadable lock still in its grace period) does not undo a ready session: the next create from
 * a source makes `main` if it still does not exist.
 */
async function makeMain(ctx: StoreContext, base: Digest): Promise<void> {
  await initEnv(ctx.store, 'main', base).catch((err: unknown) => {
    if (!isPdbError(err, 'E_LEASE_BUSY')) throw err;
  });
}

// What a create's options name, resolved before anything is checked: --fork OTHER becomes OTHER's
// last checkpoint as the base and OTHER's source as the source; a short --base digest becomes the
// one Snapshot it names.
export async function resolveCreateOptions(ctx: StoreContext, options: CreateOptions): Promise<CreateOptions> {
  const out = { ...options };
  if (options.fork !== undefined) {
    if (options.env || options.base) throw new PdbError('E_USAGE', 'create takes one of --fork, --env and --base');
    const other = await readSession(ctx.store, options.fork);
    if (!other.lastCheckpoint)
      throw new PdbError('E_USAGE', `session "${options.fork}" has no checkpoint to fork from`, {
        hint: `Run pdb-env checkpoint ${options.fork} first, then create --fork ${options.fork} again.`,
      });
    out.base = other.lastCheckpoint.snapshot;
    out.from = options.from ?? other.sourceDir ?? undefined;
  } else if (options.base !== undefined) out.base = await resolveDigestArg(ctx.store, options.base, '--base');
  return out;
}

/**
 * Import or pick the base, materialize the session, race-check a prepare; the session is ready
 * after. Holds the object writer lease throughout: gc sweeps nothing this create relies on.
 */
export async function createSession(ctx: StoreContext, name: string, given: CreateOptions = {}): Promise<CreateResult> {
  const options = await resolveCreateOptions(ctx, given);
  const req = await checkRequest(ctx.store, name, options);
  const op = await openOperation(ctx, { objects: `create ${name}` });
  try {
    return await createChecked(ctx, req, op);
  } catch (err) {
    if (!isPdbError(err, 'E_SESSION_EXISTS') && !isPdbError(err, 'E_SOURCE_CHANGED')) await forgetProbe(ctx.store, req.backend.name);
    throw err;
  } finally {
    await op.release();
  }
}

async function createChecked(ctx: StoreContext, req: Request, op: Operation): Promise<CreateResult> {
  const { name, options } = req;
  const chosen = await chooseBase(ctx.store, req);
  const dir = await claimName(ctx, req, chosen.base, op);
  const rec = newRecord(name, req.backend.name, chosen.base, req.sourceDir, req.module);
  // export --git commits on the HEAD the source had when it was imported.
  if (chosen.imported) rec.sourceGit = withBase(readSourceGit(req.sourceDir!), chosen.base);
  else if (options.fork) rec.sourceGit = (await readSession(ctx.store, options.fork)).sourceGit ?? null;
  const root = join(dir, 'root');
  try {
    await writeSession(ctx.store, rec);
    crashPoint('create:after-record');
    const made = await materialize(ctx, req, rec, dir, chosen);
    rec.backendState = made.state;
    if (made.index) rec.index = made.index;
    if (made.stats || made.sigs) await writeCreateIndex(ctx, rec, chosen, root, made);
    await writeSession(ctx.store, rec);
    crashPoint('create:after-materialize');
    await options.afterMaterialize?.();
    // Prepare is race-checked: the source must still be what was imported.
    if (chosen.imported) await assertSourceUnchanged(ctx.store, req.sourceDir!, chosen.imported);
    // Its port block and private temp dir (removed with the directory if the create fails).
    await ensureRuntime(ctx.store, name);
    rec.state = 'ready';
    await writeSession(ctx.store, rec);
    crashPoint('create:after-ready');
    if (chosen.imported) await makeMain(ctx, rec.base);
    crashPoint('create:after-env');
    await op.finish();
    return createResult(rec, root, chosen, made);
  } catch (err) {
    // Leave nothing half-made: undo the backend's work and remove the session directory. The
    // rollback's own failures are not the story; if the directory stays, so does the intent, for gc.
    await req.backend.release(req.bctx, root, dir, rec.backendState).catch(() => {});
    if (
      await removeTree(dir).then(
        () => true,
        () => false,
      )
    )
      await op.finish();
    throw toPdbError(err, 'E_INTERNAL', { action: `creating session ${name}` });
  }
}
