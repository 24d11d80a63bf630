// Who may add objects, and when gc may take them away. Every command that installs objects or
// makes something refer to them (create, checkpoint, an import) holds a shared writer lease on
// `<store>/locks/objects/` for as long as its results are not yet recorded where gc looks; gc's
// sweep holds the exclusive one while it marks and moves unreachable objects aside. So a sweep
// never sees an object that a running command has installed (or found already there) but not yet
// recorded, and a command waits (silently, bounded) for a sweep in progress instead of failing.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PdbError } from '../../model/errors.js';
import type { ObjectStore } from '../../model/store/object-store.js';
import { tryAcquireLease, type Lease } from './lease.js';
import type { LockOwner } from './lock.js';
import { ensureRealDir } from './safe-fs.js';

/** How long a writer waits for a sweep: a sweep marks and renames, then lets go (the deletes come after). */
export const SWEEP_WAIT_MS = 120_000;

export function objectLeaseDir(store: ObjectStore): string {
  return join(store.paths.locks, 'objects');
}

async function leaseDir(store: ObjectStore): Promise<string> {
  await ensureRealDir(store.paths.locks);
  const dir = objectLeaseDir(store);
  await ensureRealDir(dir);
  return dir;
}

/** The object writer lease (sessions/locks/operation.ts holds it); waits out a sweep in progress (bounded), then E_LEASE_BUSY. */
export async function acquireObjectLease(store: ObjectStore, purpose: string, waitMs = SWEEP_WAIT_MS): Promise<Lease> {
  const dir = await leaseDir(store);
  const deadline = Date.now() + waitMs;
  for (let pause = 5; ; pause = Math.min(pause * 2, 250)) {
    const r = await tryAcquireLease(dir, 'writer', purpose);
    if (r.lease) return r.lease;
    if (r.gone) await ensureRealDir(dir);
    else if (Date.now() > deadline)
      throw new PdbError(
        'E_LEASE_BUSY',
        `the store's objects are being swept by process ${r.holder?.pid ?? '?'} (${r.holder?.purpose ?? 'gc'})`,
        {
          hint: 'Try again when pdb-env gc is done.',
        },
      );
    else await sleep(pause);
  }
}

/** The sweep's exclusive lease, waiting up to `waitMs` for writers to finish; who still writes when it cannot be had. */
export async function trySweepLease(
  store: ObjectStore,
  waitMs: number,
): Promise<{ lease: Lease } | { lease: null; holder: LockOwner | null }> {
  const dir = await leaseDir(store);
  const deadline = Date.now() + waitMs;
  for (let pause = 10; ; pause = Math.min(pause * 2, 250)) {
    const r = await tryAcquireLease(dir, 'exclusive', 'gc sweep');
    if (r.lease) return { lease: r.lease };
    if (!r.gone && Date.now() > deadline) return { lease: null, holder: r.holder };
    await sleep(pause);
  }
}
