import { chmod, lstat, readdir, rmdir, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { osErrorCode } from '../errors.js';

/** Failures of a path walk that a walk by directory handles does not have (a tree deeper than PATH_MAX, or than the stack). */
const TOO_DEEP = new Set(['ENAMETOOLONG', 'ELOOP']);

/**
 * Remove a directory tree we own, making read-only directories writable when unlink is refused
 * (an agent may chmod a directory 0555). Links are unlinked, never followed. A tree too
 * deep for paths (issue 41: a 10,000-level tree made in a session failed discard and every later
 * gc with ENAMETOOLONG) is removed by directory handles instead (model/os/dir-handle.ts rmTreeAt:
 * one name per call, relative to a handle, so no path grows with the depth).
 */
export async function removeTree(dir: string): Promise<void> {
  try {
    await removeBounded(dir);
  } catch (err) {
    const code = osErrorCode(err);
    if (TOO_DEEP.has(code ?? '') || err instanceof RangeError) return removeByHandles(dir);
    if (code !== 'EACCES' && code !== 'EPERM') throw err;
    const fix = async (d: string, depth: number): Promise<void> => {
      if (depth > 256) return; // deeper: the handle walk below makes its directories writable itself
      await chmod(d, 0o755).catch(() => {});
      for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) if (e.isDirectory()) await fix(join(d, e.name), depth + 1);
    };
    await fix(dir, 0);
    try {
      await removeBounded(dir);
    } catch (again) {
      if (osErrorCode(again) === 'ENOENT') return;
      await removeByHandles(dir);
    }
  }
}

/**
 * Node 20's `fs.promises.rm` starts an lstat for every child of every directory it has listed, so
 * the whole tree is in flight at once: removing a 268,753-entry session grew the harness's heap by
 * about 200 MB and its RSS by 325 MB, to 771 MB (issue 38). Here a directory's files are unlinked REMOVE_WIDTH at a time and its
 * subdirectories emptied one after another, by at most REMOVE_LANES walks at once, so memory grows
 * with the widest directory and the depth, never with the tree.
 */
const REMOVE_WIDTH = 16;
const REMOVE_LANES = 4;

const gone = (err: unknown) => {
  if (osErrorCode(err) !== 'ENOENT') throw err;
};

/** `path` and everything below it, as `rm -rf` removes it: a missing path is no error. */
async function removeBounded(path: string): Promise<void> {
  const st = await lstat(path).catch((err: unknown) => gone(err));
  if (!st) return;
  if (st.isDirectory()) await removeDir(path, { lanes: 1 });
  else await unlink(path).catch(gone);
}

async function removeDir(dir: string, walks: { lanes: number }): Promise<void> {
  const dirs: string[] = [];
  const others: string[] = [];
  for (const d of await readdir(dir, { withFileTypes: true }).catch((err: unknown) => (gone(err), [])))
    (d.isDirectory() ? dirs : others).push(d.name);
  for (let i = 0; i < others.length; i += REMOVE_WIDTH)
    await settled(others.slice(i, i + REMOVE_WIDTH).map((name) => unlinkEntry(join(dir, name), walks)));
  let next = 0;
  const lane = async () => {
    while (next < dirs.length) await removeDir(join(dir, dirs[next++]!), walks);
  };
  const lanes = [lane()];
  for (; walks.lanes < REMOVE_LANES && lanes.length < dirs.length; walks.lanes++) lanes.push(lane().finally(() => walks.lanes--));
  await settled(lanes);
  await rmdir(dir).catch(gone);
}

/** Wait for every call, then throw the first failure: none is left running behind an error. */
async function settled(calls: Promise<void>[]): Promise<void> {
  for (const r of await Promise.allSettled(calls)) if (r.status === 'rejected') throw r.reason;
}

/** A non-directory as listed; one that became a directory since is removed as one. */
async function unlinkEntry(path: string, walks: { lanes: number }): Promise<void> {
  try {
    await unlink(path);
  } catch (err) {
    if (osErrorCode(err) === 'EISDIR') return removeDir(path, walks);
    gone(err);
  }
}

async function removeByHandles(dir: string): Promise<void> {
  const { closeDir, openRoot, rmTreeAt } = await import('./dir-handle.js');
  const parent = openRoot(dirname(dir));
  try {
    rmTreeAt(parent, basename(dir));
  } finally {
    closeDir(parent);
  }
}
