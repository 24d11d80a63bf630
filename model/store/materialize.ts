import { mkdirSync, symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Digest } from '../canonical-json.js';
import { PdbError, isPdbError, toPdbError } from '../errors.js';
import { sharedFsPool, type FsPool } from '../scan/fs-pool.js';
import type { CopyItem } from '../scan/fs-worker.js';
import { REPAIR_HINT, type ObjectStore } from './object-store.js';
import { progressCounter, type ProgressFn } from '../progress.js';
import type { Snapshot } from '../snapshot.js';

type FileEntry = Extract<Snapshot['entries'][number], { kind: 'file' }>;

/**
 * Write a Snapshot's tree into an empty directory with explicit reads and writes of every byte
 * (the full-copy oracle's way: no copy_file_range, no reflink). Entries are sorted by path, so a
 * directory always comes before what it holds.
 *
 * Every byte is verified on the way out: a file whose object no longer hashes to its digest fails
 * with E_OBJECT_CORRUPT naming the relative path (the object is moved to the quarantine, so the
 * next import installs good bytes), an absent object with E_OBJECT_MISSING. The caller removes the
 * half-written tree.
 *
 * Returns each file's stat signature as written (fstat after the copy), by relative path: the tree
 * index of the new tree, so its first checkpoint need not read what was just written.
 */
export async function materializeTree(
  store: ObjectStore,
  snapshot: Snapshot,
  destRoot: string,
  pool: FsPool = sharedFsPool(),
  onProgress?: ProgressFn,
): Promise<{ files: number; bytes: number; sigs: Map<string, string> }> {
  // The files as their entries (no path, object path or digest string kept per file): each batch's
  // copy items are made when a worker takes it, so a tree of hundreds of thousands of files holds
  // only the batches in flight.
  const files: FileEntry[] = [];
  let bytes = 0;
  try {
    mkdirSync(destRoot, { recursive: true });
    for (const e of snapshot.entries) {
      switch (e.kind) {
        case 'dir':
          mkdirSync(join(destRoot, e.path), { recursive: true });
          break;
        case 'symlink':
          symlinkSync(e.target, join(destRoot, e.path));
          break;
        case 'file':
          store.objectPath(e.digest); // a malformed digest fails here, before anything is copied
          files.push(e);
          bytes += e.size;
          break;
        default: {
          const never: never = e;
          throw new Error(`unknown entry ${JSON.stringify(never)}`);
        }
      }
    }
  } catch (err) {
    throw toPdbError(err, 'E_IO', { action: 'materializing the tree' });
  }
  // Big files first, so the last worker is not left alone with a 256 MiB file.
  files.sort((a, b) => b.size - a.size);
  const item = (e: FileEntry): CopyItem => [
    store.objectPath(e.digest),
    join(destRoot, e.path),
    e.exec ? 0o755 : 0o644,
    e.digest.slice('sha256:'.length),
  ];
  const count = progressCounter('copy', files.length, bytes, onProgress);
  // Each signature goes into the map as its batch comes back: no result object per file is kept.
  const sigs = new Map<string, string>();
  try {
    await pool.each(
      files,
      (batch) => ({ op: 'copy', items: batch.map(item) }),
      (i, r) => sigs.set(files[i]!.path, r!.sig!),
      {
        onBatch: (batch) =>
          count(
            batch.length,
            batch.reduce((n, e) => n + e.size, 0),
          ),
      },
    );
  } catch (err) {
    throw objectFailure(store, destRoot, err);
  }
  return { files: files.length, bytes, sigs };
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
