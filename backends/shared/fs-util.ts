// Small filesystem helpers the backends share: forced removal, mount table look-ups, statfs type.
import { spawn } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { statfs } from 'node:fs/promises';
import { realpathOr } from '../../model/paths.js';

/** Remove a tree we own (read-only directories included); the model's one implementation. */
export { removeTree as removeTreeForce } from '../../model/os/remove-tree.js';

/** Decode the octal escapes (`\040` for a space) that /proc/self/mountinfo uses in paths. */
function unescapeMountPath(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** One line of /proc/self/mountinfo: where, what type, from what source. */
export interface MountEntry {
  mountPoint: string;
  fsType: string;
  /** The mount source (a device, or a FUSE filesystem's fsname such as `agentfs:<db>`). */
  source: string;
}

/** The mount table (this process's /proc/self/mountinfo, or the text given). */
export function mountTable(mountinfo = readFileSync('/proc/self/mountinfo', 'utf8')): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of mountinfo.split('\n')) {
    const fields = line.split(' ');
    if (fields.length < 10) continue;
    const sep = fields.indexOf('-');
    out.push({
      mountPoint: unescapeMountPath(fields[4]!),
      fsType: sep > 0 ? fields[sep + 1]! : 'unknown',
      source: sep > 0 ? unescapeMountPath(fields[sep + 2] ?? '') : '',
    });
  }
  return out;
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
export function mountAt(path: string): MountEntry | null {
  const want = canonicalMountPoint(path);
  let found: MountEntry | null = null;
  for (const m of mountTable()) if (m.mountPoint === want) found = m;
  return found;
}

/** The filesystem type mounted exactly at `path`, or null when nothing is mounted there. */
export function mountedFsType(path: string): string | null {
  return mountAt(path)?.fsType ?? null;
}

/** Mount points at or below `dir`. */
export function mountPointsUnder(dir: string): string[] {
  const want = realpathOr(dir);
  return mountTable()
    .map((m) => m.mountPoint)
    .filter((m) => m === want || m.startsWith(`${want}/`));
}

export const FS_MAGIC = { btrfs: 0x9123683e, xfs: 0x58465342, overlay: 0x794c7630, ext4: 0xef53, tmpfs: 0x01021994, apfs: 26 } as const;

/** statfs type number of the filesystem holding `path`. */
export async function fsTypeOf(path: string): Promise<number> {
  return Number((await statfs(path)).type);
}

export function fsTypeName(type: number): string {
  for (const [name, magic] of Object.entries(FS_MAGIC)) if (magic === type) return name;
  return `0x${type.toString(16)}`;
}

export interface ToolResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Why it could not start (ENOENT: not installed), or null. */
  error: NodeJS.ErrnoException | null;
}

/**
 * Run a short system tool (mount, btrfs, filefrag, git) with stdin closed and LC_ALL=C, collecting
 * its output. node:child_process rather than execa: importing execa costs ~150 ms of CPU (about
 * 160 modules), more than the mount or snapshot it would start on a CoW create.
 */
export function execTool(cmd: string, args: string[], options: { cwd?: string } = {}): Promise<ToolResult> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let error: NodeJS.ErrnoException | null = null;
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => (error = e));
    child.on('close', (exitCode, signal) =>
      resolve({
        exitCode: error ? null : exitCode,
        signal,
        stdout: Buffer.concat(out).toString(),
        stderr: Buffer.concat(err).toString(),
        error,
      }),
    );
  });
}
