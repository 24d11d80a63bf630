// The calls of model/os/dir-handle.ts (which says what they guarantee), in each of its three ways:
// the addon's *at calls, /proc/self/fd paths, or checked paths. Import them from dir-handle.ts.
import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  realpathSync,
  renameSync,
  rmdirSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';
import { loadNativeAddon, osError } from './native.js';
import { nodeCrypto } from './hash.js';

/** A directory opened without following a link: the descriptor, the path it was opened by (messages; the path way), device and inode. */
export interface DirHandle {
  readonly fd: number;
  readonly path: string;
  readonly dev: bigint;
  readonly ino: bigint;
}

/** What is at a name in a directory, not following a link. */
export interface AtStat {
  mode: number;
  dev: bigint;
  ino: bigint;
  size: number;
  nlink: number;
  isDirectory(): boolean;
  isFile(): boolean;
  isSymbolicLink(): boolean;
}

export type DirHandleWay = 'native' | 'proc' | 'path';

interface NativeAt {
  openAt(dirfd: number, name: string, flags: number, mode: number): number;
  statAt(dirfd: number, name: string): number | { mode: number; dev: bigint; ino: bigint; size: number; nlink: number };
  renameAt(fromFd: number, from: string, toFd: number, to: string, flags: number): number;
  linkAt(fromFd: number, from: string, toFd: number, to: string): number;
  unlinkAt(dirfd: number, name: string, isDir: number): number;
  mkdirAt(dirfd: number, name: string, mode: number): number;
  symlinkAt(target: string, dirfd: number, name: string): number;
  readlinkAt(dirfd: number, name: string): number | Buffer;
  listAt(dirfd: number): number | Buffer[];
}

export const E = osConstants.errno;
export const O_DIR = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const RENAME_NOREPLACE = 1;
const RENAME_EXCHANGE = 2;

function nativeAt(): NativeAt | null {
  if (process.env.PDB_ENV_NATIVE_OS === 'off') return null;
  const a = loadNativeAddon().addon as Partial<NativeAt> | null;
  return a && typeof a.openAt === 'function' && typeof a.listAt === 'function' ? (a as NativeAt) : null;
}

let procOk: boolean | undefined;
export const hasProc = () =>
  (procOk ??= process.platform === 'linux' && statSync('/proc/self/fd', { throwIfNoEntry: false })?.isDirectory() === true);

/** Which way the calls are made here (read each time: tests switch it). */
export function dirHandleWay(): DirHandleWay {
  const forced = process.env.PDB_ENV_DIR_HANDLES;
  if (forced === 'native' && nativeAt()) return 'native';
  if (forced === 'proc' && hasProc()) return 'proc';
  if (forced === 'path') return 'path';
  return nativeAt() ? 'native' : hasProc() ? 'proc' : 'path';
}

const statOf = (s: { mode: number; dev: bigint; ino: bigint; size: number | bigint; nlink: number | bigint }): AtStat => {
  const type = Number(s.mode) & constants.S_IFMT;
  return {
    mode: Number(s.mode),
    dev: BigInt(s.dev),
    ino: BigInt(s.ino),
    size: Number(s.size),
    nlink: Number(s.nlink),
    isDirectory: () => type === constants.S_IFDIR,
    isFile: () => type === constants.S_IFREG,
    isSymbolicLink: () => type === constants.S_IFLNK,
  };
};

// Concatenated, not join()ed: join normalizes the whole string, which made each call of a 10,000-level removal O(depth) (21 s, against 1 s).
const where = (h: DirHandle, name: string) => (name ? `${h.path}/${name}` : h.path);

function check(err: number, h: DirHandle, name: string, syscall: string): void {
  if (err !== 0) throw osError(err, where(h, name), syscall);
}

/** One name in a directory: no '/', not '' (but '..' for rmTreeAt's climb), nothing a path could make more of. */
function assertName(name: string): void {
  if (!name || name.includes('/') || name.includes('\0') || name === '.') throw osError(E.EINVAL, name, 'a name in a directory handle');
}

/** The handle's directory as a path for Node's path calls (proc: the descriptor's own; path: checked first). */
export function handlePath(h: DirHandle): string {
  if (dirHandleWay() !== 'path') return hasProc() ? `/proc/self/fd/${h.fd}` : h.path;
  verify(h);
  return h.path;
}

/** The path way: the handle's path must still lead, without a link, to the handle's directory. */
function verify(h: DirHandle): void {
  let st;
  let real = '';
  try {
    st = lstatSync(h.path, { bigint: true });
    real = realpathSync(h.path);
  } catch (err) {
    throw osError(E.ESTALE, h.path, `checking the directory (${(err as Error).message})`);
  }
  if (!st.isDirectory() || st.dev !== h.dev || st.ino !== h.ino || real !== h.path)
    throw osError(E.ESTALE, h.path, 'the directory was moved or a component replaced');
}

/** Run a path call of the fallback ways on `name` in `h`. */
export function viaPath<T>(h: DirHandle, name: string, call: (p: string) => T): T {
  const way = dirHandleWay();
  if (way === 'proc') return call(`/proc/self/fd/${h.fd}/${name}`);
  verify(h);
  const out = call(join(h.path, name));
  verify(h);
  return out;
}

function handleOf(fd: number, path: string): DirHandle {
  const st = fstatSync(fd, { bigint: true });
  return { fd, path, dev: st.dev, ino: st.ino };
}

/**
 * Open `dir` itself as a handle. Its last component is not followed (a link there is ELOOP);
 * components above it are, so name it by its real path when that matters.
 */
export function openRoot(dir: string): DirHandle {
  const fd = openSync(dir, O_DIR);
  return handleOf(fd, dir);
}

/**
 * Open the directory `rel` below `h` ('a' or 'a/b/c'), each component from the one before without
 * following a link (ELOOP or ENOTDIR); with `sameDevice`, a component on another filesystem (a
 * mount) is EXDEV.
 */
export function openDirAt(h: DirHandle, rel: string, options: { sameDevice?: boolean } = {}): DirHandle {
  if (rel === '.') return openOne(h, '.');
  const parts = rel.split('/');
  let cur = h;
  try {
    for (const part of parts) {
      if (part !== '..') assertName(part);
      const next = openOne(cur, part);
      if (cur !== h) closeDir(cur);
      cur = next;
      if (options.sameDevice && cur.dev !== h.dev) throw osError(E.EXDEV, cur.path, 'opening a directory (a mount)');
    }
  } catch (err) {
    if (cur !== h) closeDir(cur);
    throw err;
  }
  return cur;
}

export function openOne(h: DirHandle, name: string, named?: string): DirHandle {
  const n = nativeAt();
  const path = named ?? (name === '.' ? h.path : where(h, name));
  if (dirHandleWay() === 'native' && n) {
    const fd = n.openAt(h.fd, name, O_DIR, 0);
    if (fd < 0) throw osError(-fd, path, 'openat');
    return handleOf(fd, path);
  }
  return handleOf(
    viaPath(h, name, (p) => openSync(p, O_DIR)),
    path,
  );
}

/** Close a handle (a second close is harmless). */
export function closeDir(h: DirHandle | null | undefined): void {
  if (!h || h.fd < 0) return;
  try {
    closeSync(h.fd);
  } catch {
    // already closed: nothing held
  }
  (h as { fd: number }).fd = -1;
}

/** What is at `name` in `h` (not following a link); null when nothing is (ENOENT). '' is the handle's directory itself. */
export function statAt(h: DirHandle, name: string): AtStat | null {
  if (name === '') return statOf(fstatSync(h.fd, { bigint: true }) as never);
  assertName(name);
  const n = nativeAt();
  if (dirHandleWay() === 'native' && n) {
    const r = n.statAt(h.fd, name);
    if (typeof r === 'number') {
      if (r === E.ENOENT) return null;
      throw osError(r, where(h, name), 'fstatat');
    }
    return statOf(r);
  }
  const st = viaPath(h, name, (p) => lstatSync(p, { bigint: true, throwIfNoEntry: false }));
  return st ? statOf(st as never) : null;
}

/** rename(2) from a name in one handle to a name in another (both may be the same); `noReplace` fails with EEXIST (native only; see linkAt). */
export function renameAt(from: DirHandle, fromName: string, to: DirHandle, toName: string, options: { noReplace?: boolean } = {}): void {
  assertName(fromName);
  assertName(toName);
  const n = nativeAt();
  if (dirHandleWay() === 'native' && n) {
    let err = n.renameAt(from.fd, fromName, to.fd, toName, options.noReplace ? RENAME_NOREPLACE : 0);
    // A filesystem without renameat2's flags: link(2) never replaces, so link then unlink.
    if (options.noReplace && (err === E.EINVAL || err === E.ENOSYS)) {
      linkAt(from, fromName, to, toName);
      err = n.unlinkAt(from.fd, fromName, 0);
    }
    return check(err, from, fromName, 'renameat');
  }
  if (options.noReplace) {
    linkAt(from, fromName, to, toName);
    return unlinkAt(from, fromName);
  }
  const target = viaPath(to, toName, (p) => p);
  viaPath(from, fromName, (p) => renameSync(p, target));
  if (dirHandleWay() === 'path') verify(to);
}

/** Swap two names atomically (renameat2 RENAME_EXCHANGE; native only, ENOSYS elsewhere): the fault tests' swap loop. */
export function exchangeAt(a: DirHandle, aName: string, b: DirHandle, bName: string): void {
  const n = nativeAt();
  if (!n) throw osError(E.ENOSYS, where(a, aName), 'renameat2');
  check(n.renameAt(a.fd, aName, b.fd, bName, RENAME_EXCHANGE), a, aName, 'renameat2');
}

/** link(2): a second name for the entry `fromName` (a symlink itself, never what it points to); EEXIST when `toName` is there. */
export function linkAt(from: DirHandle, fromName: string, to: DirHandle, toName: string): void {
  assertName(fromName);
  assertName(toName);
  const n = nativeAt();
  if (dirHandleWay() === 'native' && n) return check(n.linkAt(from.fd, fromName, to.fd, toName), to, toName, 'linkat');
  const target = viaPath(to, toName, (p) => p);
  viaPath(from, fromName, (p) => linkSync(p, target));
  if (dirHandleWay() === 'path') verify(to);
}

/** Remove the name of a file or symlink. */
export function unlinkAt(h: DirHandle, name: string): void {
  assertName(name);
  const n = nativeAt();
  if (dirHandleWay() === 'native' && n) return check(n.unlinkAt(h.fd, name, 0), h, name, 'unlinkat');
  viaPath(h, name, (p) => unlinkSync(p));
}

/** Remove an empty directory. */
export function rmdirAt(h: DirHandle, name: string): void {
  assertName(name);
  const n = nativeAt();
  if (dirHandleWay() === 'native' && n) return check(n.unlinkAt(h.fd, name, 1), h, name, 'unlinkat');
  viaPath(h, name, (p) => rmdirSync(p));
}

/** Make a directory (EEXIST when anything is there, a link included). */
export function mkdirAt(h: DirHandle, name: string, mode = 0o777): void {
  assertName(name);
  const n = nativeAt();
  if (dirHandleWay() === 'native' && n) return check(n.mkdirAt(h.fd, name, mode), h, name, 'mkdirat');
  viaPath(h, name, (p) => mkdirSync(p, { mode }));
}

/** Make a symlink `name` -> `target` (EEXIST when anything is there). */
export function symlinkAt(target: string, h: DirHandle, name: string): void {
  assertName(name);
  const n = nativeAt();
  if (dirHandleWay() === 'native' && n) return check(n.symlinkAt(target, h.fd, name), h, name, 'symlinkat');
  viaPath(h, name, (p) => symlinkSync(target, p));
}

/** A symlink's target. */
export function readlinkAt(h: DirHandle, name: string): string {
  assertName(name);
  const n = nativeAt();
  if (dirHandleWay() === 'native' && n) {
    const r = n.readlinkAt(h.fd, name);
    if (typeof r === 'number') throw osError(r, where(h, name), 'readlinkat');
    return r.toString('utf8');
  }
  return viaPath(h, name, (p) => readlinkSync(p));
}

/** The names in the handle's directory. */
export function listAt(h: DirHandle): string[] {
  const n = nativeAt();
  if (dirHandleWay() === 'native' && n) {
    const r = n.listAt(h.fd);
    if (typeof r === 'number') throw osError(r, h.path, 'readdir');
    return r.map((b) => b.toString('utf8'));
  }
  return dirHandleWay() === 'proc' ? readdirSync(`/proc/self/fd/${h.fd}`) : (verify(h), readdirSync(h.path));
}

/** Open a file in `h` without following a link (ELOOP for one): a descriptor for Node's fd calls; the caller closes it. */
export function openFileAt(h: DirHandle, name: string, flags: number = constants.O_RDONLY, mode = 0o666): number {
  assertName(name);
  const n = nativeAt();
  const f = flags | constants.O_NOFOLLOW;
  if (dirHandleWay() === 'native' && n) {
    const fd = n.openAt(h.fd, name, f, mode);
    if (fd < 0) throw osError(-fd, where(h, name), 'openat');
    return fd;
  }
  return viaPath(h, name, (p) => openSync(p, f, mode));
}

/** Write `data` into a new file `name` (EEXIST when anything is there, unless `exclusive: false`), synced. */
export function writeFileAt(
  h: DirHandle,
  name: string,
  data: string | Uint8Array,
  options: { mode?: number; exclusive?: boolean } = {},
): void {
  const flags = constants.O_WRONLY | constants.O_CREAT | (options.exclusive === false ? constants.O_TRUNC : constants.O_EXCL);
  const fd = openFileAt(h, name, flags, options.mode ?? 0o666);
  try {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    for (let off = 0; off < bytes.length;) off += writeSync(fd, bytes, off, bytes.length - off);
    if (options.mode !== undefined) fchmodSync(fd, options.mode); // the umask may have taken bits away
  } finally {
    closeSync(fd);
  }
}

// One read buffer for every hash (synchronous, so never shared by two at once).
let readBuffer: Buffer | undefined;

/** The SHA-256 (hex) of the regular file `name` in `h`, read without following a link; null when it is not a regular file. */
export function hashFileAt(h: DirHandle, name: string): string | null {
  let fd: number;
  try {
    fd = openFileAt(h, name, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOENT' || code === 'ENXIO') return null;
    throw err;
  }
  try {
    if (!fstatSync(fd).isFile()) return null;
    const hash = nodeCrypto().createHash('sha256');
    const buf = (readBuffer ??= Buffer.allocUnsafe(1 << 20));
    for (let n; (n = readSync(fd, buf, 0, buf.length, null)) > 0;) hash.update(buf.subarray(0, n));
    return hash.digest('hex');
  } finally {
    closeSync(fd);
  }
}

/**
 * The parent directory of `rel` (a '/'-separated path below `root`), opened component by
 * component without following a link and on root's device, and the last name. The caller closes
 * `dir`. Throws ELOOP/ENOTDIR (a component is a link or no directory), ENOENT, EXDEV (a mount).
 */
export function openParentAt(root: DirHandle, rel: string): { dir: DirHandle; name: string } {
  const cut = rel.lastIndexOf('/');
  const name = rel.slice(cut + 1);
  assertName(name);
  return { dir: cut < 0 ? openDirAt(root, '.') : openDirAt(root, rel.slice(0, cut), { sameDevice: true }), name };
}
