// Worker thread for the byte-heavy inner loops (hash, install, copy). Blocking syscalls in a few
// threads beat thousands of promise round-trips through libuv's pool for trees of small files.
import {
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  fchmodSync,
  fstatSync,
  lstatSync,
  openSync,
  readSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { tempEntryName } from '../os/temp-name.js';
import { nodeCrypto, sha256Hex } from '../os/hash.js';
import { statSignature } from './tree-index.js';

/** A verified copy: the object at `src` is copied to `dst` and must hash to `hex` (its digest without "sha256:"). */
export type CopyItem = [src: string, dst: string, mode: number, hex: string];

/** A forced clone (FICLONE): the base file at `src` cloned to `dst`, never copied. */
export type CloneItem = [src: string, dst: string];

export type FsTask =
  | { op: 'hash'; paths: string[] }
  | { op: 'install'; paths: string[]; objectsDir: string; tmpDir: string }
  | { op: 'copy'; items: CopyItem[] }
  | { op: 'clone'; items: CloneItem[] };

/**
 * A failed task names its code and path. Two codes are the worker's own: ECORRUPT (an object's
 * bytes did not hash to its name while they were copied) and EOBJMISSING (the object is absent);
 * for both, `object` is the object file and `path` the destination.
 */
export type FsTaskResult =
  | { ok: true; results: Array<{ digest: string; size: number; installed?: boolean; sig?: string } | null> }
  | { ok: false; error: { message: string; code?: string; path?: string; object?: string } };

const CHUNK = 1 << 20;
const buffer = Buffer.allocUnsafe(CHUNK);
let tmpCounter = 0;

function writeAll(fd: number, buf: Buffer, length: number): void {
  let off = 0;
  while (off < length) off += writeSync(fd, buf, off, length - off);
}

function hashFile(path: string): { digest: string; size: number } {
  const fd = openSync(path, 'r');
  try {
    const h = nodeCrypto().createHash('sha256');
    let size = 0;
    for (;;) {
      const n = readSync(fd, buffer, 0, CHUNK, null);
      if (n === 0) break;
      h.update(buffer.subarray(0, n));
      size += n;
    }
    return { digest: h.digest('hex'), size };
  } finally {
    closeSync(fd);
  }
}

function objectPath(objectsDir: string, hex: string): string {
  return `${objectsDir}/${hex.slice(0, 2)}/${hex.slice(2)}`;
}

/**
 * Hash a file and install its bytes as an object if missing. A small file is read once; a large
 * one is hashed first and copied only when its object is missing (the common case at checkpoint
 * is an unchanged file whose object exists, and writing it to a temp file would double the I/O).
 */
function installFile(path: string, objectsDir: string, tmpDir: string): { digest: string; size: number; installed: boolean } {
  const fd = openSync(path, 'r');
  let n: number;
  try {
    n = readSync(fd, buffer, 0, CHUNK, null);
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  if (n < CHUNK) {
    try {
      // The addon's SHA-256 where it loads: node:crypto costs ~11 ms to load (model/os/hash.ts).
      const hex = sha256Hex(buffer.subarray(0, n));
      const dst = objectPath(objectsDir, hex);
      if (existsSync(dst)) return { digest: hex, size: n, installed: false };
      writeObject(dst, tmpDir, (out) => writeAll(out, buffer, n));
      return { digest: hex, size: n, installed: true };
    } finally {
      closeSync(fd);
    }
  }
  closeSync(fd);
  const { digest: hex, size } = hashFile(path);
  const dst = objectPath(objectsDir, hex);
  if (existsSync(dst)) return { digest: hex, size, installed: false };
  writeObject(dst, tmpDir, (out) => {
    const again = nodeCrypto().createHash('sha256');
    const fdIn = openSync(path, 'r');
    try {
      for (;;) {
        const m = readSync(fdIn, buffer, 0, CHUNK, null);
        if (m === 0) break;
        again.update(buffer.subarray(0, m));
        writeAll(out, buffer, m);
      }
    } finally {
      closeSync(fdIn);
    }
    if (again.digest('hex') !== hex) {
      const e = new Error(`${path} changed while it was read`) as NodeJS.ErrnoException;
      e.code = 'ECHANGED';
      throw e;
    }
  });
  return { digest: hex, size, installed: true };
}

/** Write an object through a temp file in the store and rename it into place (atomic). */
function writeObject(dst: string, tmpDir: string, fill: (fd: number) => void): void {
  const tmp = `${tmpDir}/${tempEntryName('obj', `${(tmpCounter++).toString(36)}z${Math.random().toString(36).slice(2)}`)}`;
  const out = openSync(tmp, 'wx', 0o444);
  try {
    fill(out);
    closeSync(out);
    renameSync(tmp, dst);
  } catch (err) {
    try {
      closeSync(out);
    } catch {
      /* already closed */
    }
    try {
      unlinkSync(tmp);
    } catch {
      /* already gone */
    }
    throw err;
  }
}

function objectError(code: 'ECORRUPT' | 'EOBJMISSING', message: string, object: string): NodeJS.ErrnoException {
  const e = new Error(message) as NodeJS.ErrnoException & { object: string };
  e.code = code;
  e.object = object;
  return e;
}

/**
 * Explicit userspace read/write: never copy_file_range, which clones silently on btrfs and XFS.
 * The bytes are hashed as they pass (the read is paid for anyway), so an object whose bytes no
 * longer match its name fails the copy instead of landing in a session.
 */
function copyFile(src: string, dst: string, mode: number, hex: string, umask: number): { digest: string; size: number; sig: string } {
  let fdIn: number;
  try {
    fdIn = openSync(src, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw objectError('EOBJMISSING', `object sha256:${hex} is missing`, src);
    throw err;
  }
  try {
    const h = nodeCrypto().createHash('sha256');
    const fdOut = openSync(dst, 'wx', mode);
    let sig: string;
    let size = 0;
    try {
      for (;;) {
        const n = readSync(fdIn, buffer, 0, CHUNK, null);
        if (n === 0) break;
        h.update(buffer.subarray(0, n));
        writeAll(fdOut, buffer, n);
        size += n;
      }
      if ((umask & mode) !== 0) fchmodSync(fdOut, mode);
      // The signature the session's tree index records: the first checkpoint trusts it (racy rule permitting).
      sig = statSignature(fstatSync(fdOut));
    } finally {
      closeSync(fdOut);
    }
    const got = h.digest('hex');
    if (got !== hex) throw objectError('ECORRUPT', `object sha256:${hex} holds bytes that hash to sha256:${got}`, src);
    return { digest: got, size, sig };
  } finally {
    closeSync(fdIn);
  }
}

/** A forced clone (ioctl FICLONE; libuv copies the mode bits): a filesystem that cannot clone fails, nothing is copied. */
function cloneFile(src: string, dst: string): { digest: string; size: number; sig: string } {
  copyFileSync(src, dst, constants.COPYFILE_FICLONE_FORCE | constants.COPYFILE_EXCL);
  const st = lstatSync(dst);
  return { digest: '', size: st.size, sig: statSignature(st) };
}

export function runFsTask(task: FsTask, umask: number): FsTaskResult {
  let current: string | undefined;
  try {
    switch (task.op) {
      case 'hash':
        return { ok: true, results: task.paths.map((p) => ((current = p), hashFile(p))) };
      case 'install':
        return { ok: true, results: task.paths.map((p) => ((current = p), installFile(p, task.objectsDir, task.tmpDir))) };
      case 'copy':
        return { ok: true, results: task.items.map(([src, dst, mode, hex]) => ((current = dst), copyFile(src, dst, mode, hex, umask))) };
      case 'clone':
        return { ok: true, results: task.items.map(([src, dst]) => ((current = dst), cloneFile(src, dst))) };
      default: {
        const never: never = task;
        throw new Error(`unknown task ${JSON.stringify(never)}`);
      }
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { object?: string };
    return { ok: false, error: { message: e.message, code: e.code, path: current, object: e.object } };
  }
}
