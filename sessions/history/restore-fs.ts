// The file operations of a restore, in one module. A restore makes the session root hold exactly
// a Snapshot's entries, writing only the paths that differ:
//   1. stage: every file and symlink to be written is copied out of the store into
//      ROOT/.pdb/restore-<id>/ (pdb-env's staging, as apply's; on the root's filesystem, so each
//      move into place is a rename), hashed on the way out (copy-out.ts). A corrupt or missing
//      object fails here, before anything of the tree changed;
//   2. remove what the target does not have (or has as another kind), deepest first;
//   3. make the target's new directories, shallowest first;
//   4. rename each staged entry into place (atomic per path: a reader sees old or new bytes).
// Steps 2-4 go through directory handles (model/os/dir-handle.ts): each parent is opened from the
// root component by component without following a link, so a component swapped for a link fails
// (ELOOP, ENOTDIR) instead of sending a write out of the root.
// Each step compares with the target, so running it again on a half-restored tree finishes it.
import { lstat, mkdir, rmdir, symlink, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { PdbError, osErrorCode, toPdbError } from '../../model/errors.js';
import {
  closeDir,
  mkdirAt,
  openDirAt,
  openParentAt,
  openRoot,
  renameAt,
  rmdirAt,
  unlinkAt,
  type DirHandle,
} from '../../model/os/dir-handle.js';
import { removeTree } from '../../model/os/remove-tree.js';
import type { ProgressFn } from '../../model/progress.js';
import type { ObjectStore } from '../../model/store/object-store.js';
import { comparePaths, type Change } from '../../model/snapshot.js';
import { copyObjectsOut, type ObjectCopy } from '../way-back/copy-out.js';
import { changeCounts } from './log.js';

export const RESTORE_STAGING_ROOT = '.pdb';

/** ROOT/.pdb/restore-<id>: where a restore stages its bytes. */
export function restoreStaging(root: string, id: string): string {
  return join(root, RESTORE_STAGING_ROOT, `restore-${id}`);
}

export interface TreeWrite {
  /** Files and symlinks written, entries removed, directories made. */
  written: number;
  removed: number;
  made: number;
  /** Directories the target does not have that still hold what no scan sees (excluded names): left in place. */
  kept: string[];
  /** Paths added, modified and deleted from the tree before to the target. */
  counts: { added: number; modified: number; deleted: number };
}

const ioError = (err: unknown, action: string, path: string) => toPdbError(err, 'E_IO', { action, path });

/** A directory that is pdb-env's own (made if missing): not a link, on the root's device. */
async function ownDir(root: string, dir: string): Promise<void> {
  await mkdir(dir).catch((err: unknown) => {
    if (osErrorCode(err) !== 'EEXIST') throw ioError(err, 'making the staging of the restore', dir);
  });
  const [st, rt] = await Promise.all([lstat(dir), lstat(root)]);
  if (!st.isDirectory() || st.dev !== rt.dev)
    throw new PdbError(
      'E_BAD_PATH',
      `${dir} is not a directory of the session root's filesystem: the restore stages only there and never follows a link`,
      {
        path: dir,
        hint: `Move ${dir} away, then restore again (pdb-env gc finishes an interrupted restore).`,
      },
    );
}

/** Remove a restore's staging, and ROOT/.pdb once it is empty (best effort for the latter). */
export async function removeRestoreStaging(root: string, id: string): Promise<void> {
  const dir = restoreStaging(root, id);
  const st = await lstat(dir).catch(() => null);
  if (st?.isDirectory()) await removeTree(dir);
  else if (st) await unlink(dir);
  await rmdir(join(root, RESTORE_STAGING_ROOT)).catch(() => undefined); // not empty (an apply's, a user's) or gone
}

/** Copy the files and links of `put` out of the store into the staging, named by their index; files hashed on the way. */
async function stage(store: ObjectStore, root: string, staging: string, put: readonly Change[], onProgress?: ProgressFn): Promise<void> {
  await ownDir(root, join(root, RESTORE_STAGING_ROOT));
  await ownDir(root, staging);
  const files: ObjectCopy[] = [];
  for (const [i, c] of put.entries()) {
    const e = c.after!;
    await unlink(join(staging, String(i))).catch(() => undefined); // a copy from a run that was killed
    if (e.kind === 'file') files.push({ path: e.path, digest: e.digest, size: e.size, exec: e.exec, name: String(i) });
    else if (e.kind === 'symlink')
      await symlink(e.target, join(staging, String(i))).catch((err: unknown) => {
        throw ioError(err, `staging ${e.path}`, staging);
      });
  }
  await copyObjectsOut(store, staging, files, onProgress);
}

/** Steps 2-4 of the module comment, through directory handles; counts into `out`, `wrote` after each write. */
function moveIntoPlace(
  root: string,
  id: string,
  changes: readonly Change[],
  put: readonly Change[],
  out: TreeWrite,
  wrote: () => void,
): void {
  const rootH = openRoot(root);
  const stagingH = put.length ? openDirAt(rootH, `${RESTORE_STAGING_ROOT}/restore-${id}`, { sameDevice: true }) : null;
  /** Run `fn` on the parent handle of `rel` and its last name; false when the parent is gone. */
  const inParent = (rel: string, fn: (dir: DirHandle, name: string) => void): boolean => {
    let at: { dir: DirHandle; name: string };
    try {
      at = openParentAt(rootH, rel);
    } catch (err) {
      if (osErrorCode(err) === 'ENOENT') return false;
      throw ioError(err, `opening the directory of ${rel}`, join(root, rel));
    }
    try {
      fn(at.dir, at.name);
      return true;
    } finally {
      if (at.dir !== rootH) closeDir(at.dir);
    }
  };
  try {
    // Removed: what the target lacks or has as another kind, children before their directory.
    const gone = changes.filter((c) => c.before && (!c.after || c.after.kind !== c.before.kind)).reverse();
    for (const c of gone) {
      try {
        if (inParent(c.path, (dir, name) => (c.before!.kind === 'dir' ? rmdirAt(dir, name) : unlinkAt(dir, name)))) {
          out.removed++;
          wrote();
        }
      } catch (err) {
        const code = osErrorCode(err);
        if (code === 'ENOENT') continue;
        if (code === 'ENOTEMPTY' || code === 'EEXIST') {
          out.kept.push(c.path); // holds excluded entries, which no Snapshot has: never deleted
          continue;
        }
        throw ioError(err, `removing ${c.path} for the restore`, join(root, c.path));
      }
    }
    const dirs = changes.filter((c) => c.after?.kind === 'dir').sort((a, b) => comparePaths(a.path, b.path));
    for (const c of dirs) {
      try {
        inParent(c.path, (dir, name) => mkdirAt(dir, name));
      } catch (err) {
        if (osErrorCode(err) !== 'EEXIST') throw ioError(err, `making ${c.path} for the restore`, join(root, c.path));
      }
      out.made++;
      wrote();
    }
    for (const [i, c] of put.entries()) {
      try {
        if (!inParent(c.path, (dir, name) => renameAt(stagingH!, String(i), dir, name)))
          throw Object.assign(new Error(`the directory of ${c.path} is missing`), { code: 'ENOENT' });
      } catch (err) {
        throw ioError(err, `putting ${c.path} in place`, join(root, c.path));
      }
      out.written++;
      wrote();
    }
  } finally {
    closeDir(stagingH);
    closeDir(rootH);
  }
}

/**
 * Make `root` hold the target where it differs: `changes` (sorted by path) go from the tree in the
 * root (as last scanned) to the target; see the module comment.
 */
export async function writeTree(
  store: ObjectStore,
  root: string,
  id: string,
  changes: readonly Change[],
  hooks: { afterStage?: () => void; afterFirstWrite?: () => void; onProgress?: ProgressFn } = {},
): Promise<TreeWrite> {
  const out: TreeWrite = { written: 0, removed: 0, made: 0, kept: [], counts: changeCounts(changes) };
  if (changes.length === 0) return out;
  const put = changes.filter((c) => c.after && c.after.kind !== 'dir');
  if (put.length) await stage(store, root, restoreStaging(root, id), put, hooks.onProgress);
  hooks.afterStage?.();
  let first = true;
  const wrote = () => {
    if (first) hooks.afterFirstWrite?.();
    first = false;
  };
  moveIntoPlace(root, id, changes, put, out, wrote);
  await removeRestoreStaging(root, id);
  return out;
}
