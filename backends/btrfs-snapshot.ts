import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Digest } from '../model/canonical-json.js';
import { tempPath } from '../model/os/temp-name.js';
import { PdbError, isPdbError } from '../model/errors.js';
import type { Snapshot } from '../model/snapshot.js';
import type { BaseMarker } from './shared/base-tree.js';
import { FS_MAGIC, fsTypeName, fsTypeOf } from './shared/fs-util.js';
import { formatBytes } from '../model/progress.js';
import { baseTree, diskUsage, materialize, removeTree, toolOutput } from './shared/lazy.js';
import type { Backend, BackendContext, BackendHooks, CreatedSession, ProbeResult } from './types.js';

async function materializeSubvolumeBase(
  ctx: BackendContext,
  snapshot: Snapshot,
  digest: Digest,
  hooks: BackendHooks = {},
): Promise<string> {
  const [{ materializeBaseOnce, deleteSubvolume }, { materializeTree }] = await Promise.all([baseTree(), materialize()]);
  return materializeBaseOnce(
    ctx,
    snapshot,
    digest,
    'btrfs-subvolume',
    async (tmp) => {
      await toolOutput('btrfs', ['subvolume', 'create', tmp], 'E_IO', 'creating the base subvolume');
      return (await materializeTree(ctx.store, snapshot, tmp, undefined, hooks.onProgress)).stats;
    },
    deleteSubvolume,
    // Read-only only after the rename: btrfs refuses to move a read-only subvolume (EROFS, seen
    // on kernel 6.18). Read-only, a stray write into the base fails loudly instead of leaking.
    async (dir) => {
      await toolOutput('btrfs', ['property', 'set', '-ts', dir, 'ro', 'true'], 'E_IO', 'making the base subvolume read-only');
    },
  );
}

/** A writable snapshot of the marked base: same inodes, sizes, times and modes (another st_dev), so the base's tree index holds. */
async function snapshotSession(base: string, marker: BaseMarker, root: string): Promise<CreatedSession> {
  await toolOutput('btrfs', ['subvolume', 'snapshot', base, root], 'E_IO', 'snapshotting the base subvolume');
  return {
    state: { subvolume: true },
    files: marker.files,
    cloneObserved: await (await baseTree()).isSubvolume(root),
    clone: { files: marker.files, bytes: marker.bytes },
    index: marker.index,
  };
}

/** The base is one btrfs subvolume in the store; each session is a writable snapshot of it. */
export const btrfsSnapshotBackend: Backend = {
  name: 'btrfs-snapshot',
  experimental: false,
  testOnly: false,
  summary: 'writable btrfs snapshot of a base subvolume; O(1) create',
  capabilities: { constantTimeCreate: true, sharesExtents: true, needsRemount: false, carriesFullSnapshot: true, securityIsolation: false },
  async probe(ctx): Promise<ProbeResult> {
    if (process.platform !== 'linux')
      return {
        available: false,
        reason: 'E_UNSUPPORTED_OS',
        detail: `btrfs needs Linux (this is ${process.platform})`,
        evidence: { platform: process.platform },
      };
    const type = await fsTypeOf(ctx.probeDir);
    if (type !== FS_MAGIC.btrfs) {
      return {
        available: false,
        reason: 'E_NOT_BTRFS',
        detail: `the store is on ${fsTypeName(type)}, not btrfs`,
        evidence: { fsType: fsTypeName(type) },
      };
    }
    let version: string;
    try {
      version = (await toolOutput('btrfs', ['--version'], 'E_TOOL_MISSING', 'btrfs --version')).trim();
    } catch (err) {
      return {
        available: false,
        reason: isPdbError(err) ? err.code : 'E_TOOL_MISSING',
        detail: (err as Error).message,
        evidence: { fsType: 'btrfs', tool: false },
      };
    }
    const dir = tempPath(ctx.probeDir, 'probe-btrfs');
    await mkdir(dir);
    const sub = join(dir, 'sub');
    try {
      await toolOutput('btrfs', ['subvolume', 'create', sub], 'E_IO', 'a trial subvolume create');
      await toolOutput('btrfs', ['subvolume', 'snapshot', sub, join(dir, 'snap')], 'E_IO', 'a trial snapshot');
      const { deleteSubvolume } = await baseTree();
      await deleteSubvolume(join(dir, 'snap'));
      await deleteSubvolume(sub);
    } catch (err) {
      const e = err instanceof PdbError ? err : new PdbError('E_IO', String(err));
      return { available: false, reason: e.code, detail: e.message, evidence: { fsType: 'btrfs', tool: version, trialSubvolume: false } };
    } finally {
      const { deleteSubvolume } = await baseTree();
      await deleteSubvolume(join(dir, 'snap')).catch(() => {});
      await deleteSubvolume(sub).catch(() => {});
      await removeTree(dir).catch(() => {});
    }
    return {
      available: true,
      reason: null,
      detail: 'store on btrfs; trial subvolume and snapshot made and deleted',
      evidence: { fsType: 'btrfs', tool: version, trialSubvolume: true, trialSnapshot: true },
    };
  },
  async materializeBase(ctx, snapshot, digest, hooks) {
    await materializeSubvolumeBase(ctx, snapshot, digest, hooks);
  },
  async createSession(ctx, snapshot, digest, root, _sessionDir, hooks) {
    await materializeSubvolumeBase(ctx, snapshot, digest, hooks);
    const base = (await baseTree()).markedBase(ctx, digest, 'btrfs-subvolume');
    if (!base) throw new PdbError('E_INTERNAL', `the btrfs base of ${digest} has no marker after it was made`);
    return snapshotSession(base.dir, base.marker, root);
  },
  async createFromBase(ctx, digest, root) {
    const base = (await baseTree()).markedBase(ctx, digest, 'btrfs-subvolume');
    return base ? snapshotSession(base.dir, base.marker, root) : null;
  },
  async usage(_ctx, root) {
    const { measureExtents, measuredUsage } = await diskUsage();
    const u = await measureExtents(root);
    // Small files live inline in the subvolume's metadata, which a snapshot shares until a write:
    // FIEMAP cannot tell which, so they are in neither figure and said apart.
    const inline =
      u.inlineBytes > 0 ? `; ${formatBytes(u.inlineBytes)} of small files inline in btrfs metadata, shared or not, in neither figure` : '';
    return measuredUsage(u, ['root'], `FIEMAP extents of the snapshot: an extent not flagged shared is its own${inline}`);
  },
  async resume() {},
  async release(_ctx, root) {
    await (await baseTree()).deleteSubvolume(root);
  },
};
