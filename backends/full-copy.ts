import { diskUsage, materialize } from './shared/lazy.js';
import type { Backend } from './types.js';

/**
 * The correctness oracle and portable default: every byte is read and written in userspace from
 * the store's objects. GNU `cp -a` and copy_file_range may clone on btrfs/XFS, which would make
 * the oracle share extents with the thing it judges, so neither is used.
 */
export const fullCopyBackend: Backend = {
  name: 'full-copy',
  experimental: false,
  testOnly: false,
  summary: 'explicit byte copy of every file; the correctness oracle',
  capabilities: {
    constantTimeCreate: false,
    sharesExtents: false,
    needsRemount: false,
    carriesFullSnapshot: true,
    securityIsolation: false,
  },
  async probe() {
    return { available: true, reason: null, detail: 'always available', evidence: { method: 'userspace read/write' } };
  },
  async materializeBase() {
    // Sessions are copied straight from the object store; no base directory is needed.
  },
  async createSession(ctx, snapshot, _digest, root, _sessionDir, hooks) {
    const { materializeTree } = await materialize();
    const { files, stats } = await materializeTree(ctx.store, snapshot, root, undefined, hooks?.onProgress);
    return { state: {}, files, cloneObserved: null, stats };
  },
  async usage(_ctx, root) {
    const { measureBlocks, measuredUsage } = await diskUsage();
    // Byte copies share nothing with the base: every allocated block is the session's own.
    return measuredUsage(measureBlocks(root), ['root'], 'st_blocks of the root: byte copies, all its own');
  },
  async resume() {},
  async release() {},
};
