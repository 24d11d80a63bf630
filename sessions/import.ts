// Import: scan a source directory into the store (with the stat cache that lets an unchanged
// source cost a stat walk), and the race check that a prepare makes after materializing.
import { lstat, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Digest } from '../model/canonical-json.js';
import { PdbError } from '../model/errors.js';
import { writeFileAtomic, type ObjectStore } from '../model/object-store.js';
import { sourceKey } from '../model/paths.js';
import { SOURCE_CONFIG, parseStatCache, readSourceConfig, scanTree, serializeStatCache, type ScanResult } from '../model/scan.js';
import { createSnapshot, diffEntries, type Change, type Snapshot } from '../model/snapshot.js';

export interface ImportResult {
  digest: Digest;
  snapshot: Snapshot;
  scan: ScanResult;
}

/** Where the stat signatures of the last import of `src` are kept (one file per source). */
function statCacheFile(store: ObjectStore, src: string): string {
  return join(store.paths.sources, `${sourceKey(src)}.stat-cache.json`);
}

/** Scan a source directory into the store (installing its bytes) and record its Snapshot. */
export async function importSource(store: ObjectStore, sourceDir: string): Promise<ImportResult> {
  const src = resolve(sourceDir);
  const st = await lstat(src).catch(() => null);
  if (!st || !st.isDirectory())
    throw new PdbError('E_SOURCE_MISSING', `source directory ${src} does not exist or is not a directory`, {
      hint: 'Pass --from DIR or run in your project directory.',
    });
  const { excludes } = await readSourceConfig(src);
  const cacheFile = statCacheFile(store, src);
  const statCache = parseStatCache(await readFile(cacheFile, 'utf8').catch(() => ''));
  const scan = await scanTree(src, { excludes, excludeAbsolute: [store.paths.root], store, statCache });
  const snapshot = createSnapshot(scan.entries, excludes, null);
  const digest = await store.putDocument(snapshot);
  await writeFileAtomic(store.paths, cacheFile, serializeStatCache(scan.statCache));
  return { digest, snapshot, scan };
}

/**
 * The race check of prepare: scan the source again (trusting only the stat signatures the
 * import just recorded) and list what differs from the imported Snapshot. Installs nothing and
 * writes nothing, so a clean check costs two walks, not two imports.
 */
export async function sourceChangesSince(store: ObjectStore, sourceDir: string, imported: ImportResult): Promise<Change[]> {
  const src = resolve(sourceDir);
  const { excludes } = await readSourceConfig(src);
  if (excludes.join('\0') !== imported.snapshot.excludes.join('\0')) {
    return [{ path: SOURCE_CONFIG, kind: 'modify', before: null, after: null }];
  }
  const again = await scanTree(src, { excludes, excludeAbsolute: [store.paths.root], statCache: imported.scan.statCache });
  return diffEntries(imported.snapshot.entries, again.entries);
}

/** Fail with E_SOURCE_CHANGED unless the source is still what was imported. */
export async function assertSourceUnchanged(store: ObjectStore, sourceDir: string, imported: ImportResult): Promise<void> {
  const changes = await sourceChangesSince(store, sourceDir, imported);
  if (changes.length > 0) {
    const changed = changes.slice(0, 5).map((c) => `${c.kind} ${c.path}`);
    throw new PdbError('E_SOURCE_CHANGED', `the source changed while the session was prepared (${changed.join(', ')})`, {
      hint: 'Stop whatever writes into the source and create the session again.',
    });
  }
}
