import { chmod, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { osErrorCode } from '../errors.js';

/**
 * Remove a directory tree we own, making read-only directories writable when unlink is refused
 * (an agent may chmod a directory 0555). `rm` unlinks symlinks; it never follows them.
 */
export async function removeTree(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true });
  } catch (err) {
    if (osErrorCode(err) !== 'EACCES' && osErrorCode(err) !== 'EPERM') throw err;
    const fix = async (d: string): Promise<void> => {
      await chmod(d, 0o755).catch(() => {});
      for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) if (e.isDirectory()) await fix(join(d, e.name));
    };
    await fix(dir);
    await rm(dir, { recursive: true, force: true });
  }
}
