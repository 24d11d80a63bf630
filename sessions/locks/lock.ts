// The one lock primitive of the store (session leases and environment updates use it).
//
// A lock is a file whose content names its owner (pid, process start time, kind, purpose, time,
// and a random token). It is created WITH that content in one step: the record is written to a
// temp file beside the lock, then link(2)ed to the lock name. link fails with EEXIST when the
// lock is taken, so a lock file is never empty or half-written.
//
// A lock whose owner is gone (pid dead, or pid reused: another start time) is stale. Breakers of
// one lock take turns under a short guard lock; each re-reads the lock, moves it aside to a unique
// name and deletes it only if it is the very file it judged stale, so a lock a live owner just
// took is never deleted (at worst, when a guard itself was broken by two processes at once, it is
// moved aside and put back).
//
// Every step is a synchronous call: a lock file is a few hundred bytes, and a round trip through
// libuv's thread pool per call cost more than the call (a checkpoint takes two locks and releases
// them: about forty calls).
import { randomHex } from '../../model/os/hash.js';
import {
  closeSync,
  constants as fsConstants,
  fstatSync,
  linkSync,
  lstatSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { osErrorCode, toPdbError } from '../../model/errors.js';
import { isProcessAlive, processStartTime } from '../../model/os/proc.js';
import { tempEntryName } from '../../model/os/temp-name.js';

export interface LockOwner {
  /** What the holder does under the lock: 'writer', 'exclusive', 'update'... */
  kind: string;
  pid: number;
  /** Process start time, to tell a reused pid apart (null where /proc is absent). */
  pidStart: string | null;
  purpose: string;
  acquiredAt: string;
  /** Random per acquisition: tells this holding apart from any other, even of the same process. */
  token: string;
}

export interface HeldLock {
  readonly path: string;
  readonly owner: LockOwner;
  /** Remove the lock if it is still this holding's (idempotent). */
  release(): Promise<void>;
}

/** What is at a lock path: nothing, a holder, or a stale file. `owner` is null for an unreadable file. */
export type LockState = { state: 'free' } | { state: 'held' | 'stale'; owner: LockOwner | null; fingerprint: string };

export interface LockOptions {
  kind: string;
  purpose: string;
  /** Wait silently, polling, up to timeoutMs for a live holder to let go. Default: fail at once. */
  wait?: { timeoutMs: number };
  /** How old an unreadable lock file must be before it counts as stale (default GARBAGE_GRACE_MS). */
  garbageGraceMs?: number;
  /** OS edge: is `pid` still the process that started at `pidStart`? */
  isAlive?: (pid: number, pidStart: string | null) => boolean;
}

/**
 * An unreadable lock file (empty, cut short, not JSON) is stale only once it is older than this.
 * Older pdb-env versions created the lock first and wrote the owner after it (a crash in between
 * left an empty lock that wedged publish); a young unreadable lock may be one of those writers
 * mid-write, which must not be broken. Longer than SHORT_LOCK_WAIT_MS, so a waiter gives up on a
 * fresh unreadable lock rather than break it.
 */
export const GARBAGE_GRACE_MS = 10_000;

/**
 * How long a command waits, silently, for a short-held lock (the store lock, an environment's
 * update lock): their holders keep them for a few file writes, so eight parallel commands pass
 * through one after another well within it. A holder that keeps it longer gets E_LEASE_BUSY.
 */
export const SHORT_LOCK_WAIT_MS = 5_000;

/** Attempts to take a lock without waiting: a stale lock is broken, then taken (or lost to a racer). */
const MAX_ATTEMPTS = 5;

function ownerFor(options: Pick<LockOptions, 'kind' | 'purpose'>): LockOwner {
  return {
    kind: options.kind,
    pid: process.pid,
    pidStart: processStartTime(process.pid),
    purpose: options.purpose,
    acquiredAt: new Date().toISOString(),
    token: randomHex(8),
  };
}

/** A lock record, including those older versions wrote ({pid, pidStart} only); null when it is not one. */
export function parseLockOwner(text: string): LockOwner | null {
  let doc: Partial<Record<keyof LockOwner, unknown>>;
  try {
    doc = JSON.parse(text) as typeof doc;
  } catch {
    return null; // garbage: the caller applies the grace period
  }
  if (typeof doc !== 'object' || doc === null || !Number.isInteger(doc.pid) || (doc.pid as number) <= 0) return null;
  const str = (v: unknown, dflt: string) => (typeof v === 'string' ? v : dflt);
  return {
    kind: str(doc.kind, '?'),
    pid: doc.pid as number,
    pidStart: typeof doc.pidStart === 'string' ? doc.pidStart : null,
    purpose: str(doc.purpose, '?'),
    acquiredAt: str(doc.acquiredAt, ''),
    token: str(doc.token, ''),
  };
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // gone already, or a leftover that gc removes: either way nothing to report
  }
}

/** Create `path` holding `owner`, in one step. False when it already exists. */
async function createWithContent(path: string, owner: LockOwner): Promise<boolean> {
  const tmp = join(dirname(path), `.${basename(path)}.${tempEntryName('lock-tmp')}`);
  try {
    writeFileSync(tmp, JSON.stringify(owner), { flag: 'wx', mode: 0o644 });
  } catch (err) {
    unlinkQuietly(tmp); // rollback of a temp file that may be cut short (ENOSPC)
    throw toPdbError(err, 'E_IO', { action: 'taking a lock', path });
  }
  try {
    linkSync(tmp, path);
    return true;
  } catch (err) {
    if (osErrorCode(err) === 'EEXIST') return false;
    throw toPdbError(err, 'E_IO', { action: 'taking a lock', path });
  } finally {
    // Our own uniquely named temp file: the lock (if made) is its second name. A leftover is inert.
    unlinkQuietly(tmp);
  }
}

/** Read what is at `path` (never following a symlink) and judge it. */
export async function inspectLock(path: string, options: Pick<LockOptions, 'garbageGraceMs' | 'isAlive'> = {}): Promise<LockState> {
  let text = '';
  let st;
  try {
    // O_NONBLOCK: a FIFO planted at the lock path opens at once (and is no file) instead of waiting for a writer.
    const fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
    try {
      st = fstatSync(fd);
      text = st.isFile() ? readFileSync(fd, 'utf8') : '';
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') return { state: 'free' };
    if (osErrorCode(err) !== 'ELOOP') throw err;
    st = lstatSync(path, { throwIfNoEntry: false }); // a symlink in place of a lock: garbage, judged by its own age
    if (!st) return { state: 'free' };
  }
  const fingerprint = `${st.ino}:${st.mtimeMs}:${text}`;
  const owner = parseLockOwner(text);
  if (owner) {
    const alive = (options.isAlive ?? isProcessAlive)(owner.pid, owner.pidStart);
    return { state: alive ? 'held' : 'stale', owner, fingerprint };
  }
  const old = Date.now() - st.mtimeMs > (options.garbageGraceMs ?? GARBAGE_GRACE_MS);
  return { state: old ? 'stale' : 'held', owner: null, fingerprint };
}

/** Move `path` aside and delete it if it is still the file with `fingerprint`; otherwise put it back. */
async function removeIfSame(path: string, fingerprint: string, options: Omit<LockOptions, 'kind' | 'purpose'>): Promise<void> {
  const aside = join(dirname(path), `.${basename(path)}.${tempEntryName('lock-stale')}`);
  try {
    renameSync(path, aside);
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') return; // someone else removed it
    throw err;
  }
  const moved = await inspectLock(aside, options);
  if (moved.state !== 'free' && moved.fingerprint !== fingerprint) {
    // Not the file we judged: a live owner's lock. Put it back unless a newer lock already took the name.
    try {
      linkSync(aside, path);
    } catch (err) {
      if (osErrorCode(err) !== 'EEXIST') throw err;
    }
  }
  unlinkSync(aside);
}

/** Break the stale lock at `path` (judged with `fingerprint`), one breaker at a time. False while another breaker works. */
export async function breakStale(path: string, fingerprint: string, options: Omit<LockOptions, 'kind' | 'purpose'> = {}): Promise<boolean> {
  const guard = join(dirname(path), `.${basename(path)}.break`);
  const guardOwner = ownerFor({ kind: 'break', purpose: `break a stale ${basename(path)}` });
  if (!(await createWithContent(guard, guardOwner))) {
    // Another process is breaking it (a few system calls), or died doing so: clear a dead guard, retry later.
    const g = await inspectLock(guard, options);
    if (g.state === 'stale') await removeIfSame(guard, g.fingerprint, options);
    return false;
  }
  try {
    const again = await inspectLock(path, options);
    if (again.state === 'stale' && again.fingerprint === fingerprint) await removeIfSame(path, fingerprint, options);
    return true;
  } finally {
    await releaseLock(guard, guardOwner);
  }
}

async function releaseLock(path: string, owner: LockOwner): Promise<void> {
  const now = await inspectLock(path, { isAlive: () => true });
  if (now.state !== 'free' && now.owner?.token === owner.token) unlinkSync(path);
}

/**
 * Take the lock at `path`, or learn who holds it (`holder` null: an unreadable file, maybe still
 * being written). A stale lock is broken and taken. Without `wait` a live holder means an answer
 * at once; with it, a silent poll up to the timeout.
 */
export async function tryLock(path: string, options: LockOptions): Promise<{ lock: HeldLock } | { lock: null; holder: LockOwner | null }> {
  const owner = ownerFor(options);
  const deadline = Date.now() + (options.wait?.timeoutMs ?? 0);
  let holder: LockOwner | null = null;
  for (let attempt = 1; ; attempt++) {
    if (await createWithContent(path, owner)) return { lock: heldLock(path, owner) };
    const found = await inspectLock(path, options);
    if (found.state !== 'free') holder = found.owner;
    // Retry at once after the lock went away or was broken; pause while someone holds it or breaks it.
    const goneNow = found.state === 'free' || (found.state === 'stale' && (await breakStale(path, found.fingerprint, options)));
    const outOfTime = Date.now() >= deadline;
    if (outOfTime && (found.state === 'held' || attempt >= MAX_ATTEMPTS)) return { lock: null, holder };
    if (!goneNow) await sleep(Math.min(2 ** attempt, 100));
  }
}

function heldLock(path: string, owner: LockOwner): HeldLock {
  let released = false;
  return {
    path,
    owner,
    release: async () => {
      if (released) return;
      released = true;
      await releaseLock(path, owner);
    },
  };
}
