// Worker thread for the byte-heavy inner loops (hash, install, copy). Blocking syscalls in a few
// threads beat thousands of promise round-trips through libuv's pool for trees of small files.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, fchmodSync, openSync, readSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';

export type FsTask =
  | { op: 'hash'; paths: string[] }
  | { op: 'install'; paths: string[]; objectsDir: string; tmpDir: string }
  | { op: 'copy'; items: Array<[src: string, dst: string, mode: number]> };

export type FsTaskResult =
  | { ok: true; results: Array<{ digest: string; size: number; installed?: boolean } | null> }
  | { ok: false; error: { message: string; code?: string; path?: string } };

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
    const h = createHash('sha256');
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
      const hex = createHash('sha256').update(buffer.subarray(0, n)).digest('hex');
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
    const again = createHash('sha256');
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
  const tmp = `${tmpDir}/obj-${process.pid}-${tmpCounter++}-${Math.random().toString(36).slice(2)}`;
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

/** Explicit userspace read/write: never copy_file_range, which clones silently on btrfs and XFS. */
function copyFile(src: string, dst: string, mode: number, umask: number): void {
  const fdIn = openSync(src, 'r');
  try {
    const fdOut = openSync(dst, 'wx', mode);
    try {
      for (;;) {
        const n = readSync(fdIn, buffer, 0, CHUNK, null);
        if (n === 0) break;
        writeAll(fdOut, buffer, n);
      }
      if ((umask & mode) !== 0) fchmodSync(fdOut, mode);
    } finally {
      closeSync(fdOut);
    }
  } finally {
    closeSync(fdIn);
  }
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
        for (const [src, dst, mode] of task.items) {
          current = dst;
          copyFile(src, dst, mode, umask);
        }
        return { ok: true, results: [] };
      default: {
        const never: never = task;
        throw new Error(`unknown task ${JSON.stringify(never)}`);
      }
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return { ok: false, error: { message: e.message, code: e.code, path: current } };
  }
}

if (parentPort) {
  const port = parentPort;
  port.on('message', (msg: { id: number; task: FsTask; umask: number }) => {
    port.postMessage({ id: msg.id, result: runFsTask(msg.task, msg.umask) });
  });
}
