// The runtime layer of a session: what a process started in it needs besides its files. Each
// session owns a block of ports and a private temp dir outside its root, recorded in
// `<store>/sessions/NAME/runtime.json` next to session.json. The block is taken under the store
// lock, so no two sessions of a store ever hold the same port; it is released with the session
// directory at discard (the file goes with it), as is the temp dir.
import { lstat, mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PdbError, osErrorCode, toPdbError } from '../../model/errors.js';
import { writeFileAtomic, type ObjectStore } from '../../model/store/object-store.js';
import { sessionDamaged, sessionDir, sessionRoot } from '../records/session-record.js';
import { SESSION_NAME_PATTERN } from '../records/names.js';
import { withStoreLock } from '../locks/store-lock.js';
import { allocatePortBlock, portConfig, type PortProbe } from './ports.js';
import { ensureGitStop, gitCeiling } from './git-stop.js';

export interface SessionRuntime {
  version: 1;
  /** The session's ports, consecutive; the first is PORT. */
  ports: number[];
  /** The private temp dir (TMPDIR, TMP, TEMP), outside the root. */
  tmpDir: string;
}

export function runtimeFile(store: ObjectStore, name: string): string {
  return join(sessionDir(store, name), 'runtime.json');
}

export function sessionTmpDir(store: ObjectStore, name: string): string {
  return join(sessionDir(store, name), 'tmp');
}

function isRuntime(doc: unknown): doc is SessionRuntime {
  const r = doc as Partial<SessionRuntime> | null;
  return (
    !!r &&
    r.version === 1 &&
    Array.isArray(r.ports) &&
    r.ports.length > 0 &&
    r.ports.every((p) => Number.isInteger(p) && p > 0 && p < 65536) &&
    typeof r.tmpDir === 'string'
  );
}

/** The session's runtime record, or null when it has none yet (a session made before ports existed) or it is unreadable. */
export async function readRuntime(store: ObjectStore, name: string): Promise<SessionRuntime | null> {
  try {
    const doc: unknown = JSON.parse(await readFile(runtimeFile(store, name), 'utf8'));
    return isRuntime(doc) ? doc : null;
  } catch {
    return null; // missing or half-written: ensureRuntime makes it again under the store lock
  }
}

/** Every port a session of this store holds. */
async function portsInUse(store: ObjectStore, except: string): Promise<Set<number>> {
  const taken = new Set<number>();
  for (const name of await readdir(store.paths.sessions).catch(() => [] as string[])) {
    if (name === except || !SESSION_NAME_PATTERN.test(name)) continue;
    for (const p of (await readRuntime(store, name))?.ports ?? []) taken.add(p);
  }
  return taken;
}

/** The private temp dir: made when missing; a link (or file) in its place is E_SESSION_DAMAGED, never followed. */
async function ensureTmpDir(store: ObjectStore, name: string, tmpDir: string): Promise<void> {
  const st = await lstat(tmpDir).catch(() => null);
  if (st?.isDirectory()) return;
  if (st) throw sessionDamaged(store, name, 'temp dir', tmpDir);
  await mkdir(tmpDir, { mode: 0o700 }).catch((err: unknown) => {
    if (osErrorCode(err) !== 'EEXIST') throw toPdbError(err, 'E_IO', { action: `making the temp dir of session ${name}`, path: tmpDir });
  });
}

/**
 * The session's runtime, made on first need: a port block allocated under the store lock, the
 * private temp dir and the marker where git's discovery stops. Idempotent; a session that already
 * has one keeps its ports.
 */
export async function ensureRuntime(store: ObjectStore, name: string, probe?: PortProbe): Promise<SessionRuntime> {
  const have = await readRuntime(store, name);
  const tmpDir = sessionTmpDir(store, name);
  await ensureGitStop(sessionDir(store, name)); // a session made before the marker existed gets it at its next run
  if (have) {
    await ensureTmpDir(store, name, tmpDir); // tmp cleaners may remove an empty one
    return { ...have, tmpDir }; // the store's own path, whatever the record says (a moved store, an edited record)
  }
  return withStoreLock(store, `ports for ${name}`, async () => {
    const again = await readRuntime(store, name);
    if (again) return again;
    const ports = await allocatePortBlock(await portsInUse(store, name), store.paths.root, portConfig(), probe);
    await ensureTmpDir(store, name, tmpDir);
    const rt: SessionRuntime = { version: 1, ports, tmpDir };
    await writeFileAtomic(store.paths, runtimeFile(store, name), `${JSON.stringify(rt, null, 2)}\n`);
    return rt;
  });
}

/** The variables `run` and `enter` give a session's processes; `inheritedCeiling` is the caller's GIT_CEILING_DIRECTORIES. */
export function runtimeEnv(
  store: ObjectStore,
  name: string,
  rt: SessionRuntime,
  inheritedCeiling: string | undefined = process.env.GIT_CEILING_DIRECTORIES,
): Record<string, string> {
  if (rt.ports.length === 0) throw new PdbError('E_INTERNAL', `session ${name} has no ports`);
  return {
    PDB_ENV_SESSION: name,
    PDB_ENV_ROOT: sessionRoot(store, name),
    PORT: String(rt.ports[0]),
    PDB_ENV_PORT_BASE: String(rt.ports[0]),
    PDB_ENV_PORTS: rt.ports.join(','),
    TMPDIR: rt.tmpDir,
    TMP: rt.tmpDir,
    TEMP: rt.tmpDir,
    // git stops below the session directory without reading its marker: the usual "not a git repository" message
    GIT_CEILING_DIRECTORIES: gitCeiling(sessionDir(store, name), inheritedCeiling),
  };
}
