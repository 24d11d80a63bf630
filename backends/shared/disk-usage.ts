// The physical bytes of a tree, the one measurer behind `pdb-env du` and gc's byte counts. Two
// ways, each a measurement and never an estimate:
//
// - st_blocks: every entry's allocated blocks (st_blocks * 512). A file hard-linked from outside
//   the tree (more links than the tree holds, as pnpm's store makes) is shared; the rest is the
//   tree's own. Right wherever files cannot share extents, and for trees whose files were written
//   byte by byte (full-copy).
// - FIEMAP: every file's extents, split by the kernel's shared flag; a physical range two files
//   share counts once. On btrfs and XFS a clone, a snapshot and an overlay copy-up (which clones
//   on those filesystems) share extents that st_blocks would count in full. Directories and
//   symlinks are counted by st_blocks.
//
// Not in either figure: inodes and filesystem metadata (XFS: 512 bytes per inode; btrfs: its
// trees), which a free-space delta also shows.
import { lstatSync, readdirSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { PdbError, osErrorCode, toPdbError, type PdbErrorCode } from '../../model/errors.js';
import { mapExtents, unionBytes, type Extent } from './fiemap.js';
import { FS_MAGIC, fsTypeOf } from './fs-util.js';
import type { MeasuredUsage, TreeUsage, UnmeasuredUsage, UsageMemo, UsageMethod } from '../types.js';

interface FileGroup {
  path: string;
  /** Links to this inode the tree holds, and its link count. */
  seen: number;
  nlink: number;
  bytes: number;
  size: number;
}

interface Walk {
  /** Directories, symlinks and other non-regular entries: always the tree's own. */
  otherBytes: number;
  /** Regular files by device and inode (hard links once). */
  files: Map<string, FileGroup>;
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch (err) {
    // Gone meanwhile (a live session): what is no longer there costs nothing.
    if (osErrorCode(err) === 'ENOENT' || osErrorCode(err) === 'ENOTDIR') return null;
    throw toPdbError(err, 'E_IO', { action: 'measuring disk usage', path });
  }
}

function readdirOrEmpty(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT' || osErrorCode(err) === 'ENOTDIR') return [];
    throw toPdbError(err, 'E_IO', { action: 'measuring disk usage', path: dir });
  }
}

/** lstat every entry below `root` (and `root` itself, a file or a directory); `skip` names top-level entries left out. */
function walk(root: string, skip: ReadonlySet<string>): Walk {
  const out: Walk = { otherBytes: 0, files: new Map() };
  const visit = (path: string, st: Stats, stack: string[]) => {
    if (st.isFile()) {
      const key = `${st.dev}:${st.ino}`;
      const g = out.files.get(key);
      if (g) g.seen++;
      else out.files.set(key, { path, seen: 1, nlink: st.nlink, bytes: st.blocks * 512, size: st.size });
      return;
    }
    out.otherBytes += st.blocks * 512;
    if (st.isDirectory()) stack.push(path);
  };
  const top = lstatOrNull(root);
  if (!top) return out;
  const stack: string[] = [];
  visit(root, top, stack);
  for (let dir = stack.pop(); dir !== undefined; dir = stack.pop()) {
    for (const name of readdirOrEmpty(dir)) {
      if (dir === root && skip.has(name)) continue;
      const p = join(dir, name);
      const st = lstatOrNull(p);
      if (st) visit(p, st, stack);
    }
  }
  return out;
}

/** By st_blocks, synchronously (gc counts what it frees this way too). */
export function measureBlocks(root: string, skip: ReadonlySet<string> = new Set()): TreeUsage {
  const w = walk(root, skip);
  const u: TreeUsage = { exclusiveBytes: w.otherBytes, sharedBytes: 0, inlineBytes: 0, files: 0, method: 'st_blocks' };
  for (const g of w.files.values()) {
    u.files++;
    if (g.seen < g.nlink) u.sharedBytes += g.bytes;
    else u.exclusiveBytes += g.bytes;
  }
  return u;
}

/** Every allocated byte of a file or tree (less the top-level entries `skip` names), shared or not. */
export function allocatedBytes(path: string, skip: ReadonlySet<string> = new Set()): number {
  const u = measureBlocks(path, skip);
  return u.exclusiveBytes + u.sharedBytes;
}

/** Add one file's extents to `u`; shared ranges go to `ranges`, to be counted once. */
function addExtents(u: TreeUsage, g: FileGroup, extents: Extent[], ranges: Array<[number, number]>): void {
  for (const e of extents) {
    if (e.flags.includes('inline')) u.inlineBytes += Math.min(e.length, g.size);
    // Not placed yet (delalloc despite the sync): allocated to this file alone.
    else if (e.flags.includes('shared') && !e.flags.includes('unknown_loc')) ranges.push([e.physical, e.length]);
    else u.exclusiveBytes += e.length;
  }
}

/** By FIEMAP extents. E_USAGE_UNMEASURABLE when filefrag cannot map a file that is still there. */
export async function measureExtents(root: string, skip: ReadonlySet<string> = new Set()): Promise<TreeUsage> {
  if (process.platform !== 'linux')
    throw new PdbError('E_USAGE_UNMEASURABLE', `shared extents are measured with Linux's FIEMAP, which ${process.platform} does not have`, {
      hint: 'On macOS the volume free space is the only measure of clones (df before and after).',
    });
  const w = walk(root, skip);
  const u: TreeUsage = { exclusiveBytes: w.otherBytes, sharedBytes: 0, inlineBytes: 0, files: w.files.size, method: 'fiemap' };
  const toMap: FileGroup[] = [];
  for (const g of w.files.values()) {
    // Hard-linked from outside: the inode itself is shared, which FIEMAP cannot see.
    if (g.seen < g.nlink) u.sharedBytes += g.bytes;
    else if (g.bytes > 0) toMap.push(g);
  }
  const { maps, stderr } = await mapExtents(toMap.map((g) => g.path));
  const ranges: Array<[number, number]> = [];
  const unmapped: string[] = [];
  for (const g of toMap) {
    const extents = maps.get(g.path);
    if (extents) addExtents(u, g, extents, ranges);
    else if (lstatOrNull(g.path)) unmapped.push(g.path);
  }
  if (unmapped.length > 0)
    throw new PdbError(
      'E_USAGE_UNMEASURABLE',
      `filefrag could not map ${unmapped.length} file(s), the first ${unmapped[0]}: ${stderr.split('\n').slice(0, 2).join(' ')}`,
      { hint: 'FIEMAP needs a filesystem that supports it (btrfs, XFS, ext4); run pdb-env du again once the files are readable.' },
    );
  u.sharedBytes += unionBytes(ranges);
  return u;
}

/** Filesystems on which files can share extents (clones, snapshots, copy-ups that clone). */
const SHARING_FILESYSTEMS = new Set<number>([FS_MAGIC.btrfs, FS_MAGIC.xfs, FS_MAGIC.bcachefs]);

/** The method that sees sharing where there can be any: FIEMAP on btrfs, XFS and bcachefs, st_blocks elsewhere. */
export async function methodFor(path: string): Promise<UsageMethod> {
  return SHARING_FILESYSTEMS.has(await fsTypeOf(path)) ? 'fiemap' : 'st_blocks';
}

export async function measureTree(root: string, method: UsageMethod, skip: ReadonlySet<string> = new Set()): Promise<TreeUsage> {
  return method === 'fiemap' ? measureExtents(root, skip) : measureBlocks(root, skip);
}

/** measureTree once per path within one `du` run (a base several sessions share). */
export function measureShared(memo: UsageMemo | undefined, root: string, method: UsageMethod): Promise<TreeUsage> {
  const key = `${method}:${root}`;
  let p = memo?.get(key);
  if (!p) {
    p = measureTree(root, method);
    memo?.set(key, p);
  }
  return p;
}

export function measuredUsage(u: TreeUsage, covered: string[], detail: string): MeasuredUsage {
  return { measured: true, ...u, covered, detail };
}

export function unmeasuredUsage(reason: PdbErrorCode, detail: string): UnmeasuredUsage {
  return { measured: false, reason, detail };
}
