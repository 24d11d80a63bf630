// The mount table: /proc/self/mountinfo parsed in one place, and the look-ups every layer needs
// (the mount at a path, the mount holding a path, the mount points under a directory). Linux only:
// where there is no procfs (macOS) the table is empty, so nothing is mounted anywhere. Also the one
// way pdb-env mounts and unmounts: mount(2) and umount2(2) through the native addon, else the
// mount(8) and umount(8) programs.
import { readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { PdbError, osErrorCode, type PdbErrorCode } from '../errors.js';
import { realpathOr } from '../paths.js';
import { nativeOs, osError } from './native.js';

/** One line of /proc/self/mountinfo (proc(5)), paths with their octal escapes decoded. */
export interface MountEntry {
  /** Where it is mounted (field 5). */
  mountPoint: string;
  /** The directory of the filesystem mounted there (field 4; `/` unless a bind or subvolume mount). */
  root: string;
  /** The filesystem type, such as `btrfs`, `overlay` or `fuse.agentfs` (first field after the `-`). */
  fsType: string;
  /** The mount source: a device, or a FUSE filesystem's fsname such as `agentfs:<db>`. */
  source: string;
  /** Per-mount options (field 6: `rw`, `noatime`, ...). */
  mountOptions: string[];
  /** Per-superblock options (last field: `compress=zstd`, `lowerdir=...`), as the kernel prints them. */
  superOptions: string[];
}

/** Decode the octal escapes (`\040` for a space) that mountinfo uses in paths. */
export function unescapeMountPath(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

const options = (field: string | undefined): string[] => (field ?? '').split(',').filter(Boolean);

/** Parse mountinfo text; lines without the `-` separator after the six fixed fields are skipped. */
export function parseMountInfo(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    // Paths never hold a literal space (it is \040), so fields split on single spaces. Zero or
    // more optional fields (shared:N, master:N) sit between field 6 and the separator.
    const f = line.split(' ');
    const sep = f.indexOf('-', 6);
    if (sep < 0 || sep + 1 >= f.length) continue;
    out.push({
      mountPoint: unescapeMountPath(f[4]!),
      root: unescapeMountPath(f[3]!),
      fsType: f[sep + 1]!,
      source: unescapeMountPath(f[sep + 2] ?? ''),
      mountOptions: options(f[5]),
      superOptions: options(f[sep + 3]),
    });
  }
  return out;
}

/** This process's mount table; empty where there is no /proc/self/mountinfo (not Linux). */
export function mountTable(): MountEntry[] {
  let text: string;
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') return [];
    throw err;
  }
  return parseMountInfo(text);
}

/**
 * The canonical path of a mount point. A dead FUSE mount answers lstat with ENOTCONN, so when the
 * path itself cannot be resolved its parent is, and the name kept.
 */
function canonicalMountPoint(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return join(realpathOr(dirname(path)), basename(path));
  }
}

/** The mount exactly at `path` (the last one, which is the visible one), or null when nothing is mounted there. */
export function mountAt(path: string, mounts: readonly MountEntry[] = mountTable()): MountEntry | null {
  const want = canonicalMountPoint(path);
  let found: MountEntry | null = null;
  for (const m of mounts) if (m.mountPoint === want) found = m;
  return found;
}

/** The mount holding `path`: the longest mount point that prefixes its real path (the last of equals, the visible one). */
export function mountContaining(path: string, mounts: readonly MountEntry[] = mountTable()): MountEntry | null {
  let real = path;
  try {
    real = realpathSync(path);
  } catch {
    // not there (yet): judged by the path as given
  }
  let best: MountEntry | null = null;
  for (const m of mounts) {
    const mp = m.mountPoint.endsWith('/') ? m.mountPoint : `${m.mountPoint}/`;
    if (real === m.mountPoint || `${real}/`.startsWith(mp) || m.mountPoint === '/') {
      if (!best || m.mountPoint.length >= best.mountPoint.length) best = m;
    }
  }
  return best;
}

/** Mount points at or below `dir` (its real path), in table order; a point mounted twice is listed twice. */
export function mountPointsUnder(dir: string, mounts: readonly MountEntry[] = mountTable()): string[] {
  const want = realpathOr(dir);
  return mounts.map((m) => m.mountPoint).filter((m) => m === want || m.startsWith(`${want}/`));
}

/**
 * Mount `source` (a filesystem of type `fsType`, with the options `data`) at `target`: mount(2)
 * through the native addon (a process start less on every overlay create), else mount(8) with the
 * same options. A failure is `failCode` naming `what` and the errno or the program's words.
 */
export async function mountFs(
  source: string,
  target: string,
  fsType: string,
  data: string,
  failCode: PdbErrorCode,
  what: string,
): Promise<void> {
  const os = nativeOs();
  if (!os) {
    const { toolOutput } = await import('./run-tool.js');
    await toolOutput('mount', ['-t', fsType, source, '-o', data, target], failCode, what);
    return;
  }
  const errno = os.mount(source, target, fsType, data);
  if (errno !== 0) {
    const cause = osError(errno, target, 'mount');
    throw new PdbError(failCode, `${what} failed: mount(2) of ${fsType} at ${target}: ${cause.code}`, { cause });
  }
}

/** Unmount `target`: umount2(2) through the native addon, else umount(8); as mountFs. */
export async function unmountFs(target: string, failCode: PdbErrorCode, what: string): Promise<void> {
  const os = nativeOs();
  if (!os) {
    const { toolOutput } = await import('./run-tool.js');
    await toolOutput('umount', [target], failCode, what);
    return;
  }
  const errno = os.umount(target);
  if (errno !== 0) {
    const cause = osError(errno, target, 'umount');
    throw new PdbError(failCode, `${what} failed: umount(2) of ${target}: ${cause.code}`, { cause });
  }
}
