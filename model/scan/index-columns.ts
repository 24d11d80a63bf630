// The columns of a tree index: one row per entry, sorted by the UTF-8 bytes of its path (the
// Snapshot's order), each column one typed array, so a scan compares numbers and never builds an
// object for an entry that did not change. A row holds its name (the last component of its path)
// and its parent, the row of its directory (-1 at the top level), which always comes earlier; a
// path is its parent's path, '/', and its name. A directory's children are the rows whose parent
// it is, in path order, which is their name order (they share the prefix "dir/").
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
  /** End of row i's name in `nameBytes` (its start is the end of row i - 1). */
  nameEnd: Uint32Array;
  nameBytes: Uint8Array;
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

export function emptyColumns(n: number, nameBytes: number, valueBytes: number): IndexColumns {
  return {
    n,
    kind: new Uint8Array(n),
    flags: new Uint8Array(n),
    parent: new Int32Array(n),
    nameEnd: new Uint32Array(n),
    nameBytes: new Uint8Array(nameBytes),
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

export const nameStart = (c: IndexColumns, i: number): number => (i === 0 ? 0 : c.nameEnd[i - 1]!);
const valueStart = (c: IndexColumns, i: number) => (i === 0 ? 0 : c.valueEnd[i - 1]!);

const asBuffer = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

export function rowName(c: IndexColumns, i: number): string {
  return asBuffer(c.nameBytes).toString('utf8', nameStart(c, i), c.nameEnd[i]!);
}

/** Row i's path as UTF-8 bytes: its ancestors' names and its own, joined by '/'. */
export function rowPathBytes(c: IndexColumns, i: number): Buffer {
  const chain: number[] = [];
  let len = -1;
  for (let k = i; k >= 0; k = c.parent[k]!) {
    chain.push(k);
    len += c.nameEnd[k]! - nameStart(c, k) + 1;
  }
  const out = Buffer.allocUnsafe(len);
  let o = 0;
  for (let j = chain.length - 1; j >= 0; j--) {
    const k = chain[j]!;
    o += asBuffer(c.nameBytes).copy(out, o, nameStart(c, k), c.nameEnd[k]!);
    if (j > 0) out[o++] = 0x2f;
  }
  return out;
}

export function rowPath(c: IndexColumns, i: number): string {
  return c.parent[i]! < 0 ? rowName(c, i) : rowPathBytes(c, i).toString('utf8');
}

/** Every row's path, in row order (a parent's path is built once and shared). */
export function allPaths(c: IndexColumns): string[] {
  const out = new Array<string>(c.n);
  for (let i = 0; i < c.n; i++) {
    const p = c.parent[i]!;
    out[i] = p < 0 ? rowName(c, i) : `${out[p]!}/${rowName(c, i)}`;
  }
  return out;
}

export function rowTarget(c: IndexColumns, i: number): string {
  return asBuffer(c.valueBytes).toString('utf8', valueStart(c, i), c.valueEnd[i]!);
}

export function rowDigestHex(c: IndexColumns, i: number): string {
  return asBuffer(c.digest).toString('hex', i * 32, i * 32 + 32);
}

/** Row i as a contract entry (`path` given when the caller has it). */
export function rowEntry(c: IndexColumns, i: number, path = rowPath(c, i)): Entry {
  switch (c.kind[i]) {
    case KIND_DIR:
      return { path, kind: 'dir' };
    case KIND_LINK:
      return { path, kind: 'symlink', target: rowTarget(c, i) };
    default:
      return { path, kind: 'file', digest: `sha256:${rowDigestHex(c, i)}` as Digest, size: c.size[i]!, exec: (c.flags[i]! & F_EXEC) !== 0 };
  }
}

/** The first row whose path sorts at or after `key` (binary search: each probe builds one row's path). */
export function lowerBound(c: IndexColumns, key: Buffer): number {
  let lo = 0;
  let hi = c.n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (Buffer.compare(rowPathBytes(c, mid), key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The row of `path`, or -1. */
export function findRow(c: IndexColumns, path: string | Buffer): number {
  const key = typeof path === 'string' ? Buffer.from(path, 'utf8') : path;
  const i = lowerBound(c, key);
  return i < c.n && rowPathBytes(c, i).equals(key) ? i : -1;
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

/**
 * Columns of sorted `entries`, with the stat data of each row from `statOf` (null: nothing
 * recorded) and whether it may be trusted.
 */
export function columnsFromEntries(entries: readonly Entry[], statOf: (e: Entry, i: number) => { st: RowStat; trusted: boolean } | null) {
  // Names, targets and digests are written straight into the columns: no buffer per entry (a
  // first import of a large tree builds this with every entry in memory already).
  const n = entries.length;
  const nameOf = (e: Entry) => e.path.slice(e.path.lastIndexOf('/') + 1);
  let nameBytes = 0;
  let valueBytes = 0;
  for (const e of entries) {
    nameBytes += Buffer.byteLength(nameOf(e), 'utf8');
    if (e.kind === 'symlink') valueBytes += Buffer.byteLength(e.target, 'utf8');
  }
  const c = emptyColumns(n, nameBytes, valueBytes);
  const [names, values, digests] = [asBuffer(c.nameBytes), asBuffer(c.valueBytes), asBuffer(c.digest)];
  const dirs = new Map<string, number>();
  let po = 0;
  let vo = 0;
  for (let i = 0; i < n; i++) {
    const e = entries[i]!;
    c.kind[i] = kindCode(e.kind);
    c.nameEnd[i] = po += names.write(nameOf(e), po, 'utf8');
    if (e.kind === 'symlink') vo += values.write(e.target, vo, 'utf8');
    c.valueEnd[i] = vo;
    const slash = e.path.lastIndexOf('/');
    c.parent[i] = slash < 0 ? -1 : (dirs.get(e.path.slice(0, slash)) ?? -2);
    if (c.parent[i] === -2) throw new Error(`tree index: ${e.path} comes without its directory`);
    if (e.kind === 'dir') dirs.set(e.path, i);
    let flags = needsEscape(e.path) ? F_ESCAPE : 0;
    if (e.kind === 'file') {
      if (!e.digest.startsWith('sha256:') || digests.write(e.digest.slice(7), i * 32, 32, 'hex') !== 32)
        throw new Error(`tree index: ${e.path} has no sha256 digest`);
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

export function setRowStat(c: Pick<IndexColumns, 'ino' | 'size' | 'mtime' | 'ctime' | 'mode'>, i: number, st: RowStat): void {
  c.ino[i] = st.ino;
  c.size[i] = st.size;
  c.mtime[i] = st.mtimeMs;
  c.ctime[i] = st.ctimeMs;
  c.mode[i] = st.mode;
}
