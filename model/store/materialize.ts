import { mkdirSync, symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Digest } from '../canonical-json.js';
import { PdbError, isPdbError, toPdbError } from '../errors.js';
import { sharedFsPool, type FsPool } from '../scan/fs-pool.js';
import type { CopyItem } from '../scan/fs-worker.js';
import { REPAIR_HINT, type ObjectStore } from './object-store.js';
import { progressCounter, type ProgressFn } from '../progress.js';
import type { Snapshot } from '../snapshot.js';
import { F_EXEC, KIND_DIR, KIND_FILE, KIND_LINK, rowDigestHex, rowTarget, type IndexColumns } from '../scan/index-columns.js';
import {
  dirPaths,
  emptyRowStats,
  rowPathIn,
  setRowSignature,
  snapshotColumns,
  type ColumnarSnapshot,
  type RowStats,
} from '../scan/materialized-index.js';

/**
 * Write a Snapshot's tree into an empty directory with explicit reads and writes of every byte
 * (the full-copy oracle's way: no copy_file_range, no reflink). Rows are sorted by path, so a
 * directory always comes before what it holds.
 *
 * Every byte is verified on the way out: a file whose object no longer hashes to its digest fails
 * with E_OBJECT_CORRUPT naming the relative path (the object is moved to the quarantine, so the
 * next import installs good bytes), an absent object with E_OBJECT_MISSING. The caller removes the
 * half-written tree.
 *
 * Returns each file's stat data as written (fstat after the copy), by row of the Snapshot's
 * columns: the tree index of the new tree (materializedIndex), so its first checkpoint need not
 * read what was just written.
 */
export async function materializeTree(
  store: ObjectStore,
  snapshot: Snapshot,
  destRoot: string,
  pool: FsPool = sharedFsPool(),
  onProgress?: ProgressFn,
): Promise<{ files: number; bytes: number; stats: RowStats }> {
  // The rows, never an entry per file: a Snapshot an import made carries its columns, and each
  // batch's copy items (paths, object paths) are made when a worker takes it, so a tree of
  // hundreds of thousands of files holds numbers and the batches in flight.
  let c: IndexColumns;
  let dirs: Array<string | undefined>;
  const files: number[] = [];
  let bytes = 0;
  try {
    if (!(snapshot as Partial<ColumnarSnapshot>).columns)
      for (const e of snapshot.entries) if (e.kind === 'file') store.objectPath(e.digest); // a malformed digest fails here, before anything is copied
    c = snapshotColumns(snapshot);
    mkdirSync(destRoot, { recursive: true });
    dirs = dirPaths(c);
    for (let i = 0; i < c.n; i++) {
      switch (c.kind[i]) {
        case KIND_DIR:
          mkdirSync(join(destRoot, dirs[i]!), { recursive: true });
          break;
        case KIND_LINK:
          symlinkSync(rowTarget(c, i), join(destRoot, rowPathIn(c, dirs, i)));
          break;
        case KIND_FILE:
          files.push(i);
          bytes += c.size[i]!;
          break;
        default:
          throw new Error(`unknown kind ${c.kind[i]} of row ${i}`);
      }
    }
  } catch (err) {
    throw toPdbError(err, 'E_IO', { action: 'materializing the tree' });
  }
  // Big files first, so the last worker is not left alone with a 256 MiB file.
  files.sort((a, b) => c.size[b]! - c.size[a]!);
  const item = (i: number): CopyItem => {
    const hex = rowDigestHex(c, i);
    return [
      store.objectPath(`sha256:${hex}` as Digest),
      join(destRoot, rowPathIn(c, dirs, i)),
      (c.flags[i]! & F_EXEC) !== 0 ? 0o755 : 0o644,
      hex,
    ];
  };
  const count = progressCounter('copy', files.length, bytes, onProgress);
  // Each file's stat data goes into its row as its batch comes back: no result object per file is kept.
  const stats = emptyRowStats(c.n);
  try {
    await pool.each(
      files,
      (batch) => ({ op: 'copy', items: batch.map(item) }),
      (k, r) => setRowSignature(stats, files[k]!, r!.sig),
      {
        onBatch: (batch) =>
          count(
            batch.length,
            batch.reduce((n, i) => n + c.size[i]!, 0),
          ),
      },
    );
  } catch (err) {
    throw objectFailure(store, destRoot, err);
  }
  return { files: files.length, bytes, stats };
}

/** Name the relative path and the digest of a corrupt or missing object, and quarantine a corrupt one. */
function objectFailure(store: ObjectStore, destRoot: string, err: unknown): unknown {
  if (!isPdbError(err, 'E_OBJECT_CORRUPT') && !isPdbError(err, 'E_OBJECT_MISSING')) return err;
  const cause = err.cause as { path?: string; object?: string } | undefined;
  const rel = cause?.path ? relative(destRoot, cause.path) : '?';
  const digest = (cause?.object ? `sha256:${cause.object.split('/').slice(-2).join('')}` : '?') as Digest;
  if (err.code === 'E_OBJECT_MISSING')
    return new PdbError('E_OBJECT_MISSING', `the object of ${rel} (${digest}) is missing from the store`, {
      path: rel,
      cause: err,
      hint: REPAIR_HINT,
    });
  const aside = store.quarantineObject(digest);
  return new PdbError(
    'E_OBJECT_CORRUPT',
    `the object of ${rel} (${digest}) is corrupt: ${err.message}; it was moved to the quarantine${aside ? '' : ' by another process'}`,
    { path: rel, cause: err, hint: REPAIR_HINT },
  );
}
