// Import: scan a source directory into the store, and the race check a prepare makes after it
// materialized the session. The source's tree index (model/scan/tree-index.ts) makes an unchanged
// source cost a stat walk: files whose signature is the recorded one are not read, and when
// nothing differs the recorded Snapshot digest is the answer (nothing serialized or hashed again).
import { collectAbove } from '../../model/os/heap.js';
import { lstat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Digest } from '../../model/canonical-json.js';
import { PdbError } from '../../model/errors.js';
import { writeFileAtomic, type ObjectStore } from '../../model/store/object-store.js';
import { sourceKey } from '../../model/os/hash.js';
import type { ProgressFn } from '../../model/progress.js';
import { SOURCE_CONFIG, readSourceConfig, scanTree, type ScanResult } from '../../model/scan/scan.js';
import { changeOf, type Change, type Snapshot } from '../../model/snapshot.js';
import { columnarSnapshot } from '../../model/scan/materialized-index.js';
import { readTreeIndex, treeIndexPieces, type TreeIndex } from '../../model/scan/tree-index.js';

/** Above this much heap (live and garbage) when its walk is released, an import collects first: a tree of some 50,000 entries or more. */
const IMPORT_COLLECT_BYTES = 64 * 1024 * 1024;

export interface ImportResult {
  digest: Digest;
  /** The Snapshot (built when first read: an unchanged import never needs it). */
  snapshot: Snapshot;
  excludes: string[];
  /** What the scan found and did (its walk and hashes are not kept: a large tree's are hundreds of MB). */
  scan: ScanSummary;
  /** The source's tree index as this import left it: the state the race check compares the source with. */
  index: TreeIndex;
}

/** The counts of an import's scan and the paths it found changed. */
export type ScanSummary = Pick<
  ScanResult,
  'files' | 'bytes' | 'filesHashed' | 'filesTrusted' | 'objectsInstalled' | 'stale' | 'changedPaths' | 'extraExcludes'
>;

export interface ImportOptions {
  /** Check that every trusted digest is in the store (after an object turned out missing). */
  checkObjects?: boolean;
  onProgress?: ProgressFn;
}

/** Where the tree index of the last import of `src` is kept (one file per source). */
export function sourceIndexFile(store: ObjectStore, src: string): string {
  return join(store.paths.sources, `${sourceKey(src)}.index`);
}

const sameList = (a: readonly string[] | null, b: readonly string[]) =>
  a !== null && a.length === b.length && a.every((x, i) => x === b[i]);

/** Scan a source directory into the store (installing the bytes it has not seen) and record its Snapshot. */
export async function importSource(store: ObjectStore, sourceDir: string, options: ImportOptions = {}): Promise<ImportResult> {
  const src = resolve(sourceDir);
  const st = await lstat(src).catch(() => null);
  if (!st || !st.isDirectory())
    throw new PdbError('E_SOURCE_MISSING', `source directory ${src} does not exist or is not a directory`, {
      hint: 'Pass --from DIR or run in your project directory.',
    });
  const { excludes } = await readSourceConfig(src);
  const indexFile = sourceIndexFile(store, src);
  const index = readTreeIndex(indexFile);
  const generation = store.generation();
  const scan = await scanTree(src, {
    excludes,
    excludeAbsolute: [store.paths.root],
    store,
    trust: index,
    checkObjects: options.checkObjects === true || index?.header.generation !== generation,
    onProgress: options.onProgress,
  });
  const h = index?.header;
  const unchanged = !!h && scan.changedPaths!.length === 0 && sameList(h.excludes, excludes);
  let digest: Digest;
  if (unchanged && h.snapshot && store.has(h.snapshot)) digest = h.snapshot;
  else {
    // The tree is in the columns now: the walk's entries go before the Snapshot's bytes are made.
    scan.release();
    // At a first import of a large tree that walk is most of the heap, all garbage now: collected
    // before the Snapshot's bytes are made, not left in RSS beside them (issue 38's 300 MB).
    collectAbove(IMPORT_COLLECT_BYTES);
    digest = await scan.installSnapshot(store, null);
  }
  // Nothing changed and every row is as recorded: the index already says exactly this (a file
  // hashed again, racily clean before or touched, may be trustable now: then it is rewritten).
  const same =
    unchanged && scan.stale === 0 && digest === h.snapshot && h.generation === generation && sameList(h.extraExcludes, scan.extraExcludes);
  const next = same ? index! : scan.nextIndex({ snapshot: digest, changeset: null, base: null, generation, source: src });
  if (!same) await writeFileAtomic(store.paths, indexFile, treeIndexPieces(next), 0o644, { sync: false });
  let snapshot: Snapshot | null = null;
  const { files, bytes, filesHashed, filesTrusted, objectsInstalled, stale, changedPaths, extraExcludes } = scan;
  return {
    digest,
    excludes,
    scan: { files, bytes, filesHashed, filesTrusted, objectsInstalled, stale, changedPaths, extraExcludes },
    index: next,
    get snapshot() {
      // The index's rows are the tree as scanned (the trusted index itself when nothing changed):
      // a materializer reads them as they are, and entries are built only for one that asks.
      return (snapshot ??= columnarSnapshot(next.cols, null, excludes, () => next.entries));
    },
  };
}

/**
 * The race check of prepare: scan the source again against the index the import left (the same
 * stat walk and directory rule) and list what differs from the imported Snapshot; nothing is
 * hashed again except files that were racily clean or touched since. Writes nothing.
 */
export async function sourceChangesSince(store: ObjectStore, sourceDir: string, imported: ImportResult): Promise<Change[]> {
  const src = resolve(sourceDir);
  const { excludes } = await readSourceConfig(src);
  if (!sameList(excludes, imported.excludes)) return [{ path: SOURCE_CONFIG, kind: 'modify', before: null, after: null }];
  const again = await scanTree(src, { excludes, excludeAbsolute: [store.paths.root], trust: imported.index });
  const changes: Change[] = [];
  for (const path of again.changedPaths!) {
    const row = imported.index.position(path);
    const c = changeOf(path, row === undefined ? null : imported.index.entry(row), again.changedEntries!.get(path) ?? null);
    if (c) changes.push(c);
  }
  return changes;
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
