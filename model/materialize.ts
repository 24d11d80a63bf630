import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { sharedFsPool, type FsPool } from './fs-pool.js';
import type { ObjectStore } from './object-store.js';
import type { Snapshot } from './snapshot.js';

/**
 * Write a Snapshot's tree into an empty directory with explicit reads and writes of every byte
 * (the full-copy oracle's way: no copy_file_range, no reflink). Entries are sorted by path, so a
 * directory always comes before what it holds.
 */
export async function materializeTree(
  store: ObjectStore,
  snapshot: Snapshot,
  destRoot: string,
  pool: FsPool = sharedFsPool(),
): Promise<{ files: number; bytes: number }> {
  mkdirSync(destRoot, { recursive: true });
  const copies: Array<[string, string, number]> = [];
  let bytes = 0;
  for (const e of snapshot.entries) {
    const dst = join(destRoot, e.path);
    switch (e.kind) {
      case 'dir':
        mkdirSync(dst, { recursive: true });
        break;
      case 'symlink':
        symlinkSync(e.target, dst);
        break;
      case 'file':
        copies.push([store.objectPath(e.digest), dst, e.exec ? 0o755 : 0o644]);
        bytes += e.size;
        break;
      default: {
        const never: never = e;
        throw new Error(`unknown entry ${JSON.stringify(never)}`);
      }
    }
  }
  // Big files first, so the last worker is not left alone with a 256 MiB file.
  const sizes = new Map(snapshot.entries.map((e) => [join(destRoot, e.path), e.kind === 'file' ? e.size : 0]));
  copies.sort((a, b) => sizes.get(b[1])! - sizes.get(a[1])!);
  await pool.map(copies, (items) => ({ op: 'copy', items }));
  return { files: copies.length, bytes };
}
