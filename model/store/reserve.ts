// Room gc can always have: a few small files the store keeps aside (`<store>/reserve/`), so a gc on a
// filesystem out of inodes or blocks can take its locks, change the object generation and move
// objects aside before anything is freed (issue 41: gc exited 1 with E_NO_SPACE on a full store,
// the one time it was needed). gc releases the reserve first and makes it again once it has swept.
// 8 files of 16 KiB: gc's writes before its sweep frees anything take 4 inodes and 5 blocks at most
// (the store lock, the sweep lease, the generation's temp file, the trash directory).
import { closeSync, constants, lstatSync, mkdirSync, openSync, readdirSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export const RESERVE_DIR = 'reserve';
const FILES = 8;
const BYTES = 16 * 1024;

/** Make (or complete) the reserve; best effort: a store too full for it still works, gc then just has less room. */
export function makeReserve(storeRoot: string): boolean {
  const dir = join(storeRoot, RESERVE_DIR);
  try {
    mkdirSync(dir, { recursive: true });
    if (!lstatSync(dir).isDirectory()) return false;
    for (let i = 0; i < FILES; i++) {
      const fd = openSync(join(dir, String(i)), constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
      try {
        // Real blocks, not a hole: written, so freeing them frees room.
        writeSync(fd, Buffer.alloc(BYTES, 0x5a), 0, BYTES, 0);
      } finally {
        closeSync(fd);
      }
    }
    return true;
  } catch {
    return false;
  }
}

/** Free the reserve's inodes and blocks (its files, then the directory); never follows a link put in its place. */
export function releaseReserve(storeRoot: string): void {
  const dir = join(storeRoot, RESERVE_DIR);
  const st = lstatSync(dir, { throwIfNoEntry: false });
  if (!st?.isDirectory()) return;
  for (const name of readdirSync(dir)) if (/^[0-9]+$/.test(name)) unlinkSafe(join(dir, name));
}

function unlinkSafe(file: string): void {
  try {
    unlinkSync(file); // unlink removes a link itself, never its target
  } catch {
    // gone meanwhile: what matters is that it is not taking room
  }
}
