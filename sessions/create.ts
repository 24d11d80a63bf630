// Create: check the request and the backend, claim the name, pick or import the base, let the
// backend make the root, race-check the source, mark the session ready. Every failure after the
// name is claimed undoes what was made.
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { getBackend, probeBackend } from '../backends/registry.js';
import type { AnyBackendName, Backend, BackendContext, CreatedSession } from '../backends/types.js';
import { isDigest, type Digest } from '../model/canonical-json.js';
import { PdbError, osErrorCode } from '../model/errors.js';
import type { ObjectStore } from '../model/object-store.js';
import { removeTree } from '../model/remove-tree.js';
import type { Snapshot } from '../model/snapshot.js';
import { envHead, initEnv } from './environments.js';
import { assertSourceUnchanged, importSource, type ImportResult } from './import.js';
import {
  assertSessionName,
  backendContext,
  readSession,
  sessionDir,
  writeSession,
  type SessionRecord,
  type StoreContext,
} from './records.js';

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

/** Validate the request and probe the backend, before anything is made. */
async function checkRequest(
  store: ObjectStore,
  name: string,
  options: CreateOptions,
): Promise<{ backend: Backend; sourceDir: string | null; bctx: BackendContext }> {
  assertSessionName(name);
  const backend = getBackend(options.backend ?? 'full-copy', { allowTestOnly: options.allowTestOnly });
  if (options.env && options.base) throw new PdbError('E_USAGE', 'create takes --env or --base, not both');
  if (options.base !== undefined && !isDigest(options.base))
    throw new PdbError('E_USAGE', `--base must be a digest like sha256:<64 hex>, got "${options.base}"`);
  const sourceDir = options.env ? null : resolve(options.from ?? process.cwd());
  const bctx = backendContext(store, sourceDir ?? undefined);
  const probe = await probeBackend(backend, bctx);
  if (!probe.available) {
    throw new PdbError('E_BACKEND_UNAVAILABLE', `backend ${backend.name} is not available here: ${probe.detail} (${probe.reason})`, {
      hint: 'pdb-env backends lists what this host can run.',
    });
  }
  return { backend, sourceDir, bctx };
}

/** Make the session directory; the name is taken by whoever makes it first. */
async function claimName(store: ObjectStore, name: string): Promise<string> {
  const dir = sessionDir(store, name);
  try {
    await mkdir(dir);
  } catch (err) {
    if (osErrorCode(err) === 'EEXIST')
      throw new PdbError('E_SESSION_EXISTS', `a session named "${name}" already exists`, {
        hint: `Pick another name, or pdb-env discard ${name} first.`,
      });
    throw err;
  }
  return dir;
}

/** The base: an environment's head, a Snapshot in the store, or a fresh import of the source. */
async function chooseBase(
  store: ObjectStore,
  options: CreateOptions,
  sourceDir: string | null,
): Promise<{ base: Digest; snapshot: Snapshot; imported: ImportResult | null }> {
  if (options.env || options.base) {
    const base = options.base ?? (await envHead(store, options.env!));
    return { base, snapshot: store.getDocument<Snapshot>(base), imported: null };
  }
  const imported = await importSource(store, sourceDir!);
  return { base: imported.digest, snapshot: imported.snapshot, imported };
}

function newRecord(name: string, backend: AnyBackendName, base: Digest, sourceDir: string | null): SessionRecord {
  return {
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

function createResult(
  rec: SessionRecord,
  root: string,
  snapshot: Snapshot,
  made: CreatedSession,
  imported: ImportResult | null,
): CreateResult {
  return {
    session: rec.name,
    backend: rec.backend,
    base: rec.base,
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
}

/** Import or pick the base, materialize the session, race-check a prepare; the session is ready after. */
export async function createSession(ctx: StoreContext, name: string, options: CreateOptions = {}): Promise<CreateResult> {
  const { backend, sourceDir, bctx } = await checkRequest(ctx.store, name, options);
  const dir = await claimName(ctx.store, name);
  const intent = await ctx.journal.begin('create', { session: name, detail: { backend: backend.name } });
  const root = join(dir, 'root');
  let created = false;
  try {
    const { base, snapshot, imported } = await chooseBase(ctx.store, options, sourceDir);
    const rec = newRecord(name, backend.name, base, sourceDir);
    await writeSession(ctx.store, rec);
    await backend.materializeBase(bctx, snapshot, base);
    created = true;
    const made = await backend.createSession(bctx, snapshot, base, root, dir);
    rec.backendState = made.state;
    await writeSession(ctx.store, rec);
    await options.afterMaterialize?.();
    // Prepare is race-checked: the source must still be what was imported.
    if (imported) await assertSourceUnchanged(ctx.store, sourceDir!, imported);
    rec.state = 'ready';
    await writeSession(ctx.store, rec);
    if (imported) await initEnv(ctx.store, 'main', base);
    await ctx.journal.end(intent);
    return createResult(rec, root, snapshot, made, imported);
  } catch (err) {
    // Leave nothing half-made: undo the backend's work and remove the session directory.
    if (created)
      await backend.release(bctx, root, dir, (await readSession(ctx.store, name).catch(() => null))?.backendState ?? {}).catch(() => {});
    await removeTree(dir).catch(() => {});
    await ctx.journal.end(intent);
    throw err;
  }
}
