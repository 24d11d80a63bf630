import { constants } from 'node:fs';
import { copyFile, mkdir, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempPath } from '../model/os/temp-name.js';
import { nodeCrypto } from '../model/os/hash.js';
import { materializeTreeBase } from './shared/base-tree.js';
import { cloneError, cloneTree } from './shared/clone-tree.js';
import { FS_MAGIC, fsTypeOf } from './shared/fs-util.js';
import { unmeasuredUsage } from './shared/disk-usage.js';
import { removeTree } from '../model/os/remove-tree.js';
import type { Backend, ProbeResult } from './types.js';

const PROBE_BYTES = 8 * 1024 * 1024;

async function freeBytes(path: string): Promise<number> {
  const s = await statfs(path);
  return s.bavail * s.bsize;
}

/**
 * clonefile of the base tree on macOS APFS, through `fs.copyFile(..., COPYFILE_FICLONE_FORCE)`
 * (copyfile(3) with COPYFILE_CLONE_FORCE, which fails rather than copies). macOS has no FIEMAP
 * and `du` double-counts clones, so sharing is observed as the volume's free-space delta around
 * a probe clone of a large file. Experimental until a report's gate says PROMOTE; not verified on
 * a Mac by this build's tests (no macOS host).
 */
export const apfsCloneBackend: Backend = {
  name: 'apfs-clone',
  experimental: true,
  testOnly: false,
  summary: 'clonefile of the base tree on macOS APFS (experimental)',
  capabilities: {
    constantTimeCreate: false,
    sharesExtents: true,
    needsRemount: false,
    carriesFullSnapshot: true,
    securityIsolation: false,
  },
  async probe(ctx): Promise<ProbeResult> {
    if (process.platform !== 'darwin') {
      return {
        available: false,
        reason: 'E_UNSUPPORTED_OS',
        detail: `APFS clones need macOS (this is ${process.platform})`,
        evidence: { platform: process.platform },
      };
    }
    const type = await fsTypeOf(ctx.probeDir);
    if (type !== FS_MAGIC.apfs)
      return {
        available: false,
        reason: 'E_CLONE_UNSUPPORTED',
        detail: `the store is not on APFS (statfs type ${type})`,
        evidence: { platform: 'darwin', fsType: type },
      };
    const dir = tempPath(ctx.probeDir, 'probe-apfs');
    await mkdir(dir);
    try {
      await writeFile(join(dir, 'a'), nodeCrypto().randomBytes(PROBE_BYTES));
      const before = await freeBytes(dir);
      try {
        await copyFile(join(dir, 'a'), join(dir, 'b'), constants.COPYFILE_FICLONE_FORCE);
      } catch (err) {
        const e = cloneError(err, 'probe file');
        return { available: false, reason: e.code, detail: e.message, evidence: { platform: 'darwin', cloned: false } };
      }
      const grewBytes = before - (await freeBytes(dir));
      // A real clone allocates metadata only; a copy would take the whole 8 MiB.
      const observed = grewBytes < PROBE_BYTES / 2;
      if (!observed)
        return {
          available: false,
          reason: 'E_CLONE_NOT_OBSERVED',
          detail: `a forced clone used ${grewBytes} bytes of free space, like a copy`,
          evidence: { platform: 'darwin', cloned: true, observed: false, grewBytes },
        };
      return {
        available: true,
        reason: null,
        detail: 'forced clone made; free-space delta shows sharing',
        evidence: { platform: 'darwin', cloned: true, observed: true, grewBytes },
      };
    } finally {
      await removeTree(dir);
    }
  },
  async materializeBase(ctx, snapshot, digest) {
    await materializeTreeBase(ctx, snapshot, digest, 'tree');
  },
  async createSession(ctx, snapshot, digest, root) {
    const base = await materializeTreeBase(ctx, snapshot, digest, 'tree');
    const bytes = snapshot.entries.reduce((n, e) => n + (e.kind === 'file' ? e.size : 0), 0);
    const before = await freeBytes(base);
    const { files, bytes: cloned, sigs } = await cloneTree(base, snapshot, root);
    const grew = before - (await freeBytes(base));
    // Only meaningful for trees big enough to see above the noise of other writers.
    const cloneObserved = bytes >= 64 * 1024 * 1024 ? grew < bytes / 2 : null;
    return { state: { method: 'clonefile' }, files, cloneObserved, clone: { files, bytes: cloned }, ...(sigs ? { sigs } : {}) };
  },
  async usage() {
    return unmeasuredUsage(
      'E_USAGE_UNMEASURABLE',
      "macOS has no FIEMAP and st_blocks counts a clone in full, so what a session shares cannot be told file by file (only the volume's free space shows clones)",
    );
  },
  async resume() {},
  async release() {},
};
