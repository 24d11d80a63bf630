// Forced per-file clones of a base tree (reflink on Linux, clonefile on macOS) and the check that
// the clones really share extents. Used by reflink and apfs-clone.
import { constants, mkdirSync, symlinkSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PdbError, isPdbError, osErrorCode, toPdbError } from '../../model/errors.js';
import { sharedFsPool } from '../../model/scan/fs-pool.js';
import type { CloneItem } from '../../model/scan/fs-worker.js';
import { progressCounter, type ProgressFn } from '../../model/progress.js';
import { mapExtents, type Extent } from './fiemap.js';
import type { Snapshot } from '../../model/snapshot.js';

/** Files cloned at once. libuv runs them on its thread pool (4 threads by default). */
const CLONE_CONCURRENCY = 64;

/** How cloneTree issues its clones: the fs worker pool (one ioctl per file, in batches) or libuv's thread pool. */
export type CloneMethod = 'pool' | 'libuv';

/** Map a failed forced clone to a typed error. Never falls back to a copy. */
export function cloneError(err: unknown, relPath: string): PdbError {
  const code = osErrorCode(err);
  switch (code) {
    case 'EOPNOTSUPP':
    case 'ENOTSUP':
    case 'EINVAL':
    case 'ENOSYS':
      return new PdbError(
        'E_CLONE_UNSUPPORTED',
        `the filesystem refused a forced clone of ${relPath} (${code}); nothing was copied instead`,
        {
          cause: err,
          path: relPath,
          hint: 'Put the store on btrfs, XFS with reflink=1, bcachefs or APFS (--store / PDB_ENV_STORE), or use the full-copy backend.',
        },
      );
    case 'EXDEV':
      return new PdbError(
        'E_CROSS_DEVICE',
        `a clone of ${relPath} would cross filesystems (EXDEV); the base and the session must share one filesystem`,
        {
          cause: err,
          path: relPath,
          hint: 'Keep the whole store (bases and sessions) on one filesystem.',
        },
      );
    default:
      // ENOSPC, EROFS, EACCES... typed by the one classifier, naming the file.
      return toPdbError(err, 'E_IO', { action: `cloning ${relPath}` });
  }
}

export interface ClonedTree {
  files: number;
  /** Logical bytes of the cloned files (btrfs keeps files below max_inline in metadata, which a clone copies). */
  bytes: number;
  /** Largest files, to observe sharing on. */
  sample: string[];
  /** Each clone's stat signature, by relative path (pool method only). */
  sigs: Map<string, string> | null;
}

/**
 * Recreate `snapshot` at `root` from the materialized `base`: directories and symlinks are made,
 * every file is a forced clone (`COPYFILE_FICLONE_FORCE`; libuv also copies the mode bits).
 */
export async function cloneTree(
  base: string,
  snapshot: Snapshot,
  root: string,
  options: { method?: CloneMethod; onProgress?: ProgressFn } = {},
): Promise<ClonedTree> {
  mkdirSync(root);
  const files: string[] = [];
  const sizes: Array<[string, number]> = [];
  for (const e of snapshot.entries) {
    const dst = join(root, e.path);
    switch (e.kind) {
      case 'dir':
        mkdirSync(dst);
        break;
      case 'symlink':
        symlinkSync(e.target, dst);
        break;
      case 'file':
        files.push(e.path);
        sizes.push([e.path, e.size]);
        break;
      default: {
        const never: never = e;
        throw new Error(`unknown entry ${JSON.stringify(never)}`);
      }
    }
  }
  const bytes = sizes.reduce((n, [, size]) => n + size, 0);
  const sizeOf = new Map(sizes);
  const counter = progressCounter('clone', files.length, bytes, options.onProgress);
  const count = (rels: string[]) =>
    counter(
      rels.length,
      rels.reduce((n, r) => n + sizeOf.get(r)!, 0),
    );
  const sigs =
    (options.method ?? 'pool') === 'pool' ? await clonePool(base, root, files, count) : await cloneLibuv(base, root, files, count);
  // Sample the largest files: tiny files may be inline in metadata (btrfs), where FIEMAP shows no
  // shared extent even though the clone is real.
  const sample = sizes
    .filter(([, size]) => size >= 8192)
    .sort((a, b) => b[1] - a[1])
    .slice(0, SAMPLE_SIZE)
    .map(([p]) => p);
  return { files: files.length, bytes, sample, sigs };
}

/** Clones in the fs worker pool, in batches: each worker issues blocking ioctls and records the clone's signature. */
async function clonePool(base: string, root: string, files: string[], count: (rels: string[]) => void): Promise<Map<string, string>> {
  const items: CloneItem[] = files.map((rel) => [join(base, rel), join(root, rel)]);
  const rel = (dst: string) => dst.slice(root.length + 1);
  let results;
  try {
    results = await sharedFsPool().map(items, (batch) => ({ op: 'clone', items: batch }), {
      onBatch: (b) => count(b.map(([, dst]) => rel(dst))),
    });
  } catch (err) {
    // The worker's own error (errno and the destination) is the cause: type it as a clone failure.
    const cause = isPdbError(err) ? (err.cause as { path?: string } | undefined) : undefined;
    if (!cause?.path) throw err;
    throw cloneError(cause, rel(cause.path));
  }
  const sigs = new Map<string, string>();
  files.forEach((rel, i) => sigs.set(rel, results[i]!.sig!));
  return sigs;
}

/** Clones through libuv (fs.promises.copyFile), CLONE_CONCURRENCY at a time. */
async function cloneLibuv(base: string, root: string, files: string[], count: (rels: string[]) => void): Promise<null> {
  let next = 0;
  let failure: PdbError | null = null;
  const worker = async (): Promise<void> => {
    while (failure === null && next < files.length) {
      const rel = files[next++]!;
      try {
        await copyFile(join(base, rel), join(root, rel), constants.COPYFILE_FICLONE_FORCE | constants.COPYFILE_EXCL);
        count([rel]);
      } catch (err) {
        failure ??= cloneError(err, rel);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(CLONE_CONCURRENCY, files.length) }, worker));
  if (failure) throw failure;
  return null;
}

export const SAMPLE_SIZE = 8;

/**
 * Observe sharing with FIEMAP (backends/shared/fiemap.ts): true when every sampled file has a
 * `shared` extent, false when one has none, null when nothing could be observed (no filefrag, no sample).
 */
export async function observeShared(paths: string[]): Promise<{ observed: boolean | null; checked: number; shared: number; tool: string }> {
  if (paths.length === 0) return { observed: null, checked: 0, shared: 0, tool: 'none (no file large enough to sample)' };
  let maps: Map<string, Extent[]>;
  try {
    maps = (await mapExtents(paths)).maps;
  } catch (err) {
    if (isPdbError(err, 'E_TOOL_MISSING')) return { observed: null, checked: 0, shared: 0, tool: 'filefrag missing' };
    throw err;
  }
  const shared = [...maps.values()].filter((extents) => extents.some((e) => e.flags.includes('shared'))).length;
  return {
    observed: maps.size === paths.length ? shared === maps.size : false,
    checked: maps.size,
    shared,
    tool: 'filefrag -v (FIEMAP)',
  };
}
