import { randomBytes } from 'node:crypto';
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { PdbError } from '../model/errors.js';
import { breakStale, inspectLock, tryLock, type HeldLock, type LockOwner } from './lock.js';

/**
 * Cooperative leases on a session, on the store's lock primitive: `run` holds a shared writer
 * lease (one lock file per writer), `checkpoint` and `discard` an exclusive one (`exclusive.json`).
 * Both sides take their own lock first and then look for the other, so two racing acquirers
 * cannot both succeed (at worst both fail fast with E_LEASE_BUSY). A busy session is rejected,
 * never frozen. Locks of dead processes are broken when seen.
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

/** Held leases in a session's lease dir (owner null: unreadable, maybe being written), breaking stale ones. */
async function holders(leaseDir: string): Promise<Array<{ file: string; kind: LeaseRecord['kind']; owner: LockOwner | null }>> {
  const out = [];
  for (const name of (await readdir(leaseDir).catch(() => [] as string[])).sort()) {
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

export async function acquireLease(leaseDir: string, session: string, kind: LeaseRecord['kind'], purpose: string): Promise<Lease> {
  await mkdir(leaseDir, { recursive: true });
  const name = kind === 'exclusive' ? EXCLUSIVE : `writer-${process.pid}-${randomBytes(4).toString('hex')}.json`;
  const taken = await tryLock(join(leaseDir, name), { kind, purpose });
  if (!taken.lock) throw busy(session, kind, taken.holder, purpose);
  const lock: HeldLock = taken.lock;
  const others = (await holders(leaseDir)).filter((h) => h.file !== lock.path && (kind === 'exclusive' || h.kind === 'exclusive'));
  if (others.length > 0) {
    await lock.release();
    throw busy(session, others[0]!.kind, others[0]!.owner, purpose);
  }
  return { kind, release: () => lock.release() };
}
