// The file operations of a restore, in one module. A restore makes the session root hold exactly
// a Snapshot's entries, writing only the paths that differ:
//   1. stage: every file and symlink to be written is copied out of the store into
//      ROOT/.pdb/restore-<id>/ (pdb-env's staging, as apply's; on the root's filesystem, so each
//      move into place is a rename), hashed on the way out (copy-out.ts). A corrupt or missing
//      object fails here, before anything of the tree changed;
//   2. remove what the target does not have (or has as another kind), deepest first;
//   3. make the target's new directories, shallowest first;
//   4. rename each staged entry into place (atomic per path: a reader sees old or new bytes).
// Every step goes through directory handles (model/os/dir-handle.ts): the staging and each parent
// are opened from the root component by component without following a link, so a component
// swapped for a link (ROOT/.pdb included) fails (ELOOP, ENOTDIR) instead of sending a write out
// of the root.
// Each step compares with the target, so running it again on a half-restored tree finishes it.
import { join } from 'node:path';
import { PdbError, osErrorCode, toPdbError } from '../../model/errors.js';
import {
  closeDir,
  handlePath,
  mkdirAt,
  openDirAt,
  openParentAt,
  openRoot,
  renameAt,
  rmdirAt,
  rmTreeAt,
  symlinkAt,
  unlinkAt,
  type DirHandle,
} from '../../model/os/dir-handle.js';
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

/**
 * The directory `name` in `parent` (made if missing), opened without following a link and on the
 * root's device: a link, a file or a mount in its place is E_BAD_PATH.
 */
function ownDir(parent: DirHandle, name: string, path: string): DirHandle {
  try {
    mkdirAt(parent, name);
  } catch (err) {
    if (osErrorCode(err) !== 'EEXIST') throw ioError(err, 'making the staging of the restore', path);
  }
  try {
    return openDirAt(parent, name, { sameDevice: true });
  } catch (err) {
    if (!['ELOOP', 'ENOTDIR', 'EXDEV'].includes(osErrorCode(err) ?? '')) throw ioError(err, 'opening the staging of the restore', path);
    throw new PdbError(
      'E_BAD_PATH',
      `${path} is not a directory of the session root's filesystem: the restore stages only there and never follows a link`,
      { path, hint: `Move ${path} away, then restore again (pdb-env gc finishes an interrupted restore).`, cause: err },
    );
  }
}

/** Remove a restore's staging, and ROOT/.pdb once it is empty (best effort for the latter); through handles, never a link. */
export async function removeRestoreStaging(root: string, id: string): Promise<void> {
  const rootH = openRoot(root);
  let pdbH: DirHandle | null = null;
  try {
    try {
      pdbH = openDirAt(rootH, RESTORE_STAGING_ROOT, { sameDevice: true });
    } catch (err) {
      if (osErrorCode(err) === 'ENOENT') return;
      throw ioError(err, 'opening the staging of the restore', join(root, RESTORE_STAGING_ROOT));
    }
    try {
      rmTreeAt(pdbH, `restore-${id}`);
    } catch (err) {
      if (osErrorCode(err) !== 'ENOENT') throw ioError(err, 'removing the staging of the restore', restoreStaging(root, id));
    }
    try {
      rmdirAt(rootH, RESTORE_STAGING_ROOT);
    } catch {
      // not empty (an apply's, a user's) or gone: left as it is
    }
  } finally {
    closeDir(pdbH);
    closeDir(rootH);
  }
}

/** Copy the files and links of `put` out of the store into the staging, named by their index; files hashed on the way. */
async function stage(store: ObjectStore, root: string, staging: string, put: readonly Change[], onProgress?: ProgressFn): Promise<void> {
  const rootH = openRoot(root);
  let pdbH: DirHandle | null = null;
  let h: DirHandle | null = null;
  try {
    pdbH = ownDir(rootH, RESTORE_STAGING_ROOT, join(root, RESTORE_STAGING_ROOT));
    h = ownDir(pdbH, staging.slice(staging.lastIndexOf('/') + 1), staging);
    const files: ObjectCopy[] = [];
    for (const [i, c] of put.entries()) {
      const e = c.after!;
      try {
        unlinkAt(h, String(i)); // a copy from a run that was killed
      } catch {
        // none there
      }
      if (e.kind === 'file') files.push({ path: e.path, digest: e.digest, size: e.size, exec: e.exec, name: String(i) });
      else if (e.kind === 'symlink')
        try {
          symlinkAt(e.target, h, String(i));
        } catch (err) {
          throw ioError(err, `staging ${e.path}`, staging);
        }
    }
    // Through the handle (/proc/self/fd/N): the staging as opened, wherever its name points now.
    await copyObjectsOut(store, handlePath(h), files, onProgress);
  } finally {
    closeDir(h);
    closeDir(pdbH);
    closeDir(rootH);
  }
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
