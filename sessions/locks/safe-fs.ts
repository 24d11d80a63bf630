// Filesystem steps inside the store that never follow a symlink: a lease or lock directory
// replaced by a link is removed as a link (its target untouched), and an entry is removed by what
// lstat says it is.
import { lstatSync, mkdirSync, unlinkSync } from 'node:fs';
import { lstat, unlink } from 'node:fs/promises';
import { osErrorCode, toPdbError } from '../../model/errors.js';
import { removeTree } from '../../model/os/remove-tree.js';

/**
 * Make `dir` a real directory: made when missing (its parent must exist: ENOENT is thrown as it
 * is, so a caller can tell "the session is gone"); a symlink or file in its place is unlinked
 * first. Returns false when the parent is gone.
 */
export async function ensureRealDir(dir: string): Promise<boolean> {
  let st;
  try {
    st = lstatSync(dir);
  } catch (err) {
    if (osErrorCode(err) !== 'ENOENT') throw toPdbError(err, 'E_IO', { action: 'checking a store directory', path: dir });
  }
  if (st?.isDirectory()) return true;
  try {
    if (st) unlinkSync(dir); // a link or a file planted where a directory belongs: removed itself, never followed
    mkdirSync(dir);
    return true;
  } catch (err) {
    const code = osErrorCode(err);
    if (code === 'EEXIST') return ensureRealDir(dir); // a racing process made it
    if (code === 'ENOENT') return false;
    throw toPdbError(err, 'E_IO', { action: 'making a store directory', path: dir });
  }
}

/** Remove whatever is at `path` without following it: a directory tree, or a link or file itself. */
export async function removeEntry(path: string): Promise<void> {
  const st = await lstat(path).catch((err: unknown) => {
    if (osErrorCode(err) === 'ENOENT') return null;
    throw err;
  });
  try {
    if (st?.isDirectory()) await removeTree(path);
    else if (st) await unlink(path);
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') return;
    throw toPdbError(err, 'E_IO', { action: 'removing', path });
  }
}
