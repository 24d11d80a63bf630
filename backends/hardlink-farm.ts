import { linkSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { materializeTreeBase } from './shared/base-tree.js';
import { measureBlocks, measuredUsage } from './shared/disk-usage.js';
import type { Backend } from './types.js';

/**
 * TEST-ONLY negative control. Session files are hard links to the base's files, so they share
 * inodes: an in-place write, append, truncate or chmod in a session changes the base and every
 * sibling session. The conformance and property tests must catch it; it proves they can fail.
 */
export const hardlinkFarmBackend: Backend = {
  name: 'hardlink-farm',
  experimental: false,
  testOnly: true,
  summary: 'TEST ONLY: hard links to the base (shares inodes; must fail the oracle checks)',
  capabilities: {
    constantTimeCreate: false,
    sharesExtents: true,
    needsRemount: false,
    carriesFullSnapshot: true,
    securityIsolation: false,
  },
  async probe() {
    return { available: true, reason: null, detail: 'test-only negative control', evidence: { testOnly: true } };
  },
  async materializeBase(ctx, snapshot, digest) {
    await materializeTreeBase(ctx, snapshot, digest, 'hardlink-farm');
  },
  async createSession(ctx, snapshot, digest, root) {
    const base = await materializeTreeBase(ctx, snapshot, digest, 'hardlink-farm');
    mkdirSync(root);
    let files = 0;
    for (const e of snapshot.entries) {
      const dst = join(root, e.path);
      if (e.kind === 'dir') mkdirSync(dst);
      else if (e.kind === 'symlink') symlinkSync(e.target, dst);
      else {
        linkSync(join(base, e.path), dst);
        files++;
      }
    }
    return { state: { method: 'hardlink' }, files, cloneObserved: null };
  },
  async usage(_ctx, root) {
    // Every file is a link to the base's inode: shared (more links than the session holds).
    return measuredUsage(measureBlocks(root), ['root'], 'st_blocks of the root; files hard-linked to the base are shared');
  },
  async resume() {},
  async release() {},
};
