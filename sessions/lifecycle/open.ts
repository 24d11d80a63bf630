// Open an existing session: its record and its backend (loaded alone, not the whole registry),
// re-activated (re-mounted) when its backend needs it. What checkpoint, diff, path and run share.
import type { Backend, BackendContext } from '../../backends/types.js';
import { PdbError } from '../../model/errors.js';
import { assertNoForeignMount } from '../health/root-mount.js';
import { sessionBackend } from './backend-of.js';
import {
  assertSessionDirs,
  backendContext,
  readSession,
  sessionDir,
  sessionRoot,
  type SessionRecord,
  type StoreContext,
} from '../records/session-record.js';

export interface OpenSession {
  rec: SessionRecord;
  backend: Backend;
  root: string;
  dir: string;
  ctx: BackendContext;
}

/** A ready session with its backend; E_SESSION_BROKEN when it is not ready, E_SESSION_DAMAGED when its root is not the store's. */
export async function openSession(ctx: StoreContext, name: string): Promise<OpenSession> {
  const rec = await readSession(ctx.store, name);
  if (rec.state !== 'ready') {
    throw new PdbError('E_SESSION_BROKEN', `session "${name}" is ${rec.state}, not ready`, {
      hint: 'pdb-env doctor explains; pdb-env gc cleans up; pdb-env discard removes it.',
    });
  }
  // A root replaced by a link must not become the cwd of a run or the tree a checkpoint walks.
  await assertSessionDirs(ctx.store, name);
  assertNoForeignMount(ctx.store, name, rec.backend, 'use'); // a bind mount over the root, say
  const backend = await sessionBackend(rec);
  return {
    rec,
    backend,
    root: sessionRoot(ctx.store, name),
    dir: sessionDir(ctx.store, name),
    ctx: backendContext(ctx.store, rec.sourceDir ?? undefined),
  };
}

/** A ready session, re-activated (re-mounted) if its backend needs it. */
export async function resumeSession(ctx: StoreContext, name: string): Promise<OpenSession> {
  const s = await openSession(ctx, name);
  await s.backend.resume(s.ctx, s.root, s.dir, s.rec.backendState);
  return s;
}
