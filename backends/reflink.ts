import { constants } from 'node:fs';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempPath } from '../model/os/temp-name.js';
import { nodeCrypto } from '../model/os/hash.js';
import { PdbError } from '../model/errors.js';
import { fsTypeName, fsTypeOf } from './shared/fs-util.js';
import { baseTree, cloneTreeModule, diskUsage, removeTree } from './shared/lazy.js';
import type { Backend, ProbeResult } from './types.js';

/**
 * Per-file forced clones of the materialized base (`COPYFILE_FICLONE_FORCE` = ioctl FICLONE on
 * Linux). A file that cannot be cloned fails the create with a typed error; nothing is copied.
 */
export const reflinkBackend: Backend = {
  name: 'reflink',
  experimental: false,
  testOnly: false,
  summary: 'per-file forced clone (FICLONE) of the base; btrfs, XFS reflink=1, bcachefs',
  capabilities: {
    constantTimeCreate: false,
    sharesExtents: true,
    needsRemount: false,
    carriesFullSnapshot: true,
    securityIsolation: false,
  },
  async probe(ctx): Promise<ProbeResult> {
    const { cloneError, observeShared } = await cloneTreeModule();
    const fsType = fsTypeName(await fsTypeOf(ctx.probeDir));
    const dir = tempPath(ctx.probeDir, 'probe-reflink');
    await mkdir(dir);
    try {
      // 64 KiB: larger than btrfs's inline limit, so FIEMAP can show the shared extent.
      await writeFile(join(dir, 'a'), nodeCrypto().randomBytes(64 * 1024));
      try {
        await copyFile(join(dir, 'a'), join(dir, 'b'), constants.COPYFILE_FICLONE_FORCE);
      } catch (err) {
        const e = cloneError(err, 'probe file');
        return {
          available: false,
          reason: e.code,
          detail: `a forced clone on the store's filesystem (${fsType}) failed: ${e.message}`,
          evidence: { fsType, cloned: false, errno: (err as NodeJS.ErrnoException).code ?? null },
        };
      }
      const seen = await observeShared([join(dir, 'b')]);
      if (seen.observed === false) {
        return {
          available: false,
          reason: 'E_CLONE_NOT_OBSERVED',
          detail: `a forced clone on ${fsType} succeeded but FIEMAP shows no shared extent`,
          evidence: { fsType, cloned: true, observed: false, observer: seen.tool },
        };
      }
      return {
        available: true,
        reason: null,
        detail: seen.observed
          ? `forced clone made and observed shared on ${fsType}`
          : `forced clone made on ${fsType} (sharing not observable: ${seen.tool})`,
        evidence: { fsType, cloned: true, observed: seen.observed, observer: seen.tool },
      };
    } finally {
      await removeTree(dir);
    }
  },
  async materializeBase(ctx, snapshot, digest, hooks) {
    await (await baseTree()).materializeTreeBase(ctx, snapshot, digest, 'tree', hooks);
  },
  async createSession(ctx, snapshot, digest, root, _sessionDir, hooks) {
    const [{ materializeTreeBase }, { cloneTree, observeShared }] = await Promise.all([baseTree(), cloneTreeModule()]);
    const base = await materializeTreeBase(ctx, snapshot, digest, 'tree', hooks);
    const { files, bytes, sample, sigs } = await cloneTree(base, snapshot, root, { onProgress: hooks?.onProgress });
    const seen = await observeShared(sample.map((p) => join(root, p)));
    if (seen.observed === false) {
      throw new PdbError(
        'E_CLONE_NOT_OBSERVED',
        `forced clones succeeded but only ${seen.shared} of ${seen.checked} sampled files show shared extents`,
        {
          hint: 'The filesystem may not really share extents; use full-copy and report the host (pdb-env doctor).',
        },
      );
    }
    return {
      state: { method: 'ficlone', observer: seen.tool, sampled: seen.checked, sharedInSample: seen.shared },
      files,
      cloneObserved: seen.observed,
      clone: { files, bytes },
      ...(sigs ? { sigs } : {}),
    };
  },
  async usage(_ctx, root) {
    const { measureExtents, measuredUsage } = await diskUsage();
    const u = await measureExtents(root);
    // A clone of a file btrfs keeps inline copies its data into the clone's own metadata.
    return measuredUsage(
      { ...u, exclusiveBytes: u.exclusiveBytes + u.inlineBytes, inlineBytes: 0 },
      ['root'],
      'FIEMAP extents of the root: an extent not flagged shared is its own',
    );
  },
  async resume() {},
  async release() {
    // Plain files: the session directory removal frees them.
  },
};
