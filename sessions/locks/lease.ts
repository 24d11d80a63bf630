import { randomHex } from '../../model/os/hash.js';
import { lstatSync, readdirSync, rmdirSync } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PdbError, toPdbError } from '../../model/errors.js';
import { closeDir, dirHandleWay, handlePath, openRoot, type DirHandle } from '../../model/os/dir-handle.js';
import { isProcessAlive } from '../../model/os/proc.js';
import { breakStale, inspectLock, tryLock, type HeldLock, type LockOwner } from './lock.js';
import { ensureRealDir } from './safe-fs.js';

/**
 * Cooperative leases on a session, on the store's lock primitive: `run` holds a shared writer
 * lease (one lock file per writer), `checkpoint` and `discard` an exclusive one (`exclusive.json`).
 * Both sides take their own lock first and then look for the other, so two racing acquirers
 * cannot both succeed (at worst both fail fast with E_LEASE_BUSY). A busy session is rejected,
 * never frozen. Locks of dead processes are broken when seen. A lease directory replaced by a
 * symlink is never read through: it is removed as a link and made again.
 */
export interface LeaseRecord {
  kind: 'writer' | 'exclusive';
  pid: number;
  pidStart: string | null;
  purpose: string;
  acquiredAt: string;
}

export interface Lease {
  kind: LeaseRecord['kind'];
  release(): Promise<void>;
}

const EXCLUSIVE = 'exclusive.json';

/** The lease kind a lock file stands for, from its name (its content may be unreadable). */
function kindOf(name: string): LeaseRecord['kind'] {
  return name === EXCLUSIVE ? 'exclusive' : 'writer';
}

/** Is `dir` a real directory (not a symlink to one)? */
function isRealDir(dir: string): boolean {
  try {
    return lstatSync(dir).isDirectory();
  } catch {
    return false;
  }
}

function namesIn(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Held leases in a session's lease dir (owner null: unreadable, maybe being written), breaking stale ones. */
async function holders(leaseDir: string): Promise<Array<{ file: string; kind: LeaseRecord['kind']; owner: LockOwner | null }>> {
  const out: Array<{ file: string; kind: LeaseRecord['kind']; owner: LockOwner | null }> = [];
  if (!isRealDir(leaseDir)) return out; // never break "stale" locks through a link out of the store
  for (const name of namesIn(leaseDir).sort()) {
    if (name.startsWith('.')) continue; // the lock primitive's temp, guard and set-aside files
    const file = join(leaseDir, name);
    const found = await inspectLock(file);
    if (found.state === 'held') out.push({ file, kind: kindOf(name), owner: found.owner });
    else if (found.state === 'stale') await breakStale(file, found.fingerprint);
  }
  return out;
}

/** Live lease records in a session's lease dir; the ones whose process is gone are removed. */
export async function liveLeases(leaseDir: string): Promise<Array<LeaseRecord & { file: string }>> {
  const out: Array<LeaseRecord & { file: string }> = [];
  for (const h of await holders(leaseDir)) {
    if (h.owner)
      out.push({
        kind: h.kind,
        pid: h.owner.pid,
        pidStart: h.owner.pidStart,
        purpose: h.owner.purpose,
        acquiredAt: h.owner.acquiredAt,
        file: h.file,
      });
  }
  return out;
}

function busy(session: string, kind: LeaseRecord['kind'], holder: LockOwner | null, wanted: string): PdbError {
  const who = holder ? `process ${holder.pid} holds a ${kind} lease for ${holder.purpose}` : `another process is taking a ${kind} lease`;
  return new PdbError('E_LEASE_BUSY', `session "${session}" is busy: ${who}; ${wanted} was refused`, {
    hint: kind === 'writer' ? 'Wait for the running command to finish, then checkpoint.' : 'Wait for the checkpoint to finish.',
  });
}

/** The answer of tryAcquireLease: the lease, the holder that refused it, or the session directory is gone. */
export type LeaseAttempt =
  { lease: Lease } | { lease: null; gone: false; kind: LeaseRecord['kind']; holder: LockOwner | null } | { lease: null; gone: true };

/** Take a lease or learn who holds the session (or that its directory is gone), without throwing for either. */
export async function tryAcquireLease(
  leaseDir: string,
  kind: LeaseRecord['kind'],
  purpose: string,
  /** Holders that do not block this lease (checkpoint from inside a run: the run's own writer lease). */
  tolerate: (owner: LockOwner) => boolean = () => false,
): Promise<LeaseAttempt> {
  // Not mkdir -p: inside a session directory that a discard just moved away, that would make it again.
  if (!(await ensureRealDir(leaseDir))) return { lease: null, gone: true };
  const name = kind === 'exclusive' ? EXCLUSIVE : `writer-${process.pid}-${randomHex(4)}.json`;
  let taken;
  try {
    taken = await tryLock(join(leaseDir, name), { kind, purpose });
  } catch (err) {
    if (!isRealDir(leaseDir)) return { lease: null, gone: true };
    throw err;
  }
  if (!taken.lock) return { lease: null, gone: false, kind, holder: taken.holder };
  const lock: HeldLock = taken.lock;
  const others = (await holders(leaseDir)).filter(
    (h) => h.file !== lock.path && (kind === 'exclusive' || h.kind === 'exclusive') && !(h.owner && tolerate(h.owner)),
  );
  if (others.length > 0) {
    await lock.release();
    return { lease: null, gone: false, kind: others[0]!.kind, holder: others[0]!.owner };
  }
  return { lease: { kind, release: () => lock.release() } };
}

function gone(session: string): PdbError {
  return new PdbError('E_SESSION_NOT_FOUND', `session "${session}" is gone (discarded meanwhile)`, {
    hint: 'pdb-env list shows the sessions.',
  });
}

export async function acquireLease(
  leaseDir: string,
  session: string,
  kind: LeaseRecord['kind'],
  purpose: string,
  tolerate?: (owner: LockOwner) => boolean,
): Promise<Lease> {
  const r = await tryAcquireLease(leaseDir, kind, purpose, tolerate);
  if (r.lease) return r.lease;
  if (r.gone) throw gone(session);
  throw busy(session, r.kind, r.holder, purpose);
}

/** How long a discard waits for a live peer that is discarding the same session (a large tree takes a while). */
export const DISCARD_PEER_WAIT_MS = 120_000;

/**
 * The exclusive lease of a discard of the session in `dir`: it waits out a live peer discarding
 * the same session (bounded), so parallel discards all succeed; E_SESSION_NOT_FOUND when the
 * session went away meanwhile (a peer removed it), E_LEASE_BUSY for any other holder.
 */
export async function acquireDiscardLease(dir: string, session: string, hooks: { afterOpen?: () => void } = {}): Promise<Lease> {
  const deadline = Date.now() + DISCARD_PEER_WAIT_MS;
  for (let pause = 10, links = 0; ; pause = Math.min(pause * 2, 200)) {
    // The session directory as a handle (opened without following a link), the lease written
    // through it: a session directory swapped for a link is never written through (issue 41).
    const h = openSessionDir(dir);
    if (h === 'gone') throw gone(session);
    if (h === 'link') {
      if (++links > 20)
        throw new PdbError('E_LEASE_BUSY', `session "${session}" is busy: ${dir} keeps turning into a link; discard was refused`, {
          hint: 'Something replaces the session directory; stop it, then discard again.',
        });
      await sleep(pause);
      continue;
    }
    hooks.afterOpen?.(); // tests: what a peer does between the open and the lease
    let r: LeaseAttempt;
    try {
      r = await tryAcquireLease(join(handlePath(h), 'lease'), 'exclusive', 'discard');
    } catch (err) {
      const through = handlePath(h);
      closeDir(h);
      // Its message names the handle's /proc/self/fd path, which says nothing to a person: name the directory.
      const e = toPdbError(err, 'E_IO');
      throw new PdbError(e.code, e.message.replaceAll(through, dir), { hint: e.hint, cause: err });
    }
    if (r.lease) {
      const held = r.lease;
      // Still the directory at the name: a peer's discard may have moved it into the store's tmp
      // to delete it since the open (and the path way checks the directory before each call only).
      if (sameDir(dir, h))
        // Released through the same handle: its /proc/self/fd name must not be another directory's by then.
        return { kind: held.kind, release: () => held.release().finally(() => closeDir(h)) };
      await held.release().catch(() => undefined);
      // The lease directory this attempt may have made in the moved tree: a peer deleting that
      // tree must find it empty. Through the handle only: by path it would be whatever is at the name now.
      if (dirHandleWay() !== 'path')
        try {
          rmdirSync(join(handlePath(h), 'lease'));
        } catch {
          // not empty (another's lease) or gone: not ours to remove
        }
      closeDir(h);
      continue;
    }
    closeDir(h);
    if (r.gone || !(await lstat(dir).catch(() => null))) throw gone(session);
    const peerDiscards = r.holder?.purpose === 'discard' && isProcessAlive(r.holder.pid, r.holder.pidStart);
    if (!peerDiscards || Date.now() > deadline) {
      const who = r.holder
        ? `process ${r.holder.pid} holds a ${r.kind} lease for ${r.holder.purpose}`
        : `another process is taking a lease`;
      throw new PdbError('E_LEASE_BUSY', `session "${session}" is busy: ${who}; discard was refused`, {
        hint: r.kind === 'writer' ? 'Wait for the running command to finish, or pdb-env discard --force.' : 'Wait for it to finish.',
      });
    }
    await sleep(pause);
  }
}

/** The session directory opened without following a link; 'link' when a link or file is in its place now, 'gone' when nothing is. */
function openSessionDir(dir: string): DirHandle | 'link' | 'gone' {
  try {
    return openRoot(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 'gone';
    if (code === 'ELOOP' || code === 'ENOTDIR') return 'link';
    throw err;
  }
}

function sameDir(dir: string, h: DirHandle): boolean {
  const st = lstatSync(dir, { bigint: true, throwIfNoEntry: false });
  return !!st && st.isDirectory() && st.dev === h.dev && st.ino === h.ino;
}
