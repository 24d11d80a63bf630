// Session records and names: what `<store>/sessions/<name>/session.json` holds, where a session
// lives, and the context the session modules share (the store and its journal).
import { readdir, readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import type { AnyBackendName, BackendContext, BackendState } from '../backends/types.js';
import type { Digest } from '../model/canonical-json.js';
import { PdbError, osErrorCode } from '../model/errors.js';
import { writeFileAtomic, type ObjectStore } from '../model/object-store.js';
import { realpathOr } from '../model/paths.js';
import type { Journal } from './journal.js';

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

/** What the session modules share; SessionService is one. */
export interface StoreContext {
  readonly store: ObjectStore;
  readonly journal: Journal;
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

export function backendContext(store: ObjectStore, sourceDir?: string): BackendContext {
  return { store, sourceDir, probeDir: store.paths.tmp };
}

export function sessionDir(store: ObjectStore, name: string): string {
  assertSessionName(name);
  return join(store.paths.sessions, name);
}

export function sessionRoot(store: ObjectStore, name: string): string {
  return join(sessionDir(store, name), 'root');
}

export async function readSession(store: ObjectStore, name: string): Promise<SessionRecord> {
  const dir = sessionDir(store, name);
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

export async function writeSession(store: ObjectStore, rec: SessionRecord): Promise<void> {
  await writeFileAtomic(store.paths, join(sessionDir(store, rec.name), 'session.json'), `${JSON.stringify(rec, null, 2)}\n`);
}

/** Every readable session, sorted by name; `current` marks the one whose root holds `cwd`. */
export async function listSessions(store: ObjectStore, cwd: string): Promise<SessionInfo[]> {
  const here = realpathOr(cwd);
  const out: SessionInfo[] = [];
  for (const name of (await readdir(store.paths.sessions).catch(() => [] as string[])).sort()) {
    if (!SESSION_NAME_PATTERN.test(name)) continue;
    const rec = await readSession(store, name).catch(() => null);
    if (!rec) continue;
    const root = sessionRoot(store, name);
    const rel = relative(root, here);
    out.push({ ...rec, root, current: rel === '' || (!rel.startsWith('..') && !rel.startsWith(sep) && !rel.includes(`..${sep}`)) });
  }
  return out;
}
