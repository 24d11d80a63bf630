// A tree index: the entries of a tree in one known state, each with the stat data it had then, so
// the next scan of that tree re-hashes only what changed (git's index, for our contract).
//
// Trust rule for a file or a symlink (git's racy-clean rule, with ctime and inode included): one
// whose signature (inode, size, mtime, ctime, mode) is the one recorded is taken to hold the
// recorded bytes (or target), unless its mtime or ctime is not safely older than the moment the
// signature was recorded: a write in the same clock tick as the stat could leave every field
// unchanged. Such racily clean entries are stored untrusted and looked at again next time. ctime
// cannot be set from user space (utimes sets it to now), so restoring size and mtime after a write
// still changes the signature.
//
// Directory rule (git's untracked cache): a directory whose (inode, mtime, ctime) is the one
// recorded, recorded safely older than the recording (the same racy rule), keeps its recorded
// names and is not read again: adding, removing or renaming an entry in a directory sets its mtime
// and ctime to now. Every entry is still lstat'ed.
//
// The file is a cache (index-file.ts): written without fsync, and one that cannot be read (cut
// short by a crash, damaged, of another format) is ignored, which only costs a full hash.
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import type { Digest } from '../canonical-json.js';
import { osErrorCode } from '../errors.js';
import type { Entry, Snapshot } from '../snapshot.js';
import {
  F_TRUSTED,
  KIND_DIR,
  allPaths,
  columnsFromEntries,
  findRow,
  rowEntry,
  rowPath,
  rowTarget,
  type IndexColumns,
  type RowStat,
} from './index-columns.js';
import {
  applyIndexDelta,
  decodeTreeIndex,
  decodeTreeIndexV1,
  encodeIndexDelta,
  encodeTreeIndex,
  indexFileChecksum,
  parseSignature,
  type RootSig,
  type TreeIndexHeader,
} from './index-file.js';

export { TREE_INDEX_VERSION, parseSignature, type RootSig, type TreeIndexHeader } from './index-file.js';

/**
 * How much older than the recording time a file's mtime and ctime must be to be trusted. Linux's
 * file timestamps come from a clock that advances once per tick (1-10 ms); 100 ms leaves a wide
 * margin. Filesystems that keep whole seconds (FAT: 2 s) get the coarse window.
 */
export const RACY_WINDOW_MS = 100;
export const COARSE_RACY_WINDOW_MS = 2_000;

/** Where an index read from disk came from: what a delta written after it must name (index-file.ts). */
export interface IndexSource {
  /** The index file read. */
  path: string;
  /** Its checksum. */
  sum: Buffer;
  /** The rows its delta changed (ascending), when one applied. */
  deltaRows: Uint32Array | null;
}

/** A tree index in memory: its header and its columns (index-columns.ts); entries are built only when asked for. */
export class TreeIndex {
  private built: Array<Entry | undefined> | null = null;
  private paths: string[] | null = null;
  /** Set by readTreeIndex for an index of version 2. */
  source: IndexSource | null = null;

  constructor(
    readonly header: TreeIndexHeader,
    readonly cols: IndexColumns,
  ) {}

  get count(): number {
    return this.cols.n;
  }

  kind(i: number): 'd' | 'l' | 'f' {
    const k = this.cols.kind[i];
    return k === KIND_DIR ? 'd' : k === 2 ? 'f' : 'l';
  }

  path(i: number): string {
    return this.paths ? this.paths[i]! : rowPath(this.cols, i);
  }

  /** A symlink's target (only for kind 'l'). */
  target(i: number): string {
    return rowTarget(this.cols, i);
  }

  /** The trusted signature of row i as a string (statSignature), '' when none is trusted. */
  sig(i: number): string {
    const c = this.cols;
    if ((c.flags[i]! & F_TRUSTED) === 0 || c.kind[i] === KIND_DIR) return '';
    return statSignature({ ino: c.ino[i]!, size: c.size[i]!, mtimeMs: c.mtime[i]!, ctimeMs: c.ctime[i]!, mode: c.mode[i]! });
  }

  entry(i: number): Entry {
    this.built ??= new Array(this.cols.n);
    return (this.built[i] ??= rowEntry(this.cols, i));
  }

  /** Every entry, sorted (built once). */
  get entries(): Entry[] {
    this.paths ??= allPaths(this.cols);
    this.built ??= new Array(this.cols.n);
    for (let i = 0; i < this.cols.n; i++) this.built[i] ??= rowEntry(this.cols, i, this.paths[i]);
    return this.built as Entry[];
  }

  /** Path -> row (binary search). */
  position(path: string): number | undefined {
    const i = findRow(this.cols, path);
    return i < 0 ? undefined : i;
  }
}

/** The stat fields a signature holds, as lstat/fstat (number form) give them. */
export type SigStat = RowStat;

/** A stat signature: inode, size, mtime, ctime and mode. Not st_dev: a btrfs snapshot or an overlay mount has another. */
export function statSignature(st: SigStat): string {
  return `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.mode}`;
}

/** The racy window for a set of timestamps: coarse when every mtime is a whole second (a filesystem without sub-second times). */
export function racyWindowMs(mtimesMs: Iterable<number>): number {
  let any = false;
  for (const m of mtimesMs) {
    any = true;
    if (m % 1000 !== 0) return RACY_WINDOW_MS;
  }
  return any ? COARSE_RACY_WINDOW_MS : RACY_WINDOW_MS;
}

/** Is a signature with these times safely older than `recordedAtMs` (not racily clean)? */
export function isTrustable(mtimeMs: number, ctimeMs: number, recordedAtMs: number, windowMs: number): boolean {
  return Math.max(mtimeMs, ctimeMs) < recordedAtMs - windowMs;
}

/** The bytes of an index file. */
export function serializeTreeIndex(index: TreeIndex): Buffer {
  return Buffer.concat(treeIndexPieces(index));
}

/** The bytes of an index file as pieces in order (what writeFileAtomic writes without joining them). */
export function treeIndexPieces(index: TreeIndex): Buffer[] {
  return encodeTreeIndex({ ...index.header, count: index.count }, index.cols);
}

/** Parse an index file (version 2, or version 1 text); null when it is not a whole, sound one (the caller then trusts nothing). */
export function parseTreeIndex(bytes: Buffer | string, verified = false): TreeIndex | null {
  const buf = typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes;
  const v2 = decodeTreeIndex(buf, verified);
  if (v2) return new TreeIndex(v2.header, v2.columns);
  if (buf[0] !== 0x7b) return null; // '{': a version 1 header line
  const v1 = decodeTreeIndexV1(buf.toString('utf8'));
  return v1 ? new TreeIndex(v1.header, v1.columns) : null;
}

/** A file's bytes; null when it is absent. */
function readOrNull(file: string): Buffer | null {
  try {
    return readFileSync(file);
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT' || osErrorCode(err) === 'ENOTDIR') return null;
    throw err;
  }
}

// In a process that reads the same index again and again (the pdb-env daemon, cli/daemon/), the
// index files whose checksum it verified: by path, the file's identity when read (device, inode,
// size, mtime and ctime in nanoseconds, from the descriptor it was read through) and the checksum
// its prefix names. The same identity is the same bytes: an index is only ever replaced by a
// rename, and a write in place would change its ctime, unless it came within the timestamps'
// granularity of the one before: so only a file whose ctime was already well past when it was
// read is remembered (git's racy-clean argument: a later write gets a later ctime). A
// 268,753-entry index's checksum took about 23 ms of every checkpoint there. Off unless
// rememberVerifiedIndexes() turned it on.
let verifiedIndexes: Map<string, string> | null = null;

/** Remember the index files verified in this process (the daemon turns it on). */
export function rememberVerifiedIndexes(): void {
  verifiedIndexes ??= new Map();
}

/** A file's bytes and identity, read through one descriptor (identity null: changed too recently to vouch for its bytes); null when it is absent. */
function readWithIdentity(file: string): { bytes: Buffer; id: string | null } | null {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT' || osErrorCode(err) === 'ENOTDIR') return null;
    throw err;
  }
  try {
    const st = fstatSync(fd, { bigint: true });
    const bytes = readFileSync(fd);
    // Whole-second timestamps (a filesystem without finer ones): the coarse window; else the racy one.
    const window = st.ctimeNs % 1_000_000_000n === 0n ? COARSE_RACY_WINDOW_MS : RACY_WINDOW_MS;
    const settled = Number(st.ctimeNs / 1_000_000n) < Date.now() - window;
    return { bytes, id: settled ? `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` : null };
  } finally {
    closeSync(fd);
  }
}

/** Read and parse an index file, its checksum computed only when these bytes were not verified before (see above). */
function readIndexFile(file: string): { bytes: Buffer; index: TreeIndex | null } | null {
  if (!verifiedIndexes) {
    const bytes = readOrNull(file);
    return bytes ? { bytes, index: parseTreeIndex(bytes) } : null;
  }
  const got = readWithIdentity(file);
  if (!got) return null;
  const sum = indexFileChecksum(got.bytes);
  const key = sum && got.id ? `${got.id}:${sum.toString('hex')}` : null;
  const index = parseTreeIndex(got.bytes, key !== null && verifiedIndexes.get(file) === key);
  if (index && key) verifiedIndexes.set(file, key);
  else verifiedIndexes.delete(file);
  return { bytes: got.bytes, index };
}

/** The delta file beside an index file (index-file.ts). */
export const deltaFileOf = (file: string): string => `${file}.delta`;

/**
 * Read a tree index file, with its delta applied when one of that file lies beside it; null when
 * it is absent or unreadable (never an error: it is a cache).
 */
export function readTreeIndex(file: string): TreeIndex | null {
  const read = readIndexFile(file);
  const index = read?.index ?? null;
  const sum = index && indexFileChecksum(read!.bytes);
  if (!index || !sum) return index;
  const delta = readOrNull(deltaFileOf(file));
  const applied = delta ? applyIndexDelta(delta, sum, index.cols) : null;
  const out = applied ? new TreeIndex(applied.header, index.cols) : index;
  out.source = { path: file, sum, deltaRows: applied?.rows ?? null };
  return out;
}

/** Rows in either ascending list, ascending. */
function unionRows(a: Uint32Array | null, b: Uint32Array): Uint32Array {
  if (!a || a.length === 0) return b;
  const out = new Uint32Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length || j < b.length) {
    const x = i < a.length ? a[i]! : Infinity;
    const y = j < b.length ? b[j]! : Infinity;
    out[k++] = Math.min(x, y);
    if (x <= y) i++;
    if (y <= x) j++;
  }
  return out.subarray(0, k);
}

/** A delta grows no longer than this many rows (then the whole index is written again). */
export const deltaLimit = (n: number): number => Math.max(256, n >> 4);

/**
 * The bytes of the delta file that makes the index `from` was read as into `next`, when `next`
 * changed only the rows `touched` of it (ascending; restated: no row added, gone or moved) and
 * the delta stays within deltaLimit; else null (write the whole index).
 */
export function indexDeltaPieces(from: TreeIndex, next: TreeIndex, touched: Uint32Array | null): Buffer[] | null {
  if (!from.source || !touched || next.count !== from.count) return null;
  const rows = unionRows(from.source.deltaRows, touched);
  if (rows.length > deltaLimit(next.count)) return null;
  return encodeIndexDelta({ ...next.header, count: next.count }, next.cols, rows, from.source.sum);
}

export type IndexFields = Pick<
  TreeIndexHeader,
  'snapshot' | 'changeset' | 'base' | 'excludes' | 'recordedAtMs' | 'generation' | 'source' | 'changes'
> &
  Partial<Pick<TreeIndexHeader, 'extraExcludes' | 'root' | 'coarse'>>;

export function indexHeader(fields: IndexFields, count: number): TreeIndexHeader {
  return {
    kind: 'pdb-env-tree-index',
    version: 2,
    extraExcludes: [],
    root: null,
    coarse: false,
    ...fields,
    count,
  };
}

/**
 * A tree index of `entries` (sorted), with the signatures in `sigs` (by path, statSignature
 * strings; a directory's too); each is trusted unless racily clean at `fields.recordedAtMs`.
 */
export function createTreeIndex(fields: IndexFields, entries: Entry[], sigs: ReadonlyMap<string, string>): TreeIndex {
  // Each signature is parsed where it is used, never kept as an object per path: at a first
  // import every entry of the tree is in `entries` and `sigs` already.
  const statOf = (path: string) => {
    const sig = sigs.get(path);
    return sig === undefined ? null : parseSignature(sig);
  };
  const coarse = fields.coarse ?? racyWindowMs(signatureMtimes(sigs)) === COARSE_RACY_WINDOW_MS;
  const window = coarse ? COARSE_RACY_WINDOW_MS : RACY_WINDOW_MS;
  const at = fields.recordedAtMs;
  const columns = columnsFromEntries(entries, (e) => {
    const st = statOf(e.path);
    return st ? { st, trusted: isTrustable(st.mtimeMs, st.ctimeMs, at, window) } : null;
  });
  const root = fields.root ?? null;
  return new TreeIndex(indexHeader({ ...fields, coarse, root }, entries.length), columns);
}

/** The mtime of every signature in `sigs` that parses (for racyWindowMs), one at a time. */
export function* signatureMtimes(sigs: ReadonlyMap<string, string>): Generator<number> {
  for (const sig of sigs.values()) {
    const st = parseSignature(sig);
    if (st) yield st.mtimeMs;
  }
}

/** The root directory's signature, trusted under the same rule. */
export function rootSig(st: RowStat, recordedAtMs: number, coarse: boolean): RootSig {
  const window = coarse ? COARSE_RACY_WINDOW_MS : RACY_WINDOW_MS;
  return { ino: st.ino, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, trusted: isTrustable(st.mtimeMs, st.ctimeMs, recordedAtMs, window) };
}
