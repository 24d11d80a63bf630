// Whether recovery may act on an abandoned intent. The journal is a file in the store like any
// other: a forged entry once made gc finish an "apply" into another session's root and finish a
// "discard" of a ready session (issue 41). So an intent is run only when what it names agrees with
// a second record the operation itself made: an apply's directory passes the checks `apply --to`
// makes (a real path, outside every store, no session root; recoverApply then checks its device and
// inode) and DIR corroborates it: its staging's marker holds the nonce the intent records (read
// through handles that follow no link, staging.ts); a discard's session says it is being
// discarded. Anything else is reported by doctor and quarantined by gc, never run: an apply whose
// staging a person removed after a crash, and an intent written before there were nonces, too.
import { lstat, realpath } from 'node:fs/promises';
import { closeDir } from '../../model/os/dir-handle.js';
import { join } from 'node:path';
import { isPdbError } from '../../model/errors.js';
import type { Intent } from '../records/journal.js';
import { readSession, sessionDir, type StoreContext } from '../records/session-record.js';
import { findEnclosingStore } from '../records/store-location.js';
import { applyNonce } from '../way-back/apply/plan.js';
import { STAGING_ROOT, uncorroborated } from '../way-back/apply/staging.js';
import { openTargetHandle } from '../way-back/apply/target.js';

/** Why recovery must not run `intent` (null: it may). Only apply and discard write where a record says. */
export async function untrustedIntent(ctx: StoreContext, intent: Intent): Promise<string | null> {
  if (intent.op === 'apply') return untrustedApply(ctx, intent);
  if (intent.op === 'discard' && intent.session) return untrustedDiscard(ctx, intent, intent.session);
  return null;
}

async function untrustedApply(ctx: StoreContext, intent: Intent): Promise<string | null> {
  const { dir } = intent.detail;
  if (typeof dir !== 'string' || !dir.startsWith('/')) return null; // recoverApply quarantines it as foreign
  const st = await lstat(dir, { bigint: true }).catch(() => null);
  if (!st) return null; // gone (or not mounted): recovery writes nothing there and says so
  // apply records DIR's real path: a path through a link is not one it wrote.
  const real = await realpath(dir).catch(() => null);
  if (real !== dir) return `${dir} is not a real path (it resolves to ${real ?? 'nothing'}): apply records the real path`;
  const store = findEnclosingStore(dir);
  if (store) return `${dir} is inside the pdb-env store ${store} (the store itself, or a session root in it): apply never writes there`;
  const storeReal = await realpath(ctx.store.paths.root).catch(() => ctx.store.paths.root);
  if (storeReal === dir || storeReal.startsWith(`${dir}/`)) return `${dir} holds the store itself`;
  // Another device (not mounted?) or another inode (replaced): recoverApply keeps or quarantines it.
  if (String(st.dev) !== intent.detail.dev || String(st.ino) !== intent.detail.ino) return null;
  const h = openTargetHandle(dir, st.dev, st.ino);
  if (!h) return null;
  try {
    // The nonce alone: the Changeset is recoverApply's to read (a missing object is reported there).
    return uncorroborated(h, intent.id, applyNonce(intent.detail), intent.detail.phase ?? '');
  } finally {
    closeDir(h);
  }
}

/** What doctor tells a person about an intent that is never run: what to check, how to finish by hand. */
export function untrustedRepair(ctx: StoreContext, intent: Intent): string {
  const quarantine = `pdb-env gc moves it to ${ctx.store.paths.quarantine}/journal without running it`;
  if (intent.op !== 'apply') return quarantine;
  const dir = String(intent.detail.dir ?? 'DIR');
  const s = intent.session ?? 'NAME';
  return (
    `${quarantine}. If an apply of ${s} into ${dir} was yours (interrupted, its staging ${dir}/${STAGING_ROOT}/apply-${intent.id} since moved or removed): ` +
    `compare ${dir} with the session (pdb-env diff ${s}) and finish by hand with pdb-env apply ${s} --to ${dir}; a path it already changed is then a conflict, ` +
    `so take the rest as a patch (pdb-env export ${s} --patch FILE). Entries it moved aside are in ${dir}/${STAGING_ROOT}/apply-${intent.id}/displaced if that is still there.`
  );
}

async function untrustedDiscard(ctx: StoreContext, intent: Intent, name: string): Promise<string | null> {
  if (!(await lstat(sessionDir(ctx.store, name)).catch(() => null))?.isDirectory()) return null; // nothing to remove
  try {
    const rec = await readSession(ctx.store, name);
    if (rec.createdAt > intent.startedAt) return null; // made after the intent: recovery leaves it alone
    if (rec.state !== 'discarding') return `session ${name} is ${rec.state}, not being discarded: no discard of it was started`;
    return null;
  } catch (err) {
    if (!isPdbError(err, 'E_RECORD_CORRUPT')) throw err;
    // A discard marks the record before it removes anything; a record that cannot say so is doctor's damaged session.
    return `the record of session ${name} cannot be read, so nothing says a discard of it was started`;
  }
}
