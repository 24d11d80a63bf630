// Discard: remove only the named session's directory inside `<store>/sessions`, never following a
// symlink out of it. It releases the backend (unmount, delete the subvolume), moves the directory
// into the store's tmp under a name that says who is removing it, and deletes it there. So the
// name is free at once, a crash mid-delete leaves a temp tree of a dead owner for gc, and
// parallel discards of one session all succeed: whoever does not hold the exclusive lease waits
// for the holder to finish (or reports the session already gone).
import { assertNoForeignMount } from '../health/root-mount.js';
import { lstat, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { sessionBackend } from './backend-of.js';
import { crashPoint } from '../../model/crash-point.js';
import { isPdbError, osErrorCode, toPdbError } from '../../model/errors.js';
import { tempName } from '../../model/store/object-store.js';
import { removeTree } from '../../model/os/remove-tree.js';
import { openOperation } from '../locks/operation.js';
import { backendContext, readSession, sessionDir, writeSession, type SessionRecord, type StoreContext } from '../records/session-record.js';

type Outcome = { session: string; discarded: boolean };

/**
 * Remove the named session: only its directory inside `<store>/sessions`, never following a
 * symlink out of it. Succeeds (discarded: false) when it is already gone or a peer removed it.
 */
export async function discardSession(ctx: StoreContext, name: string, options: { force?: boolean } = {}): Promise<Outcome> {
  const dir = sessionDir(ctx.store, name);
  const st = await lstat(dir).catch(() => null);
  if (!st) return { session: name, discarded: false };
  if (!st.isDirectory()) {
    // A symlink (or file) planted in place of a session: remove the link itself, never its target.
    await unlink(dir).catch((err: unknown) => {
      if (osErrorCode(err) !== 'ENOENT') throw toPdbError(err, 'E_IO', { action: 'removing a planted link', path: dir });
    });
    return { session: name, discarded: true };
  }
  // What still runs in it would lose its directory: refused (E_SESSION_BUSY), or stopped with --force.
  const { assertNoProcesses } = await import('../runtime/control.js');
  await assertNoProcesses(ctx.store, name, options.force === true);
  // Parallel discards of one session all succeed: the lease waits out a peer that discards it.
  const op = await openOperation(ctx, {
    session: { name, dir },
    lease: options.force ? null : { kind: 'discard' },
  }).catch((err: unknown) => {
    if (isPdbError(err, 'E_SESSION_NOT_FOUND')) return null; // gone meanwhile: a peer removed it
    throw err;
  });
  if (!op) return { session: name, discarded: false };
  // A damaged record does not stop a discard: the user asked for the directory to go.
  const rec = await readSession(ctx.store, name).catch(() => null);
  try {
    await op.begin({ op: 'discard', session: name, detail: { backend: rec?.backend ?? null } });
    crashPoint('discard:after-intent');
    return await removeSession(ctx, name, dir, rec);
  } finally {
    await op.finish();
  }
}

async function removeSession(ctx: StoreContext, name: string, dir: string, rec: SessionRecord | null): Promise<Outcome> {
  assertNoForeignMount(ctx.store, name, rec?.backend ?? null, 'discard'); // removing in place would go through it
  if (rec) {
    rec.state = 'discarding';
    await writeSession(ctx.store, rec);
    crashPoint('discard:after-state');
    const backend = await sessionBackend(rec);
    await backend.release(backendContext(ctx.store, rec.sourceDir ?? undefined), join(dir, 'root'), dir, rec.backendState);
    crashPoint('discard:after-release');
  }
  const trash = tempName(ctx.store.paths, 'discard');
  try {
    await rename(dir, trash);
  } catch (err) {
    const code = osErrorCode(err);
    if (code === 'ENOENT') return { session: name, discarded: false }; // with --force, a peer was faster
    if (code !== 'EXDEV' && code !== 'EBUSY') throw toPdbError(err, 'E_IO', { action: `discarding session ${name}`, path: dir });
    await removeTree(dir); // a directory that cannot move (a mount inside): removed in place
    return { session: name, discarded: true };
  }
  crashPoint('discard:after-rename');
  // A peer discard that opened the directory before the move may still write its lease into it
  // before it sees the directory gone and takes the lease back (sessions/locks/lease.ts): a
  // directory emptied meanwhile is removed again, a bounded number of times.
  for (let attempt = 1; ; attempt++) {
    try {
      await removeTree(trash);
      break;
    } catch (err) {
      if (osErrorCode(err) !== 'ENOTEMPTY' || attempt >= 50)
        throw toPdbError(err, 'E_IO', { action: `removing the discarded session ${name}`, path: trash });
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  return { session: name, discarded: true };
}
