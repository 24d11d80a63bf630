// The columns of a tree index: one row per entry, sorted by the UTF-8 bytes of its path (the
// Snapshot's order), each column one typed array, so a scan compares numbers and never builds an
// object for an entry that did not change. A row's parent is the row of its directory (-1 at the
// top level); a directory's children are the rows whose parent it is, in path order, which is
// their name order (they share the prefix "dir/").
import type { Digest } from '../canonical-json.js';
import type { Entry } from '../snapshot.js';

export const KIND_DIR = 1;
export const KIND_FILE = 2;
export const KIND_LINK = 3;
export type KindCode = typeof KIND_DIR | typeof KIND_FILE | typeof KIND_LINK;

/** A file's exec bit (any x bit). */
export const F_EXEC = 1;
/** The recorded stat data may be trusted (it was not racily clean when recorded). */
export const F_TRUSTED = 2;
/** The path holds a character JSON escapes (`"`, `\` or a control character). */
export const F_ESCAPE = 4;

export interface IndexColumns {
  n: number;
  kind: Uint8Array;
  flags: Uint8Array;
  parent: Int32Array;
  /** End of row i's path in `pathBytes` (its start is the end of row i - 1). */
  pathEnd: Uint32Array;
  pathBytes: Uint8Array;
  ino: Float64Array;
  size: Float64Array;
  mtime: Float64Array;
  ctime: Float64Array;
  mode: Uint32Array;
  /** 32 bytes per row: a file's sha256 (zeros for the other kinds). */
  digest: Uint8Array;
  /** End of row i's symlink target in `valueBytes`. */
  valueEnd: Uint32Array;
  valueBytes: Uint8Array;
}

/** The stat data a row records: inode, size, mtime, ctime and mode as lstat gives them (number form). */
export interface RowStat {
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  mode: number;
}

export const kindCode = (kind: Entry['kind']): KindCode => (kind === 'dir' ? KIND_DIR : kind === 'file' ? KIND_FILE : KIND_LINK);

const ESCAPED = /["\\\u0000-\u001f]/;
export const needsEscape = (s: string): boolean => ESCAPED.test(s);

export function emptyColumns(n: number, pathBytes: number, valueBytes: number): IndexColumns {
  return {
    n,
    kind: new Uint8Array(n),
    flags: new Uint8Array(n),
    parent: new Int32Array(n),
    pathEnd: new Uint32Array(n),
    pathBytes: new Uint8Array(pathBytes),
    ino: new Float64Array(n),
    size: new Float64Array(n),
    mtime: new Float64Array(n),
    ctime: new Float64Array(n),
    mode: new Uint32Array(n),
    digest: new Uint8Array(n * 32),
    valueEnd: new Uint32Array(n),
    valueBytes: new Uint8Array(valueBytes),
  };
}

const pathStart = (c: IndexColumns, i: number) => (i === 0 ? 0 : c.pathEnd[i - 1]!);
const valueStart = (c: IndexColumns, i: number) => (i === 0 ? 0 : c.valueEnd[i - 1]!);

const asBuffer = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

export function rowPath(c: IndexColumns, i: number): string {
  return asBuffer(c.pathBytes).toString('utf8', pathStart(c, i), c.pathEnd[i]!);
}

export function rowTarget(c: IndexColumns, i: number): string {
  return asBuffer(c.valueBytes).toString('utf8', valueStart(c, i), c.valueEnd[i]!);
}

export function rowDigestHex(c: IndexColumns, i: number): string {
  return asBuffer(c.digest).toString('hex', i * 32, i * 32 + 32);
}

/** Row i as a contract entry. */
export function rowEntry(c: IndexColumns, i: number): Entry {
  const path = rowPath(c, i);
  switch (c.kind[i]) {
    case KIND_DIR:
      return { path, kind: 'dir' };
    case KIND_LINK:
      return { path, kind: 'symlink', target: rowTarget(c, i) };
    default:
      return { path, kind: 'file', digest: `sha256:${rowDigestHex(c, i)}` as Digest, size: c.size[i]!, exec: (c.flags[i]! & F_EXEC) !== 0 };
  }
}

/** The row of `path` (binary search over the path bytes), or -1. */
export function findRow(c: IndexColumns, path: string | Buffer): number {
  const key = typeof path === 'string' ? Buffer.from(path, 'utf8') : path;
  const bytes = asBuffer(c.pathBytes);
  let lo = 0;
  let hi = c.n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const cmp = bytes.compare(key, 0, key.length, pathStart(c, mid), c.pathEnd[mid]!);
    if (cmp === 0) return mid;
    if (cmp < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

/** The first row whose path sorts at or after `key` (where a new path goes). */
export function lowerBound(c: IndexColumns, key: Buffer): number {
  const bytes = asBuffer(c.pathBytes);
  let lo = 0;
  let hi = c.n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (bytes.compare(key, 0, key.length, pathStart(c, mid), c.pathEnd[mid]!) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Children lists: firstChild[n] is the first top-level row; -1 ends a list. */
export interface ChildLinks {
  firstChild: Int32Array;
  nextSibling: Int32Array;
}

export function childLinks(c: IndexColumns): ChildLinks {
  const firstChild = new Int32Array(c.n + 1).fill(-1);
  const nextSibling = new Int32Array(c.n).fill(-1);
  for (let i = c.n - 1; i >= 0; i--) {
    const p = c.parent[i]! < 0 ? c.n : c.parent[i]!;
    nextSibling[i] = firstChild[p]!;
    firstChild[p] = i;
  }
  return { firstChild, nextSibling };
}

/** Byte length of row i's path, and of its name (the last component). */
export function nameStart(c: IndexColumns, i: number): number {
  const p = c.parent[i]!;
  return p < 0 ? pathStart(c, i) : pathStart(c, i) + (c.pathEnd[p]! - pathStart(c, p)) + 1;
}

export function rowName(c: IndexColumns, i: number): string {
  return asBuffer(c.pathBytes).toString('utf8', nameStart(c, i), c.pathEnd[i]!);
}

/**
 * Columns of sorted `entries`, with the stat data of each row from `statOf` (null: nothing
 * recorded) and whether it may be trusted.
 */
export function columnsFromEntries(entries: readonly Entry[], statOf: (e: Entry, i: number) => { st: RowStat; trusted: boolean } | null) {
  const n = entries.length;
  const paths = entries.map((e) => Buffer.from(e.path, 'utf8'));
  const targets = entries.map((e) => (e.kind === 'symlink' ? Buffer.from(e.target, 'utf8') : null));
  const c = emptyColumns(
    n,
    paths.reduce((s, b) => s + b.length, 0),
    targets.reduce((s, b) => s + (b ? b.length : 0), 0),
  );
  const dirs = new Map<string, number>();
  let po = 0;
  let vo = 0;
  for (let i = 0; i < n; i++) {
    const e = entries[i]!;
    c.kind[i] = kindCode(e.kind);
    c.pathBytes.set(paths[i]!, po);
    c.pathEnd[i] = po += paths[i]!.length;
    const t = targets[i];
    if (t) c.valueBytes.set(t, vo);
    c.valueEnd[i] = vo += t ? t.length : 0;
    const slash = e.path.lastIndexOf('/');
    c.parent[i] = slash < 0 ? -1 : (dirs.get(e.path.slice(0, slash)) ?? -2);
    if (c.parent[i] === -2) throw new Error(`tree index: ${e.path} comes without its directory`);
    if (e.kind === 'dir') dirs.set(e.path, i);
    let flags = needsEscape(e.path) ? F_ESCAPE : 0;
    if (e.kind === 'file') {
      c.digest.set(Buffer.from(e.digest.slice(7), 'hex'), i * 32);
      c.size[i] = e.size;
      if (e.exec) flags |= F_EXEC;
    }
    const s = statOf(e, i);
    if (s) {
      setRowStat(c, i, s.st);
      // A file's size column is its content's size; stat data of another size vouches for nothing.
      if (e.kind === 'file') c.size[i] = e.size;
      if (s.trusted && (e.kind !== 'file' || s.st.size === e.size)) flags |= F_TRUSTED;
    }
    c.flags[i] = flags;
  }
  return c;
}

export function setRowStat(c: IndexColumns, i: number, st: RowStat): void {
  c.ino[i] = st.ino;
  c.size[i] = st.size;
  c.mtime[i] = st.mtimeMs;
  c.ctime[i] = st.ctimeMs;
  c.mode[i] = st.mode;
}
