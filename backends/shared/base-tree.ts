// Shared by the backends that start from a materialized base directory in the store:
// `<store>/bases/<digest-hex>/<family>/`, made once, atomically (built under a temp name in the
// store, then renamed into place), and never written again.
//
// A base is verified when it is built: it is filled by materializeTree, which hashes every byte it
// copies against the Snapshot. Once in place it gets a tree index (`<store>/bases/.index/<hex>.<family>`:
// each file's signature, so a session's first checkpoint re-hashes only what the session changed) and
// then, last and atomically, its marker (`<store>/bases/.verified/<hex>.<family>`: the file and
// byte counts, the excludes, where the index is). Sessions cloned or snapshotted from a marked base
// need no second hash: a clone shares the base's verified extents, and the base is never written
// again (btrfs bases are read-only subvolumes). A create with a marked base reads only the marker,
// never the manifest. A base without a marker (made by an older pdb-env, or a crash before the
// marker) is hashed once against the Snapshot before its first use and marked then.
import { existsSync, readFileSync } from 'node:fs';
import { lstat, mkdir, rename } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Digest } from '../../model/canonical-json.js';
import { PdbError, osErrorCode, toPdbError } from '../../model/errors.js';
import { sharedFsPool } from '../../model/scan/fs-pool.js';
import { materializeTree } from '../../model/store/materialize.js';
import { tempName, writeFileAtomic } from '../../model/store/object-store.js';
import type { Snapshot } from '../../model/snapshot.js';
import { KIND_FILE } from '../../model/scan/index-columns.js';
import { materializedIndex, recordDirStats, recordedTimes, snapshotColumns, type RowStats } from '../../model/scan/materialized-index.js';
import { COARSE_RACY_WINDOW_MS, RACY_WINDOW_MS, treeIndexPieces } from '../../model/scan/tree-index.js';
import { toolOutput } from '../../model/os/run-tool.js';
import { removeTree } from '../../model/os/remove-tree.js';
import type { BackendContext, BackendHooks } from '../types.js';

/** Base families: backends of one family share one materialized base. */
export type BaseFamily = 'tree' | 'btrfs-subvolume' | 'hardlink-farm';

export function baseDir(ctx: BackendContext, digest: Digest, family: BaseFamily): string {
  return join(ctx.store.paths.bases, digest.slice('sha256:'.length), family);
}

/** The tree index of a base (kept outside `bases/<hex>/`, which holds only the family trees). */
export function baseIndexFile(ctx: BackendContext, digest: Digest, family: BaseFamily): string {
  return join(ctx.store.paths.bases, '.index', `${digest.slice('sha256:'.length)}.${family}`);
}

export function verifiedMark(ctx: BackendContext, digest: Digest, family: BaseFamily): string {
  return join(ctx.store.paths.bases, '.verified', `${digest.slice('sha256:'.length)}.${family}`);
}

/** What the marker of a verified base holds: enough to make a session without reading the manifest. */
export interface BaseMarker {
  version: 1;
  digest: Digest;
  family: BaseFamily;
  files: number;
  bytes: number;
  entries: number;
  excludes: string[];
  /** The base's tree index, relative to the store root; null when it has none. */
  index: string | null;
  builtAt: string;
}

/** The marker of a verified base; 'legacy' for the empty mark older versions wrote; null when there is none. */
export function readBaseMarker(ctx: BackendContext, digest: Digest, family: BaseFamily): BaseMarker | 'legacy' | null {
  let text: string;
  try {
    text = readFileSync(verifiedMark(ctx, digest, family), 'utf8');
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') return null;
    throw toPdbError(err, 'E_IO', { action: 'reading a base marker', path: verifiedMark(ctx, digest, family) });
  }
  try {
    const m = JSON.parse(text) as BaseMarker;
    if (m?.version === 1 && m.digest === digest && m.family === family && Number.isInteger(m.files)) return m;
  } catch {
    // an empty or older mark: the base was verified, but the marker says nothing more
  }
  return 'legacy';
}

/** A verified base in place with a full marker, or null: what a create may use without reading the manifest. */
export function markedBase(ctx: BackendContext, digest: Digest, family: BaseFamily): { dir: string; marker: BaseMarker } | null {
  const marker = readBaseMarker(ctx, digest, family);
  if (!marker || marker === 'legacy') return null;
  const dir = baseDir(ctx, digest, family);
  return existsSync(dir) ? { dir, marker } : null;
}

async function writeMarker(ctx: BackendContext, snapshot: Snapshot, digest: Digest, family: BaseFamily, index: string | null) {
  // Counted from the rows: a Snapshot an import made builds no entry for it.
  const c = snapshotColumns(snapshot);
  let files = 0;
  let bytes = 0;
  for (let i = 0; i < c.n; i++)
    if (c.kind[i] === KIND_FILE) {
      files++;
      bytes += c.size[i]!;
    }
  const marker: BaseMarker = {
    version: 1,
    digest,
    family,
    files,
    bytes,
    entries: c.n,
    excludes: snapshot.excludes,
    index,
    builtAt: new Date().toISOString(),
  };
  const mark = verifiedMark(ctx, digest, family);
  try {
    await mkdir(dirname(mark), { recursive: true });
  } catch (err) {
    throw toPdbError(err, 'E_IO', { action: 'marking a verified base', path: mark });
  }
  await writeFileAtomic(ctx.store.paths, mark, `${JSON.stringify(marker)}\n`);
  return marker;
}

/** Hash an unmarked base's files against the Snapshot once; E_OBJECT_CORRUPT naming the first file that differs. */
async function verifyBase(ctx: BackendContext, dir: string, snapshot: Snapshot, digest: Digest, family: BaseFamily): Promise<void> {
  const files = snapshot.entries.filter((e) => e.kind === 'file');
  const got = await sharedFsPool().map(
    files.map((f) => join(dir, f.path)),
    (paths) => ({ op: 'hash', paths }),
  );
  const bad = files.find((f, i) => `sha256:${got[i]!.digest}` !== f.digest);
  if (bad)
    throw new PdbError('E_OBJECT_CORRUPT', `the materialized ${family} base of ${digest} holds wrong bytes in ${bad.path}`, {
      path: bad.path,
      hint: `Discard the sessions made from it, remove ${dir}, and create again (or use --backend full-copy).`,
    });
  await writeMarker(ctx, snapshot, digest, family, null);
}

/** The base's tree index from the stat data its build recorded; its path relative to the store. */
async function writeBaseIndex(ctx: BackendContext, snapshot: Snapshot, digest: Digest, family: BaseFamily, stats: RowStats, dir: string) {
  const file = baseIndexFile(ctx, digest, family);
  await mkdir(dirname(file), { recursive: true });
  // Its directories too (after the rename into place, which changed only the root's ctime).
  const c = snapshotColumns(snapshot);
  const root = recordDirStats(dir, c, stats);
  // Nothing writes into a base after its build, and no session exists before this point: waiting
  // out the racy window once makes every signature trustable (a base is built once, used often).
  const { newestMs, coarse } = recordedTimes(stats);
  const wait = newestMs + (coarse ? COARSE_RACY_WINDOW_MS : RACY_WINDOW_MS) + 1 - Date.now();
  if (wait > 0) await sleep(wait);
  const fields = { digest, base: snapshot.base, excludes: snapshot.excludes, generation: ctx.store.generation() };
  const index = materializedIndex(c, fields, stats, Date.now(), root);
  await writeFileAtomic(ctx.store.paths, file, treeIndexPieces(index), 0o644, { sync: false });
  return relative(ctx.store.paths.root, file);
}

/**
 * Make the base once. `build(tmp)` fills a fresh temp path on the store's filesystem and returns
 * the stat data of the files it wrote (by row); it is then renamed into place, indexed and marked. A
 * concurrent creator that wins the rename is fine: its base is identical. `discard(tmp)` removes a
 * losing or failed temp build (a subvolume needs more than rm). `snapshot` is what an unmarked base
 * found in place is checked against.
 */
export async function materializeBaseOnce(
  ctx: BackendContext,
  snapshot: Snapshot,
  digest: Digest,
  family: BaseFamily,
  build: (tmp: string) => Promise<RowStats | null>,
  discard: (tmp: string) => Promise<void>,
  afterRename?: (dir: string) => Promise<void>,
): Promise<string> {
  const dir = baseDir(ctx, digest, family);
  if (existsSync(dir)) {
    const marker = readBaseMarker(ctx, digest, family);
    if (marker === null) await verifyBase(ctx, dir, snapshot, digest, family);
    else if (marker === 'legacy') await writeMarker(ctx, snapshot, digest, family, null);
    return dir;
  }
  const tmp = tempName(ctx.store.paths, `base-${family}`);
  let stats: RowStats | null;
  try {
    await mkdir(dirname(dir), { recursive: true });
    stats = await build(tmp);
    try {
      await rename(tmp, dir);
    } catch (err) {
      const code = osErrorCode(err);
      if ((code === 'ENOTEMPTY' || code === 'EEXIST') && existsSync(dir)) {
        await discard(tmp);
        return materializeBaseOnce(ctx, snapshot, digest, family, build, discard, afterRename);
      }
      throw err;
    }
  } catch (err) {
    await discard(tmp).catch(() => {}); // rollback: the build's own temp tree; the error below is what matters
    throw toPdbError(err, 'E_IO', { action: `materializing the ${family} base` });
  }
  await afterRename?.(dir);
  await writeMarker(ctx, snapshot, digest, family, stats ? await writeBaseIndex(ctx, snapshot, digest, family, stats, dir) : null);
  return dir;
}

/** A plain directory base filled with explicit byte copies from the object store. */
export async function materializeTreeBase(
  ctx: BackendContext,
  snapshot: Snapshot,
  digest: Digest,
  family: BaseFamily = 'tree',
  hooks: BackendHooks = {},
): Promise<string> {
  return materializeBaseOnce(
    ctx,
    snapshot,
    digest,
    family,
    async (tmp) => (await materializeTree(ctx.store, snapshot, tmp, undefined, hooks.onProgress)).stats,
    removeTree,
  );
}

/** The root directory of a btrfs subvolume always has inode number 256. */
const SUBVOLUME_ROOT_INO = 256;

export async function isSubvolume(path: string): Promise<boolean> {
  const st = await lstat(path).catch(() => null);
  return st !== null && st.isDirectory() && st.ino === SUBVOLUME_ROOT_INO;
}

/** Remove a btrfs subvolume (a read-only one too) or, when `path` is a plain tree, the tree; the one `btrfs subvolume delete`. */
export async function deleteSubvolume(path: string): Promise<void> {
  if (await isSubvolume(path)) {
    await toolOutput('btrfs', ['subvolume', 'delete', path], 'E_IO', 'deleting a btrfs subvolume');
  }
  await removeTree(path);
}
