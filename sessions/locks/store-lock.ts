// The store lock: short-held. `gc` holds it while it decides what a crash left behind and moves
// that aside; `create` holds it while it writes its intent and claims the session name. So gc
// never sees a session directory whose create has not yet written its intent, and a create that
// starts during gc waits (silently, a bounded time) instead of losing its session.
import { join } from 'node:path';
import { PdbError } from '../../model/errors.js';
import type { ObjectStore } from '../../model/store/object-store.js';
import { SHORT_LOCK_WAIT_MS, tryLock } from './lock.js';
import { ensureRealDir } from './safe-fs.js';

export function storeLockPath(store: ObjectStore): string {
  return join(store.paths.locks, 'store.lock');
}

/** Run `fn` holding the store lock; E_LEASE_BUSY when another process keeps it past the wait. */
export async function withStoreLock<T>(store: ObjectStore, purpose: string, fn: () => Promise<T>, waitMs = SHORT_LOCK_WAIT_MS): Promise<T> {
  await ensureRealDir(store.paths.locks);
  const taken = await tryLock(storeLockPath(store), { kind: 'store', purpose, wait: { timeoutMs: waitMs } });
  if (!taken.lock)
    throw new PdbError(
      'E_LEASE_BUSY',
      `the store is busy: process ${taken.holder?.pid ?? '?'} holds its lock (${taken.holder?.purpose ?? 'unknown'})`,
      {
        hint: 'Try again in a moment; pdb-env doctor shows who holds it.',
      },
    );
  try {
    return await fn();
  } finally {
    await taken.lock.release();
  }
}
