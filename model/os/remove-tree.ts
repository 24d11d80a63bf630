import { chmod, readdir, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { osErrorCode } from '../errors.js';

/** Failures of a path walk that a walk by directory handles does not have (a tree deeper than PATH_MAX, or than the stack). */
const TOO_DEEP = new Set(['ENAMETOOLONG', 'ELOOP']);

/**
 * Remove a directory tree we own, making read-only directories writable when unlink is refused
 * (an agent may chmod a directory 0555). `rm` unlinks symlinks; it never follows them. A tree too
 * deep for paths (issue 41: a 10,000-level tree made in a session failed discard and every later
 * gc with ENAMETOOLONG) is removed by directory handles instead (model/os/dir-handle.ts rmTreeAt:
 * one name per call, relative to a handle, so no path grows with the depth).
 */
export async function removeTree(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true });
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
      await rm(dir, { recursive: true, force: true });
    } catch (again) {
      if (osErrorCode(again) === 'ENOENT') return;
      await removeByHandles(dir);
    }
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
