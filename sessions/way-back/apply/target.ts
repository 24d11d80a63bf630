// The directory an apply writes into, and what is at a path in it. DIR is a real directory outside
// every store (not a session root, not the store); it is named by its real path and bound to its
// device and inode, so recovery can tell it from a directory put in its place, and held open as a
// directory handle (model/os/dir-handle.ts) that every read and write of a step starts from. A
// path's state is read without following anything: every parent is opened from the one before
// with O_NOFOLLOW and must be a directory on DIR's device (a symlink, a file or a mount in the way
// is a conflict, never written through, even when it is swapped in between the look and the
// open), and the entry itself is looked at in its parent's handle, its bytes hashed from there.
import { lstat, realpath } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { BigIntStats } from 'node:fs';
import type { Digest } from '../../../model/canonical-json.js';
import { PdbError, isPdbError, osErrorCode, toPdbError } from '../../../model/errors.js';
import {
  closeDir,
  hashFileAt,
  listAt,
  openDirAt,
  openRoot,
  readlinkAt,
  statAt,
  type AtStat,
  type DirHandle,
} from '../../../model/os/dir-handle.js';
import { mountContaining } from '../../../model/os/mounts.js';
import { progressCounter, type ProgressFn } from '../../../model/progress.js';
import { entryKey, type Change, type Entry } from '../../../model/snapshot.js';
import { SHORT_LOCK_WAIT_MS, tryLock } from '../../locks/lock.js';
import { ensureRealDir } from '../../locks/safe-fs.js';
import type { StoreContext } from '../../records/session-record.js';
import { findEnclosingStore } from '../../records/store-location.js';

export interface Target {
  /** The real path of DIR. */
  dir: string;
  dev: bigint;
  ino: bigint;
  /** The mount point DIR is on (an E_NO_SPACE hint names it). */
  filesystem: string;
  /** DIR opened as a directory handle: every step's parents are opened from it. closeTarget() lets it go. */
  root: DirHandle;
}

/** Let go of DIR's handle. */
export function closeTarget(t: Target | null | undefined): void {
  if (t) closeDir(t.root);
}

/** Open `dir` as a target's handle, and check it is the directory named (device and inode); null when it is not. */
export function openTargetHandle(dir: string, dev: bigint, ino: bigint): DirHandle | null {
  let h: DirHandle;
  try {
    h = openRoot(dir);
  } catch {
    return null; // a link, no directory, gone: not the directory the apply is for
  }
  if (h.dev === dev && h.ino === ino) return h;
  closeDir(h);
  return null;
}

/** What is at a path: an entry, nothing (`absent`: also below a parent that is gone), or something the contract cannot hold. */
export type PathState = { entry: Entry | null; parentGone: boolean } | { blocked: string };

export async function lstatOr(p: string): Promise<BigIntStats | null> {
  try {
    return await lstat(p, { bigint: true });
  } catch (err) {
    if (['ENOENT', 'ENOTDIR'].includes(osErrorCode(err) ?? '')) return null;
    throw toPdbError(err, 'E_IO', { action: 'checking the target', path: p });
  }
}

/** A failure of a step in DIR, typed; E_NO_SPACE names DIR's filesystem (not the store's). */
export function targetError(t: Target, err: unknown, action: string, path: string): PdbError {
  if (isPdbError(err, 'E_NO_SPACE'))
    return new PdbError('E_NO_SPACE', err.message, {
      cause: err,
      hint: `Free space on the filesystem mounted at ${t.filesystem}, then try again.`,
    });
  return toPdbError(err, 'E_IO', { action, path, filesystem: t.filesystem });
}

/** DIR as apply may write into it: its real path, a directory, outside every pdb-env store. */
export async function openTarget(wanted: string, name: string): Promise<Target> {
  let dir: string;
  try {
    dir = await realpath(resolve(wanted));
  } catch (err) {
    throw new PdbError('E_SOURCE_MISSING', `${resolve(wanted)} does not exist`, { cause: err, hint: `pdb-env apply ${name} --to DIR` });
  }
  const st = await lstatOr(dir);
  if (!st?.isDirectory()) throw new PdbError('E_SOURCE_MISSING', `${dir} is not a directory`, { hint: `pdb-env apply ${name} --to DIR` });
  const store = findEnclosingStore(dir);
  if (store)
    throw new PdbError(
      'E_USAGE',
      `${dir} is inside the pdb-env store ${store} (the store itself, or a session root in it): apply never writes there`,
      {
        hint: `Apply into a directory outside the store (pdb-env apply ${name} --to DIR); to change another session, work in it.`,
      },
    );
  const root = openTargetHandle(dir, st.dev, st.ino);
  if (!root)
    throw new PdbError('E_SOURCE_MISSING', `${dir} changed while it was opened (moved or replaced)`, {
      hint: `pdb-env apply ${name} --to DIR`,
    });
  return { dir, dev: st.dev, ino: st.ino, filesystem: mountContaining(dir)?.mountPoint ?? dir, root };
}

/** DIR is still the directory opened: a directory with the same device and inode (E_APPLY_CONFLICT otherwise). */
export async function recheckTarget(t: Target): Promise<void> {
  const st = await lstatOr(t.dir);
  if (!st?.isDirectory() || st.dev !== t.dev || st.ino !== t.ino)
    throw new PdbError('E_APPLY_CONFLICT', `${t.dir} is no longer the directory the apply started in (moved, removed or replaced)`, {
      hint: 'Nothing more was written there. pdb-env gc finishes what the store knows.',
    });
}

const what = (st: AtStat, t: Target) =>
  st.isSymbolicLink() ? 'a symlink' : !st.isDirectory() ? 'not a directory' : st.dev !== t.dev ? 'on another filesystem (a mount)' : '';

/** Where a step's path is: its parent's handle (the caller closes it) and its name; or absent, or blocked. */
export type ParentAt = { parent: DirHandle; name: string } | { entry: null; parentGone: true } | { blocked: string };

const isLinkRefusal = (err: unknown) => ['ELOOP', 'ENOTDIR', 'EXDEV', 'ESTALE'].includes(osErrorCode(err) ?? '');

/**
 * Open the parent of `path` in DIR, each component from the one before without following a link.
 * `retyped` names the paths the apply itself turns from a directory into something else or back:
 * while one is not a directory, nothing exists below it. Any other parent that is not a real
 * directory of DIR blocks, also when it turns into one between the look and the open.
 */
export function parentAt(t: Target, path: string, retyped: ReadonlySet<string> = new Set()): ParentAt {
  const parts = path.split('/');
  let cur = t.root;
  const up = () => {
    if (cur !== t.root) closeDir(cur);
  };
  try {
    for (let i = 0; i < parts.length - 1; i++) {
      const parent = parts.slice(0, i + 1).join('/');
      const st = statAt(cur, parts[i]!);
      if (!st) return (up(), { entry: null, parentGone: true });
      const wrong = what(st, t);
      if (wrong) {
        up();
        if (retyped.has(parent) && !st.isDirectory()) return { entry: null, parentGone: true };
        return { blocked: `its parent ${parent} is ${wrong}` };
      }
      let next: DirHandle;
      try {
        next = openDirAt(cur, parts[i]!);
      } catch (err) {
        up();
        if (osErrorCode(err) === 'ENOENT') return { entry: null, parentGone: true };
        if (isLinkRefusal(err)) return { blocked: `its parent ${parent} was replaced by a link or file just now` };
        throw toPdbError(err, 'E_IO', { action: 'opening a directory of the target', path: `${t.dir}/${parent}` });
      }
      up();
      cur = next;
      if (cur.dev !== t.dev) return (up(), { blocked: `its parent ${parent} is on another filesystem (a mount)` });
    }
  } catch (err) {
    up();
    throw isPdbError(err) ? err : toPdbError(err, 'E_IO', { action: 'checking the target', path: `${t.dir}/${path}` });
  }
  return { parent: cur === t.root ? openDirAt(t.root, '.') : cur, name: parts[parts.length - 1]! };
}

/** The state of `name` in the open directory `parent` (the path `path` of DIR). */
export function entryIn(t: Target, parent: DirHandle, name: string, path: string): PathState {
  try {
    const st = statAt(parent, name);
    if (!st) return { entry: null, parentGone: false };
    if (st.isDirectory())
      return st.dev === t.dev ? { entry: { path, kind: 'dir' }, parentGone: false } : { blocked: 'it is on another filesystem (a mount)' };
    if (st.isSymbolicLink()) return { entry: { path, kind: 'symlink', target: readlinkAt(parent, name) }, parentGone: false };
    if (!st.isFile()) return { blocked: 'it is not a file, directory or symlink' };
    const hex = hashFileAt(parent, name);
    if (hex === null) return { blocked: 'it changed while it was read' };
    return {
      entry: { path, kind: 'file', digest: `sha256:${hex}` as Digest, size: st.size, exec: (st.mode & 0o111) !== 0 },
      parentGone: false,
    };
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') return { entry: null, parentGone: false };
    throw toPdbError(err, 'E_IO', { action: 'checking the target', path: `${t.dir}/${path}` });
  }
}

/** The state of `path` in DIR (see parentAt and entryIn). */
export async function stateAt(t: Target, path: string, retyped: ReadonlySet<string> = new Set()): Promise<PathState> {
  const at = parentAt(t, path, retyped);
  if (!('parent' in at)) return at;
  try {
    return entryIn(t, at.parent, at.name, path);
  } finally {
    closeDir(at.parent);
  }
}

/** The names in the directory `path` of DIR (opened without following a link). */
export function namesIn(t: Target, path: string): string[] {
  const h = openDirAt(t.root, path, { sameDevice: true });
  try {
    return listAt(h);
  } finally {
    closeDir(h);
  }
}

/** The paths a Changeset retypes (a directory to a file or symlink, or back). */
export function retypedPaths(changes: readonly Change[]): Set<string> {
  return new Set(changes.filter((c) => c.before && c.after && c.before.kind !== c.after.kind).map((c) => c.path));
}

/** The bytes of a file entry (0 for anything else), and of a list of them: what progress counts. */
export const fileBytes = (e: Entry | null | undefined): number => (e?.kind === 'file' ? e.size : 0);
export const sumBytes = (es: ReadonlyArray<Entry | null | undefined>): number => es.reduce((n, e) => n + fileBytes(e), 0);

export const keyOf = (e: Entry | null | undefined): string => (e ? entryKey(e) : 'absent');

/**
 * Which changed paths in DIR are no longer as the base had them (with why, when a parent is in the
 * way), plus whatever a directory the changes remove holds that they do not name. `done`: every
 * path already holds the session's result (an apply that completed).
 */
export async function checkTarget(
  t: Target,
  changes: readonly Change[],
  onProgress?: ProgressFn,
): Promise<{ conflicts: string[]; done: boolean }> {
  const retyped = retypedPaths(changes);
  const states: PathState[] = [];
  const count = progressCounter('hash', changes.length, sumBytes(changes.map((c) => c.before)), onProgress);
  for (const c of changes) {
    states.push(await stateAt(t, c.path, retyped));
    count(1, fileBytes(c.before));
  }
  const now = (i: number) => ('blocked' in states[i]! ? 'blocked' : keyOf((states[i] as { entry: Entry | null }).entry));
  if (changes.every((c, i) => now(i) === keyOf(c.after))) return { conflicts: [], done: true };
  const touched = new Set(changes.map((c) => c.path));
  const conflicts: string[] = [];
  for (const [i, c] of changes.entries()) {
    const s = states[i]!;
    if ('blocked' in s) conflicts.push(`${c.path} (${s.blocked})`);
    else if (now(i) === keyOf(c.after)) conflicts.push(`${c.path} (already as the session's result, while other paths are not)`);
    else if (now(i) !== keyOf(c.before)) conflicts.push(c.path);
    else if (c.before?.kind === 'dir' && c.after?.kind !== 'dir')
      for (const name of namesIn(t, c.path)) if (!touched.has(`${c.path}/${name}`)) conflicts.push(`${c.path}/${name}`);
  }
  return { conflicts, done: false };
}

/** Run `fn` holding the apply lock of DIR (in the store, by device and inode): one apply per directory at a time. */
export async function withTargetLock<T>(ctx: StoreContext, t: Target, fn: () => Promise<T>, waitMs = SHORT_LOCK_WAIT_MS): Promise<T> {
  await ensureRealDir(ctx.store.paths.locks);
  const taken = await tryLock(join(ctx.store.paths.locks, `apply-${t.dev}-${t.ino}.lock`), {
    kind: 'apply',
    purpose: `apply into ${t.dir}`,
    wait: { timeoutMs: waitMs },
  });
  if (!taken.lock)
    throw new PdbError('E_LEASE_BUSY', `another apply into ${t.dir} is running (process ${taken.holder?.pid ?? '?'})`, {
      hint: 'One apply per directory at a time: wait for it to finish, then apply again.',
    });
  try {
    return await fn();
  } finally {
    await taken.lock.release();
  }
}
