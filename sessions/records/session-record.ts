// Session records: what `<store>/sessions/<name>/session.json` holds, where a session
// lives, and the context the session modules share (the store and its journal). A record that
// cannot be read is E_RECORD_CORRUPT naming the file, never a parser's stack trace, and its
// session is listed as damaged, never hidden.
import { appendFileSync, closeSync, constants as fsConstants, openSync, readFileSync, statSync } from 'node:fs';
import { lstat, readdir, readFile, realpath } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import type { AnyBackendName } from '../../backends/table.js';
import type { BackendContext, BackendState } from '../../backends/types.js';
import { isDigest, type Digest } from '../../model/canonical-json.js';
import { PdbError, osErrorCode, toPdbError } from '../../model/errors.js';
import { writeFileAtomic, type ObjectStore } from '../../model/store/object-store.js';
import { realpathOr } from '../../model/paths.js';
import type { Journal } from './journal.js';
import { SESSION_NAME_PATTERN, assertSessionName } from './names.js';
import type { SourceGit } from '../way-back/source-git.js';

export type SessionState = 'creating' | 'ready' | 'discarding';
const STATES: readonly SessionState[] = ['creating', 'ready', 'discarding'];

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
  /** The source's git work tree and HEAD when it was imported (store-local, never in receipts); null: not in one. */
  sourceGit?: SourceGit | null;
  /** A tree index (store-relative) that describes the root as created, when it is not the session's own (a materialized base's). */
  index?: string | null;
  /** The module the backend was loaded from, for a user's own backend (its real path, store-local; never in receipts). */
  backendModule?: string | null;
  /** sha256 of that module's bytes when the session was made: another file is refused unrun (E_BACKEND_MODULE_CHANGED). */
  backendModuleDigest?: string | null;
}

interface SessionPlace {
  root: string;
  /** The current directory is inside this session's root. */
  current: boolean;
}

/** A session whose record cannot be read: listed with why, its files kept. */
export interface DamagedSession extends SessionPlace {
  name: string;
  state: 'damaged';
  /** What is wrong with the record, in one sentence. */
  damage: string;
  backend: null;
  base: null;
  lastCheckpoint: null;
}

export type SessionInfo = (SessionRecord & SessionPlace) | DamagedSession;

/** What the session modules share; SessionService is one. */
export interface StoreContext {
  readonly store: ObjectStore;
  readonly journal: Journal;
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

export function recordFile(store: ObjectStore, name: string): string {
  return join(sessionDir(store, name), 'session.json');
}

/** The session's own tree index: the root as its last checkpoint (or its create) saw it. */
export function sessionIndexFile(store: ObjectStore, name: string): string {
  return join(sessionDir(store, name), 'tree-index');
}

/** Every checkpoint of a session, one JSON line each (gc keeps them all while the session lives). */
export function checkpointLogFile(store: ObjectStore, name: string): string {
  return join(sessionDir(store, name), 'checkpoints.jsonl');
}

/**
 * Append one checkpoint's line to the session's log; its number (1 = the first line that reads).
 * A line cut short by a crash gets its newline first, so the new line is never glued to it.
 */
export async function appendCheckpointLog(
  store: ObjectStore,
  name: string,
  /** The checkpoint's line: its digests and time, and (sessions/history/log.ts) its label, counts and restoredFrom. */
  cp: { snapshot: Digest; changeset: Digest; at: string; label?: string; restoredFrom?: number; [more: string]: unknown },
): Promise<number> {
  const file = checkpointLogFile(store, name);
  try {
    const line = JSON.stringify(cp);
    const parsed = parseLogLine(line)!;
    // The log as this process left it (a daemon's next checkpoint): its lines are known.
    const last = logs.get(file);
    if (last && last.sig === logSig(file)) {
      appendFileSync(file, `${line}\n`);
      last.lines.push(parsed);
      last.sig = logSig(file);
      return last.lines.length;
    }
    let text = '';
    try {
      text = readFileSync(file, 'utf8'); // synchronous: one small file, once per checkpoint
    } catch (err) {
      if (osErrorCode(err) !== 'ENOENT') throw err;
    }
    const cut = text !== '' && !text.endsWith('\n');
    appendFileSync(file, `${cut ? '\n' : ''}${line}\n`);
    const lines = parseLog(text);
    lines.push(parsed);
    logs.set(file, { sig: logSig(file), lines });
    return lines.length;
  } catch (err) {
    throw toPdbError(err, 'E_IO', { action: `recording a checkpoint of session ${name}`, path: file });
  }
}

/** One line of the log as written: the old fields, and since issue 39 the rest. */
/** Which agent's turn a checkpoint brackets: the agent, its turn (the agent's id, else its ordinal in the session) and the side. */
export interface TurnMark {
  agent: string;
  turn: string;
  phase: 'before' | 'after';
}

export interface CheckpointLine {
  snapshot: Digest;
  changeset: Digest;
  at: string;
  label?: string;
  /** Paths added, modified (content, mode or type) and deleted since the checkpoint before it (or the base). */
  added?: number;
  modified?: number;
  deleted?: number;
  /** The number of the checkpoint a restore brought back (this line records the tree it left). */
  restoredFrom?: number;
  /** The agent whose turn this checkpoint brackets (pdb-env hook AGENT), its turn and which side of it. */
  agent?: string;
  turn?: string;
  phase?: 'before' | 'after';
}

const count = (v: unknown) => (Number.isInteger(v) && (v as number) >= 0 ? (v as number) : undefined);

/** A line of the log, or null for one that does not read (empty, cut short, damaged). */
function parseLogLine(line: string): CheckpointLine | null {
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (!doc || typeof doc !== 'object' || !isDigest(doc.snapshot) || !isDigest(doc.changeset)) return null;
  const cp: CheckpointLine = { snapshot: doc.snapshot, changeset: doc.changeset, at: typeof doc.at === 'string' ? doc.at : '?' };
  if (typeof doc.label === 'string') cp.label = doc.label;
  for (const k of ['added', 'modified', 'deleted', 'restoredFrom'] as const) if (count(doc[k]) !== undefined) cp[k] = count(doc[k]);
  for (const k of ['agent', 'turn'] as const) if (typeof doc[k] === 'string' && doc[k] !== '') cp[k] = (doc[k] as string).slice(0, 80);
  if (doc.phase === 'before' || doc.phase === 'after') cp.phase = doc.phase;
  return cp;
}

const parseLog = (text: string): CheckpointLine[] => text.split('\n').flatMap((l) => (l === '' ? [] : (parseLogLine(l) ?? [])));

// Each log's lines as this process last read or wrote them, by the file's identity then: a log no
// one else wrote since (the same inode, size and nanosecond mtime and ctime) is not read again, so
// a checkpoint or a restore costs the same on the log's thousandth line as on its first.
const logs = new Map<string, { sig: string; lines: CheckpointLine[] }>();
function logSig(file: string): string {
  const st = statSync(file, { bigint: true, throwIfNoEntry: false });
  return st ? `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` : 'none';
}

/** The lines of a session's log that read, in order (a line cut short or damaged is skipped). */
export function readLogLines(store: ObjectStore, name: string): CheckpointLine[] {
  const file = checkpointLogFile(store, name);
  const sig = logSig(file);
  const last = logs.get(file);
  if (last && last.sig === sig) return last.lines.slice();
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const lines = parseLog(text);
  logs.set(file, { sig, lines });
  return lines.slice();
}

/** The Snapshot and Changeset a log line names, or null for a line that does not read (empty, cut short). */
export function lineNames(line: string): [Digest, Digest] | null {
  const cp = parseLogLine(line);
  return cp && [cp.snapshot, cp.changeset];
}

/**
 * The digests a session's checkpoint log names (a line cut short by a crash is skipped); with
 * `keep`, only those of its last `keep` checkpoints (gc's history rule).
 */
export async function readCheckpointLog(store: ObjectStore, name: string, keep = Infinity): Promise<Digest[]> {
  const text = await readFile(checkpointLogFile(store, name), 'utf8').catch(() => '');
  const lines = text.split('\n').flatMap((l) => lineNames(l) ?? []);
  return keep >= lines.length / 2 ? lines : lines.slice(lines.length - 2 * keep);
}

/** How to get work out of a session whose record is damaged (doctor, gc and the error hint say it). */
export function recoverHint(store: ObjectStore, name: string): string {
  return `Its files are kept in ${sessionRoot(store, name)}: copy out what you need, then pdb-env discard ${name}.`;
}

/** E_SESSION_DAMAGED: a directory of the session is not the one the store made (a link, a file). */
export function sessionDamaged(store: ObjectStore, name: string, what: string, path: string): PdbError {
  return new PdbError(
    'E_SESSION_DAMAGED',
    `the ${what} of session "${name}" (${path}) is not the directory the store made (a symlink, or not a directory): nothing runs in it or is read from where it points`,
    {
      path,
      hint: `pdb-env discard ${name} removes the session (a link itself, never what it points to), then pdb-env create ${name} makes it again; or put the directory back.`,
    },
  );
}

/**
 * The session's directory and root are the directories the store made: real directories (an
 * absent root is the backend's to make again), reached without a link from the store's sessions/.
 */
export async function assertSessionDirs(store: ObjectStore, name: string): Promise<void> {
  const dir = sessionDir(store, name);
  const root = sessionRoot(store, name);
  for (const [p, what] of [
    [dir, 'directory'],
    [root, 'root'],
  ] as const) {
    const st = await lstat(p).catch(() => null);
    if (st && !st.isDirectory()) throw sessionDamaged(store, name, what, p);
  }
  const real = await realpath(root).catch(() => null);
  if (real !== null && real !== join(realpathOr(store.paths.sessions), name, 'root')) throw sessionDamaged(store, name, 'root', root);
}

/** Why `doc` is not a session record named `name`, or null when it is one. */
function recordProblem(doc: unknown, name: string): string | null {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) return 'not a JSON object';
  const r = doc as Partial<Record<keyof SessionRecord, unknown>>;
  if (r.version !== 1) return `unknown version ${JSON.stringify(r.version)}`;
  if (r.name !== name) return `it names session ${JSON.stringify(r.name)}`;
  if (typeof r.backend !== 'string') return 'no backend';
  if (typeof r.base !== 'string' || !isDigest(r.base)) return 'no base digest';
  if (!STATES.includes(r.state as SessionState)) return `unknown state ${JSON.stringify(r.state)}`;
  if (!r.backendState || typeof r.backendState !== 'object') return 'no backend state';
  if (r.backendModule !== undefined && r.backendModule !== null && typeof r.backendModule !== 'string') return 'a malformed backend module';
  if (r.backendModuleDigest !== undefined && r.backendModuleDigest !== null && !isDigest(r.backendModuleDigest))
    return 'a malformed backend module digest';
  const cp = r.lastCheckpoint as SessionRecord['lastCheckpoint'] | undefined;
  if (cp !== null && (typeof cp !== 'object' || !isDigest(cp?.snapshot) || !isDigest(cp?.changeset))) return 'a malformed last checkpoint';
  return null;
}

/**
 * Run `fn` with the session directory as a path that cannot pass through a link: on Linux the
 * directory is opened without following one and named by its descriptor (/proc/self/fd/N), so a
 * session directory swapped for a link to somewhere else is never read or written through (issue
 * 41: discard wrote session.json into the link's target). ELOOP or ENOTDIR when it is a link.
 */
async function throughSessionDir<T>(store: ObjectStore, name: string, fn: (dir: string) => T | Promise<T>): Promise<T> {
  const dir = sessionDir(store, name);
  if (process.platform !== 'linux') return fn(dir);
  const fd = openSync(dir, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW);
  try {
    return await fn(`/proc/self/fd/${fd}`);
  } finally {
    closeSync(fd);
  }
}

export async function readSession(store: ObjectStore, name: string): Promise<SessionRecord> {
  const file = recordFile(store, name);
  let text: string;
  try {
    // synchronous: a small file, read by every command on a session
    text = await throughSessionDir(store, name, (dir) => readFileSync(join(dir, 'session.json'), 'utf8'));
  } catch (err) {
    const code = osErrorCode(err);
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') {
      if ((await lstat(sessionDir(store, name)).catch(() => null))?.isDirectory()) {
        const moved = (await readdir(join(store.paths.quarantine, 'records')).catch(() => [] as string[])).some((f) =>
          f.startsWith(`${name}.session.json.`),
        );
        throw new PdbError(
          'E_RECORD_CORRUPT',
          `session "${name}" has no record (${file} is missing${moved ? '; its damaged record was moved to the quarantine by gc' : ''})`,
          { path: file, hint: `${moved ? '' : `If a create of ${name} is still running, wait for it. `}${recoverHint(store, name)}` },
        );
      }
      throw new PdbError('E_SESSION_NOT_FOUND', `no session named "${name}" in this store`, {
        hint: 'pdb-env list shows the sessions; pdb-env create NAME makes one.',
      });
    }
    throw toPdbError(err, 'E_IO', { action: `reading the record of session ${name}`, path: file });
  }
  let doc: unknown;
  let problem: string | null;
  try {
    doc = JSON.parse(text);
    problem = recordProblem(doc, name);
  } catch (err) {
    problem = `not JSON (${(err as Error).message})`;
  }
  if (problem)
    throw new PdbError('E_RECORD_CORRUPT', `the record of session "${name}" is damaged: ${problem} (${file})`, {
      path: file,
      hint: `${recoverHint(store, name)} pdb-env doctor explains.`,
    });
  return doc as SessionRecord;
}

export async function writeSession(store: ObjectStore, rec: SessionRecord): Promise<void> {
  const file = recordFile(store, rec.name);
  let through = '';
  try {
    await throughSessionDir(store, rec.name, (dir) => {
      through = dir;
      return writeFileAtomic(store.paths, join(dir, 'session.json'), `${JSON.stringify(rec, null, 2)}\n`);
    });
  } catch (err) {
    // Named by the record's own path, not the descriptor's.
    const e = toPdbError(err, 'E_IO', { action: `writing the record of session ${rec.name}`, path: file });
    throw through
      ? new PdbError(e.code, e.message.replaceAll(through, sessionDir(store, rec.name)), { hint: e.hint, cause: err, path: file })
      : e;
  }
}

function isInside(root: string, here: string): boolean {
  const rel = relative(root, here);
  return rel === '' || (!rel.startsWith('..') && !rel.startsWith(sep) && !rel.includes(`..${sep}`));
}

/**
 * Every session directory, sorted by name; `current` marks the one whose root holds `cwd`. A
 * session whose record cannot be read is listed as damaged (with why), unless a live create of
 * that name (in `creating`) has not written it yet.
 */
export async function listSessions(store: ObjectStore, cwd: string, creating: ReadonlySet<string> = new Set()): Promise<SessionInfo[]> {
  const here = realpathOr(cwd);
  const out: SessionInfo[] = [];
  for (const name of (await readdir(store.paths.sessions).catch(() => [] as string[])).sort()) {
    if (!SESSION_NAME_PATTERN.test(name)) continue;
    if (!(await lstat(join(store.paths.sessions, name)).catch(() => null))?.isDirectory()) continue; // a planted link or file
    const root = sessionRoot(store, name);
    const place = { root, current: isInside(root, here) };
    // A live create writes the record just after it claims the name: not damaged, not listed yet.
    if (creating.has(name) && !(await lstat(recordFile(store, name)).catch(() => null))) continue;
    try {
      out.push({ ...(await readSession(store, name)), ...place });
    } catch (err) {
      if (err instanceof PdbError && err.code === 'E_SESSION_NOT_FOUND') continue; // discarded meanwhile
      if (!(err instanceof PdbError) || err.code !== 'E_RECORD_CORRUPT') throw err;
      out.push({ name, state: 'damaged', damage: err.message, backend: null, base: null, lastCheckpoint: null, ...place });
    }
  }
  return out;
}
