// Installing one immutable object file: written under the store's tmp dir, read-only, renamed into
// place (the same filesystem, so a reader sees all of it or nothing). Whole objects
// (object-store.ts installWhole) and deflated chunks (deflated.ts) are installed so.
import { closeSync, mkdirSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { osErrorCode, toPdbError } from '../errors.js';
import { tempPath } from '../os/temp-name.js';

/**
 * Write all of `data` (one buffer, or pieces in order) at the file's offset in pieces of at most
 * 512 KiB: one write of several MiB was measured 10x slower than the same bytes in pieces (15-30
 * ms against 1-2 ms for 5 MB here).
 */
export function writeAll(fd: number, data: string | Buffer | readonly Buffer[]): void {
  if (Array.isArray(data)) {
    for (const piece of data as readonly Buffer[]) writeAll(fd, piece);
    return;
  }
  const buf = typeof data === 'string' ? Buffer.from(data) : (data as Buffer);
  for (let off = 0; off < buf.length;) off += writeSync(fd, buf, off, Math.min(buf.length - off, 1 << 19));
}

/**
 * Install `bytes` as the read-only file `dst` (object `digest`, for the error): a temp file named
 * for `kind` in `tmpDir`, renamed over `dst`; the directory of `dst` is made when it is missing
 * (`makeDir`). Every failure is typed E_IO naming `dst`, the temp file removed.
 */
export function installFile(tmpDir: string, kind: string, dst: string, bytes: Buffer, digest: string, makeDir = false): void {
  const tmp = tempPath(tmpDir, kind);
  try {
    const fd = openSync(tmp, 'wx', 0o444);
    try {
      writeAll(fd, bytes);
    } finally {
      closeSync(fd);
    }
    try {
      renameSync(tmp, dst);
    } catch (err) {
      if (!makeDir || osErrorCode(err) !== 'ENOENT') throw err;
      mkdirSync(dirname(dst), { recursive: true });
      renameSync(tmp, dst);
    }
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // rollback of our own temp file
    }
    throw toPdbError(err, 'E_IO', { action: `installing object ${digest}`, path: dst });
  }
}
