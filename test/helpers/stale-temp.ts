// Test temp dirs left behind by a test process that was killed (SIGKILL, a runner timeout, a
// closed terminal) can still hold mounts and loop devices: nothing in that process ran its
// cleanup. Each temp dir has an owner file beside it (pid and start time); the test runner sweeps
// the dirs whose owner is gone before it starts: unmount (deepest first, lazily when busy), detach
// loop devices backed by files inside, then delete. A dir whose owner lives is never touched.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mountTable } from '../../model/os/mounts.js';
import { removeTree } from '../../model/os/remove-tree.js';
import { isProcessAlive, processStartTime } from '../../model/os/proc.js';

const OWNER_SUFFIX = '.pdb-test-owner';

/** Record this process as the owner of a temp dir (beside it, so the dir's own tree is untouched). */
export function writeOwner(dir: string): void {
  writeFileSync(`${dir}${OWNER_SUFFIX}`, `${process.pid} ${processStartTime(process.pid) ?? ''}\n`);
}

export function removeOwner(dir: string): void {
  rmSync(`${dir}${OWNER_SUFFIX}`, { force: true });
}

/** Temp dirs under `root` whose owner process is gone. */
export function staleTempDirs(root = tmpdir()): string[] {
  const out: string[] = [];
  for (const name of readdirSync(root)) {
    if (!name.startsWith('pdb-') || !name.endsWith(OWNER_SUFFIX)) continue;
    const [pid, start] = readFileSync(join(root, name), 'utf8').trim().split(' ');
    if (!isProcessAlive(Number(pid), start || null)) out.push(join(root, name.slice(0, -OWNER_SUFFIX.length)));
  }
  return out.sort();
}

/** Mount points at or under `dir`, deepest first (from /proc/self/mountinfo, octal escapes decoded). */
export function mountsUnder(dir: string): string[] {
  // No procfs (macOS): an empty table, as nothing a test here could have mounted.
  const points = mountTable().map((m) => m.mountPoint);
  return [...new Set(points.filter((p) => p === dir || p.startsWith(`${dir}/`)))].sort((a, b) => b.length - a.length);
}

/** Loop devices whose backing file lies under `dir`. */
export function loopDevicesUnder(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync('/sys/block').filter((n) => n.startsWith('loop'));
  } catch {
    return [];
  }
  return names
    .filter((n) => {
      try {
        const backing = readFileSync(`/sys/block/${n}/loop/backing_file`, 'utf8')
          .trim()
          .replace(/ \(deleted\)$/, '');
        return backing.startsWith(`${dir}/`);
      } catch {
        return false; // not attached
      }
    })
    .map((n) => `/dev/${n}`);
}

export interface SweepResult {
  dirs: string[];
  unmounted: string[];
  detached: string[];
  /** Dirs left in place because a mount under them would not go. */
  kept: string[];
}

/**
 * Release and delete the temp dirs of dead owners. A dir may hold a tree deeper than a path can
 * name (a test of a 10,000-level tree killed before its cleanup): removeTree falls back to directory
 * handles there, where rmSync's recursion overflowed the stack and stopped the whole runner.
 */
export async function sweepStaleTempDirs(root = tmpdir()): Promise<SweepResult> {
  const result: SweepResult = { dirs: [], unmounted: [], detached: [], kept: [] };
  for (const dir of staleTempDirs(root)) {
    for (const m of mountsUnder(dir)) {
      try {
        execFileSync('umount', [m], { stdio: 'pipe' });
      } catch {
        // Busy (a process still inside): detach lazily; the kernel frees it when that process exits.
        try {
          execFileSync('umount', ['-l', m], { stdio: 'pipe' });
        } catch {
          continue; // reported below: the dir stays
        }
      }
      result.unmounted.push(m);
    }
    for (const dev of loopDevicesUnder(dir)) {
      try {
        execFileSync('losetup', ['-d', dev], { stdio: 'pipe' });
        result.detached.push(dev);
      } catch {
        // A device still in use is left; the dir goes only if nothing is mounted under it.
      }
    }
    // Never delete through a mount that is still there: that would delete the mounted tree's files.
    if (mountsUnder(dir).length) {
      result.kept.push(dir);
      continue;
    }
    if (existsSync(dir)) await removeTree(dir);
    removeOwner(dir);
    result.dirs.push(dir);
  }
  return result;
}
