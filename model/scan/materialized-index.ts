// A Snapshot as index columns, and the tree index of a tree materialized from one (a base, or a new
// session's root). An import hands its tree on as the columns its scan made: the materializer
// reads rows, records each file's stat data in number columns as it is written, and the index is
// those columns beside the Snapshot's own. No entry, path or signature string is kept per row: at
// 268,753 entries the entries, a Map of signatures and its copy with the directories held about
// 200 MB of the first import's heap.
import { lstatSync } from 'node:fs';
import type { Digest } from '../canonical-json.js';
import { SNAPSHOT_VERSION, type Entry, type Snapshot } from '../snapshot.js';
import {
  F_ESCAPE,
  F_EXEC,
  F_TRUSTED,
  KIND_DIR,
  KIND_FILE,
  columnsFromEntries,
  rowName,
  setRowStat,
  type IndexColumns,
  type RowStat,
} from './index-columns.js';
import { parseSignature } from './index-file.js';
import { COARSE_RACY_WINDOW_MS, RACY_WINDOW_MS, TreeIndex, indexHeader, isTrustable, rootSig } from './tree-index.js';

/** A Snapshot that carries its rows as index columns; its `entries` are built only when read. */
export interface ColumnarSnapshot extends Snapshot {
  readonly columns: IndexColumns;
}

/** A Snapshot of `columns` (sorted rows); `entries` builds the entry list the first time it is read. */
export function columnarSnapshot(columns: IndexColumns, base: Digest | null, excludes: string[], entries: () => Entry[]): ColumnarSnapshot {
  let built: Entry[] | null = null;
  const snapshot = {
    version: SNAPSHOT_VERSION,
    base,
    excludes,
    get entries() {
      return (built ??= entries());
    },
  };
  // Not enumerable: a copy or JSON of the Snapshot is its document, never the columns.
  Object.defineProperty(snapshot, 'columns', { value: columns, enumerable: false });
  return snapshot as ColumnarSnapshot;
}

/** The rows of a Snapshot: the columns it carries, else made from its entries (which must hold every directory). */
export function snapshotColumns(snapshot: Snapshot): IndexColumns {
  return (snapshot as Partial<ColumnarSnapshot>).columns ?? columnsFromEntries(snapshot.entries, () => null);
}

/** The path of every directory row (other rows: undefined), each made once from its parent's. */
export function dirPaths(c: IndexColumns): Array<string | undefined> {
  const out = new Array<string | undefined>(c.n);
  for (let i = 0; i < c.n; i++) if (c.kind[i] === KIND_DIR) out[i] = rowPathIn(c, out, i);
  return out;
}

/** Row i's path, from the paths of `dirPaths` (its parent's is there). */
export function rowPathIn(c: IndexColumns, dirs: ReadonlyArray<string | undefined>, i: number): string {
  const p = c.parent[i]!;
  return p < 0 ? rowName(c, i) : `${dirs[p]!}/${rowName(c, i)}`;
}

/** Stat data per row of a Snapshot's columns (IndexColumns' stat columns), as the tree was written; `has[i]` is 0 where none was recorded. */
export interface RowStats extends Pick<IndexColumns, 'ino' | 'size' | 'mtime' | 'ctime' | 'mode'> {
  has: Uint8Array;
}

export function emptyRowStats(n: number): RowStats {
  return {
    ino: new Float64Array(n),
    size: new Float64Array(n),
    mtime: new Float64Array(n),
    ctime: new Float64Array(n),
    mode: new Uint32Array(n),
    has: new Uint8Array(n),
  };
}

export function setRowStats(s: RowStats, i: number, st: RowStat): void {
  setRowStat(s, i, st);
  s.has[i] = 1;
}

/** Record a stat signature string (statSignature) for row i; one that does not parse records nothing. */
export function setRowSignature(s: RowStats, i: number, sig: string | undefined): void {
  const st = sig === undefined ? null : parseSignature(sig);
  if (st) setRowStats(s, i, st);
}

/** Row stats from signatures by path (a backend that reports a Map): the rows of `snapshot.entries`. */
export function rowStatsFromSigs(snapshot: Snapshot, sigs: ReadonlyMap<string, string>): RowStats {
  const stats = emptyRowStats(snapshot.entries.length);
  snapshot.entries.forEach((e, i) => setRowSignature(stats, i, sigs.get(e.path)));
  return stats;
}

/**
 * Record the stat data of every directory row of `c` under `root` (a directory the backend did
 * not make, or made as something else, gets none: the next scan reads it, and the oracle, not the
 * index, judges the tree); the root's own stat.
 */
export function recordDirStats(root: string, c: IndexColumns, stats: RowStats): RowStat {
  const dirs = dirPaths(c);
  for (let i = 0; i < c.n; i++) {
    if (c.kind[i] !== KIND_DIR) continue;
    let st;
    try {
      st = lstatSync(`${root}/${dirs[i]!}`, { throwIfNoEntry: false });
    } catch {
      continue; // a parent that is not a directory (ENOTDIR)
    }
    if (st?.isDirectory()) setRowStats(stats, i, st);
  }
  return lstatSync(root);
}

/** The newest mtime or ctime recorded, and whether every recorded mtime is a whole second (a filesystem without sub-second times). */
export function recordedTimes(stats: RowStats): { newestMs: number; coarse: boolean } {
  let newestMs = 0;
  let any = false;
  let whole = true;
  for (let i = 0; i < stats.has.length; i++) {
    if (stats.has[i] === 0) continue;
    any = true;
    newestMs = Math.max(newestMs, stats.mtime[i]!, stats.ctime[i]!);
    if (stats.mtime[i]! % 1000 !== 0) whole = false;
  }
  return { newestMs, coarse: any && whole };
}

/**
 * The tree index of a tree just materialized from the Snapshot `digest` of rows `c`: nothing but
 * the writer has touched it, so each recorded stat holds from `recordedAtMs` on (trusted unless
 * racily clean then). The same index as createTreeIndex gives for the entries and their
 * signatures; it shares the Snapshot's structure columns (names, parents, digests, targets).
 */
export function materializedIndex(
  c: IndexColumns,
  doc: { digest: Digest; base: Digest | null; excludes: string[]; generation: string },
  stats: RowStats,
  recordedAtMs: number,
  root: RowStat | null,
): TreeIndex {
  const { coarse } = recordedTimes(stats);
  const window = coarse ? COARSE_RACY_WINDOW_MS : RACY_WINDOW_MS;
  const flags = new Uint8Array(c.n);
  const size = new Float64Array(c.n);
  for (let i = 0; i < c.n; i++) {
    const file = c.kind[i] === KIND_FILE;
    let f = c.flags[i]! & (file ? F_ESCAPE | F_EXEC : F_ESCAPE);
    // A file's size column is its content's size; stat data of another size vouches for nothing.
    size[i] = file ? c.size[i]! : stats.size[i]!;
    if (stats.has[i] === 1 && isTrustable(stats.mtime[i]!, stats.ctime[i]!, recordedAtMs, window) && (!file || stats.size[i] === c.size[i]))
      f |= F_TRUSTED;
    flags[i] = f;
  }
  const cols: IndexColumns = { ...c, flags, size, ino: stats.ino, mtime: stats.mtime, ctime: stats.ctime, mode: stats.mode };
  const header = indexHeader(
    {
      snapshot: doc.digest,
      changeset: null,
      base: doc.base,
      excludes: doc.excludes,
      recordedAtMs,
      generation: doc.generation,
      source: null,
      coarse,
      root: root ? rootSig(root, recordedAtMs, coarse) : null,
    },
    c.n,
  );
  return new TreeIndex(header, cols);
}
