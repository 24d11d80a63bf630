// The tree index on disk (version 2): read in one piece, its columns used where they lie.
//
//   0   "PDBTIX2\n"                      magic
//   8   u32 header length (LE), u32 byte order of the columns (1: little-endian; the index is host-local)
//   16  sha256 of the header and the body
//   48  the header (JSON), padded to 8 bytes
//       the body: each column of index-columns.ts in a fixed order, each padded to 8 bytes
//
// A file that is short, padded, of another version or whose checksum fails is not an index: the
// caller scans everything (and hashes every file), never trusting a damaged record. Version 1
// (a JSON header line, then NUL-separated fields, written by pdb-env before) is still read; it
// carries no directory signatures, so its first scan reads every directory, then writes version 2.
import { endianness } from 'node:os';
import type { Digest } from '../canonical-json.js';
import type { Entry } from '../snapshot.js';
import { columnsFromEntries, type IndexColumns, type RowStat } from './index-columns.js';
import { sha256 } from '../os/hash.js';

export const TREE_INDEX_VERSION = 2 as const;
const MAGIC = Buffer.from('PDBTIX2\n', 'latin1');
const ORDER = endianness() === 'LE' ? 1 : 2;
const PREFIX = 48;

/** The root directory's recorded signature (the root is no entry of its own). */
export interface RootSig {
  ino: number;
  mtimeMs: number;
  ctimeMs: number;
  trusted: boolean;
}

export interface TreeIndexHeader {
  kind: 'pdb-env-tree-index';
  version: typeof TREE_INDEX_VERSION;
  /** The Snapshot this state is, when known (an import's digest; a checkpoint's result). */
  snapshot: Digest | null;
  /** The Changeset of the checkpoint that recorded this state (against `base`), when there was one. */
  changeset: Digest | null;
  /** How many changes that Changeset lists. */
  changes?: number;
  /** The `base` field of that Snapshot (null for an import or a materialized base). */
  base: Digest | null;
  excludes: string[];
  /**
   * Paths left out besides the excludes (the store, when it sits inside the source), relative and
   * sorted; null when unknown (an index of version 1). Directories keep their recorded names only
   * when a scan leaves out exactly what this one did.
   */
  extraExcludes: string[] | null;
  /** When the signatures were recorded (ms since the epoch): nothing else wrote into the tree before. */
  recordedAtMs: number;
  /** Whole-second timestamps seen: the racy window is the coarse one. */
  coarse: boolean;
  /** The store's object generation then: trusted digests are known to be in the store while it is unchanged. */
  generation: string;
  /** The source directory of an import (store-local, never in receipts); null otherwise. */
  source: string | null;
  /** The root directory's signature; null when none was recorded. */
  root: RootSig | null;
  /** Number of entries, checked on read. */
  count: number;
}

const pad8 = (n: number) => (n + 7) & ~7;

/** Byte layout of the body: [column, element size, element count] in file order. */
function layout(n: number, nameBytes: number, valueBytes: number): Array<[keyof IndexColumns, number, number]> {
  return [
    ['ino', 8, n],
    ['size', 8, n],
    ['mtime', 8, n],
    ['ctime', 8, n],
    ['parent', 4, n],
    ['mode', 4, n],
    ['nameEnd', 4, n],
    ['valueEnd', 4, n],
    ['kind', 1, n],
    ['flags', 1, n],
    ['digest', 1, n * 32],
    ['nameBytes', 1, nameBytes],
    ['valueBytes', 1, valueBytes],
  ];
}

/**
 * The file bytes of an index, in pieces that follow each other: the prefix, the header, then each
 * column where it lies in memory (no copy into one buffer; the writer writes them in turn).
 */
export function encodeTreeIndex(header: TreeIndexHeader, c: IndexColumns): Buffer[] {
  const head = Buffer.from(JSON.stringify({ ...header, count: c.n, nameBytes: c.nameBytes.length, valueBytes: c.valueBytes.length }));
  const body: Buffer[] = [];
  for (const [name, size, count] of layout(c.n, c.nameBytes.length, c.valueBytes.length)) {
    const col = c[name] as ArrayBufferView;
    body.push(Buffer.from(col.buffer, col.byteOffset, size * count));
    if (pad8(size * count) !== size * count) body.push(Buffer.alloc(pad8(size * count) - size * count));
  }
  return sealed(MAGIC, head, body);
}

/** A file of ours as pieces in order: the prefix (`magic`, the header's length, the byte order, the sha256 of what follows), the header padded to 8 bytes, the body. */
function sealed(magic: Buffer, head: Buffer, body: Buffer[]): Buffer[] {
  const prefix = Buffer.alloc(PREFIX);
  const parts: Buffer[] = [prefix, head, Buffer.alloc(pad8(head.length) - head.length), ...body];
  magic.copy(prefix, 0);
  prefix.writeUInt32LE(head.length, 8);
  prefix.writeUInt32LE(ORDER, 12);
  sha256(...parts.slice(1)).copy(prefix, 16);
  return parts;
}

const isFlag = (x: unknown) => typeof x === 'boolean';
const isNat = (x: unknown): x is number => Number.isInteger(x) && (x as number) >= 0;

/**
 * The prefix, checksum and header of a file of ours (an index or a delta) that starts with
 * `magic`, in a buffer aligned for typed views; null when it is not a whole, sound one.
 */
function checked<H>(
  file: Buffer,
  magic: Buffer,
  verified = false,
): { buf: Buffer; headLen: number; h: H & Partial<TreeIndexHeader> } | null {
  if (file.length < PREFIX || !file.subarray(0, 8).equals(magic)) return null;
  // Typed views need aligned offsets: a Buffer from a small pool may not start on 8 bytes.
  let buf = file;
  if (file.byteOffset % 8 !== 0) {
    buf = Buffer.allocUnsafeSlow(file.length);
    file.copy(buf);
  }
  if (buf.readUInt32LE(12) !== ORDER) return null;
  const headLen = buf.readUInt32LE(8);
  if (PREFIX + headLen > buf.length) return null;
  if (!verified && !sha256(buf.subarray(PREFIX)).equals(buf.subarray(16, 48))) return null;
  let h: H & Partial<TreeIndexHeader>;
  try {
    h = JSON.parse(buf.toString('utf8', PREFIX, PREFIX + headLen));
  } catch {
    return null;
  }
  if (h?.kind !== 'pdb-env-tree-index' || h.version !== TREE_INDEX_VERSION || !Array.isArray(h.excludes) || !isFlag(h.coarse)) return null;
  return { buf, headLen, h };
}

/**
 * Typed views of the columns `layout` lists, where they lie in `buf` after its header (each
 * padded to 8 bytes); null unless they fill the rest of the file exactly.
 */
function columnViews(
  buf: Buffer,
  headLen: number,
  columns: ReadonlyArray<readonly [string, number, number]>,
): Record<string, Float64Array | Uint32Array | Uint8Array> | null {
  const out: Record<string, Float64Array | Uint32Array | Uint8Array> = {};
  let off = PREFIX + pad8(headLen);
  for (const [name, size, count] of columns) {
    if (off + size * count > buf.length) return null;
    const at = buf.byteOffset + off;
    out[name] =
      size === 8
        ? new Float64Array(buf.buffer, at, count)
        : size === 4
          ? new Uint32Array(buf.buffer, at, count)
          : new Uint8Array(buf.buffer, at, count);
    off += pad8(size * count);
  }
  return off === buf.length ? out : null;
}

/** Parse a version 2 index; null when it is not a whole, sound one. */
/** `verified`: these very bytes passed their checksum before (tree-index.ts readTreeIndex knows when), so it is not computed again. */
export function decodeTreeIndex(file: Buffer, verified = false): { header: TreeIndexHeader; columns: IndexColumns } | null {
  const got = checked<TreeIndexHeader & { nameBytes: number; valueBytes: number }>(file, MAGIC, verified);
  if (!got) return null;
  const { buf, headLen, h } = got;
  if (!isNat(h.count) || !isNat(h.nameBytes) || !isNat(h.valueBytes)) return null;
  const n = h.count;
  const c = columnViews(buf, headLen, layout(n, h.nameBytes, h.valueBytes));
  if (!c) return null;
  const columns = {
    ...c,
    n,
    parent: new Int32Array((c.parent as Uint32Array).buffer, (c.parent as Uint32Array).byteOffset, n),
  } as IndexColumns;
  // The checksum says these are the bytes our writer wrote; what the walk's memory safety needs is
  // checked again where it matters (native/walk.c checks every offset and parent).
  if (n > 0 && (columns.nameEnd[n - 1] !== columns.nameBytes.length || columns.valueEnd[n - 1] !== columns.valueBytes.length)) return null;
  const { nameBytes: _p, valueBytes: _v, ...header } = h;
  return { header, columns };
}

/** A version 1 signature string `ino:size:mtimeMs:ctimeMs:mode` as numbers; null when it is not one. */
export function parseSignature(sig: string): RowStat | null {
  const f = sig.split(':');
  if (f.length !== 5) return null;
  const [ino, size, mtimeMs, ctimeMs, mode] = f.map(Number) as [number, number, number, number, number];
  return [ino, size, mtimeMs, ctimeMs, mode].every(Number.isFinite) ? { ino, size, mtimeMs, ctimeMs, mode } : null;
}

/**
 * Parse an index of version 1: a JSON header line, then NUL-separated fields (`d path`,
 * `l path target`, `f path hex size exec sig`, and a closing `E`). Its signatures were recorded
 * trusted (racily clean ones were left out).
 */
export function decodeTreeIndexV1(text: string): { header: TreeIndexHeader; columns: IndexColumns } | null {
  const nl = text.indexOf('\n');
  if (nl < 0) return null;
  let h: Record<string, unknown>;
  try {
    h = JSON.parse(text.slice(0, nl)) as Record<string, unknown>;
  } catch {
    return null; // a cache cut short or of another format: ignored
  }
  if (h?.kind !== 'pdb-env-tree-index' || h.version !== 1 || !Array.isArray(h.excludes) || !isNat(h.count)) return null;
  const f = text.slice(nl + 1).split('\0');
  const entries: Entry[] = [];
  const sigs: Array<RowStat | null> = [];
  let i = 0;
  for (;;) {
    const kind = f[i++];
    if (kind === 'E') break;
    if (entries.length >= h.count || i >= f.length) return null;
    const path = f[i++]!;
    if (kind === 'd') entries.push({ path, kind: 'dir' });
    else if (kind === 'l') entries.push({ path, kind: 'symlink', target: f[i++]! });
    else if (kind === 'f' && f[i]?.length === 64 && /^[0-9a-f]{64}$/.test(f[i]!)) {
      entries.push({ path, kind: 'file', digest: `sha256:${f[i]}` as Digest, size: Number(f[i + 1]), exec: f[i + 2] === '1' });
      sigs[entries.length - 1] = f[i + 3] ? parseSignature(f[i + 3]!) : null;
      i += 4;
    } else return null;
  }
  if (entries.length !== h.count || i !== f.length) return null;
  let columns: IndexColumns;
  try {
    columns = columnsFromEntries(entries, (_e, k) => (sigs[k] ? { st: sigs[k]!, trusted: true } : null));
  } catch {
    return null; // an entry without its directory: not an index this code wrote
  }
  const header: TreeIndexHeader = {
    kind: 'pdb-env-tree-index',
    version: TREE_INDEX_VERSION,
    snapshot: (h.snapshot as Digest | null) ?? null,
    changeset: (h.changeset as Digest | null) ?? null,
    ...(isNat(h.changes) ? { changes: h.changes } : {}),
    base: (h.base as Digest | null) ?? null,
    excludes: h.excludes as string[],
    extraExcludes: null,
    recordedAtMs: Number(h.recordedAtMs),
    coarse: true, // unknown: the wide window until a scan sees sub-second times
    generation: String(h.generation ?? ''),
    source: (h.source as string | null) ?? null,
    root: null,
    count: entries.length,
  };
  return { header, columns };
}

// ---- The delta file (`<index>.delta`): the rows a checkpoint restated, against one index file.
//
//   0   "PDBTIXD\n"                      magic
//   8   u32 header length (LE), u32 byte order
//   16  sha256 of the header and the body
//   48  the header (JSON: the whole TreeIndexHeader of the state it describes, the checksum of
//       the index file it applies to, the number of rows), padded to 8 bytes
//       the body: for m rows, each padded to 8: ino, size, mtime, ctime (f64), row, mode (u32),
//       kind, flags (u8), digest (32 bytes per row)
//
// A checkpoint that changed only what some rows hold (no path added, gone or made a symlink)
// writes this instead of the whole index (git's split index): the rows it touched and those the
// delta before it held. A delta applies only to the index file whose checksum it names, so a
// whole index written later (which always has another checksum: its header records when) leaves
// an old delta that applies to nothing; one that is short, damaged or of another index is ignored
// and the index file is read as it is, which only costs re-hashing what the delta vouched for.
const DELTA_MAGIC = Buffer.from('PDBTIXD\n', 'latin1');

/** The checksum an index file carries (what a delta names); null when it is no version 2 index. */
export function indexFileChecksum(file: Buffer): Buffer | null {
  return file.length >= PREFIX && file.subarray(0, 8).equals(MAGIC) ? Buffer.from(file.subarray(16, 48)) : null;
}

function deltaLayout(m: number): Array<[keyof IndexColumns | 'row', number, number]> {
  return [
    ['ino', 8, m],
    ['size', 8, m],
    ['mtime', 8, m],
    ['ctime', 8, m],
    ['row', 4, m],
    ['mode', 4, m],
    ['kind', 1, m],
    ['flags', 1, m],
    ['digest', 1, m * 32],
  ];
}

/** The delta file's bytes: `rows` (ascending) of the columns `c`, with the state's header, against the index file whose checksum is `base`. */
export function encodeIndexDelta(header: TreeIndexHeader, c: IndexColumns, rows: Uint32Array, base: Buffer): Buffer[] {
  const m = rows.length;
  const head = Buffer.from(JSON.stringify({ ...header, count: c.n, applies: base.toString('hex'), rows: m }));
  const body: Buffer[] = [];
  for (const [name, size, count] of deltaLayout(m)) {
    const out = Buffer.alloc(pad8(size * count));
    const view =
      size === 8 ? new Float64Array(out.buffer, out.byteOffset, m) : size === 4 ? new Uint32Array(out.buffer, out.byteOffset, m) : null;
    for (let k = 0; k < m; k++) {
      const r = rows[k]!;
      if (name === 'row') view![k] = r;
      else if (name === 'digest') out.set(c.digest.subarray(r * 32, r * 32 + 32), k * 32);
      else if (view) view[k] = (c[name] as Float64Array | Uint32Array)[r]!;
      else out[k] = (c[name] as Uint8Array)[r]!;
    }
    body.push(out);
  }
  return sealed(DELTA_MAGIC, head, body);
}

/**
 * Apply a delta file to the columns `c` of the index file whose checksum is `base` (in place);
 * the header it records and its rows, or null (and `c` untouched) when it is not a whole, sound
 * delta of that file.
 */
export function applyIndexDelta(file: Buffer, base: Buffer, c: IndexColumns): { header: TreeIndexHeader; rows: Uint32Array } | null {
  const got = checked<TreeIndexHeader & { applies: string; rows: number }>(file, DELTA_MAGIC);
  if (!got) return null;
  const { buf, headLen, h } = got;
  if (h.applies !== base.toString('hex') || h.count !== c.n || !isNat(h.rows)) return null;
  const m = h.rows;
  const cols = columnViews(buf, headLen, deltaLayout(m));
  if (!cols) return null;
  const rows = cols.row as Uint32Array;
  // Rows ascending and within the index, kinds the restated ones can hold: else nothing is applied.
  for (let k = 0; k < m; k++) {
    if (rows[k]! >= c.n || (k > 0 && rows[k]! <= rows[k - 1]!)) return null;
    const kind = cols.kind![k]!;
    if ((kind !== 1 && kind !== 2) || c.kind[rows[k]!] === 3) return null;
  }
  for (let k = 0; k < m; k++) {
    const r = rows[k]!;
    for (const name of ['ino', 'size', 'mtime', 'ctime', 'mode', 'kind', 'flags'] as const) (c[name] as Float64Array)[r] = cols[name]![k]!;
    c.digest.set((cols.digest as Uint8Array).subarray(k * 32, k * 32 + 32), r * 32);
  }
  const { applies: _a, rows: _r, ...header } = h;
  return { header, rows: Uint32Array.from(rows) };
}
