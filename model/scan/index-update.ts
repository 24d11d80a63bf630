// The next tree index from the last one and a scan: rows the scan found the same are copied as
// they are (whole runs of path and digest bytes at once), touched rows take their new stat data
// and content, rows gone are dropped, new paths are merged in at their sorted place. Nothing is
// built per unchanged entry, so a checkpoint that changed ten files costs ten rows and a copy.
import { PdbError } from '../errors.js';
import { sortEntries } from '../snapshot.js';
import {
  F_ESCAPE,
  F_EXEC,
  F_TRUSTED,
  KIND_DIR,
  KIND_FILE,
  KIND_LINK,
  emptyColumns,
  findRow,
  lowerBound,
  needsEscape,
  type IndexColumns,
} from './index-columns.js';
import { COARSE_RACY_WINDOW_MS, RACY_WINDOW_MS, isTrustable } from './tree-index.js';
import type { RawEntry, RawScan } from './tree-walk.js';

/** A touched file's content as hashed: its sha256 (32 bytes) and size. */
export interface Content {
  digest: Buffer;
  size: number;
}

const NONE = emptyColumns(0, 0, 0);

/** Are all these timestamps whole seconds (a filesystem without sub-second times)? */
export function allWholeSeconds(raw: RawScan): boolean {
  if (raw.root.mtimeMs % 1000 !== 0) return false;
  for (const t of raw.touched) if (t.mtimeMs % 1000 !== 0) return false;
  return true;
}

interface Plan {
  /** Per new row: the old row it copies (>= 0) or -(j + 1) for inserts[j]. */
  src: Int32Array;
  oldToNew: Int32Array;
  /** New paths, sorted: the walk's entry, its path bytes (the sort key) and its name's. */
  inserts: Array<{ t: RawEntry; key: Buffer; name: Buffer }>;
  nameBytes: number;
  /** Symlink target bytes of the kept rows. */
  valueBytes: number;
}

/** Where every row goes: kept old rows in their order, new paths merged in by their bytes. */
function plan(c: IndexColumns, raw: RawScan): Plan {
  const status = raw.status;
  const inserts = raw.touched
    .filter((t) => t.row < 0)
    .map((t) => ({ t, key: Buffer.from(t.path, 'utf8'), name: Buffer.from(t.path.slice(t.path.lastIndexOf('/') + 1), 'utf8') }))
    .sort((a, b) => Buffer.compare(a.key, b.key));
  const at = inserts.map((x) => lowerBound(c, x.key));
  let kept = 0;
  let nameBytes = 0;
  let valueBytes = 0;
  for (let i = 0; i < c.n; i++) if (!status || status[i] !== 0) kept++;
  const src = new Int32Array(kept + inserts.length);
  const oldToNew = new Int32Array(c.n).fill(-1);
  let k = 0;
  let j = 0;
  for (let i = 0; i <= c.n; i++) {
    while (j < inserts.length && at[j] === i) {
      nameBytes += inserts[j]!.name.length;
      src[k++] = -(j++ + 1);
    }
    if (i === c.n || (status && status[i] === 0)) continue;
    nameBytes += c.nameEnd[i]! - (i === 0 ? 0 : c.nameEnd[i - 1]!);
    valueBytes += c.valueEnd[i]! - (i === 0 ? 0 : c.valueEnd[i - 1]!);
    oldToNew[i] = k;
    src[k++] = i;
  }
  return { src, oldToNew, inserts, nameBytes, valueBytes };
}

/** The row each insert went to, by its index in `p.inserts`. */
function insertRows(p: Plan): Int32Array {
  const rows = new Int32Array(p.inserts.length);
  for (let k = 0; k < p.src.length; k++) if (p.src[k]! < 0) rows[-p.src[k]! - 1] = k;
  return rows;
}

/**
 * Copy the kept rows' columns, name bytes and (when `values`) symlink targets, a whole run of
 * rows kept in order at a time, and give every row its parent in the new order. Rows of an
 * unchanged structure copy their parents as they are; otherwise each is mapped.
 */
function copyKept(c: IndexColumns, p: Plan, out: IndexColumns, values: boolean): void {
  const newRow = new Map<string, number>();
  const identity = p.inserts.length === 0 && p.src.length === c.n;
  let po = 0;
  let vo = 0;
  for (let k = 0; k < out.n; k++) {
    const s = p.src[k]!;
    if (s < 0) {
      const { t, name } = p.inserts[-s - 1]!;
      out.nameBytes.set(name, po);
      out.nameEnd[k] = po += name.length;
      if (values) out.valueEnd[k] = vo;
      const slash = t.path.lastIndexOf('/');
      const parent = slash < 0 ? -1 : (newRow.get(t.path.slice(0, slash)) ?? p.oldToNew[findRow(c, t.path.slice(0, slash))] ?? -2);
      if (parent === -2 || parent === undefined || parent >= k) throw new PdbError('E_INTERNAL', `tree index: no directory for ${t.path}`);
      out.parent[k] = parent;
      if (t.kind === KIND_DIR) newRow.set(t.path, k);
      out.flags[k] = needsEscape(t.path) ? F_ESCAPE : 0;
      continue;
    }
    let e = k + 1;
    while (e < out.n && p.src[e] === p.src[e - 1]! + 1) e++;
    const [a, b] = [s, s + (e - k)]; // old rows a .. b - 1 become new rows k .. e - 1
    for (const col of ['kind', 'flags', 'ino', 'size', 'mtime', 'ctime', 'mode'] as const) out[col].set(c[col].subarray(a, b), k);
    out.digest.set(c.digest.subarray(a * 32, b * 32), k * 32);
    const from = a === 0 ? 0 : c.nameEnd[a - 1]!;
    out.nameBytes.set(c.nameBytes.subarray(from, c.nameEnd[b - 1]!), po);
    shift(out.nameEnd, c.nameEnd, a, b, k, po - from);
    po += c.nameEnd[b - 1]! - from;
    if (values) {
      const vfrom = a === 0 ? 0 : c.valueEnd[a - 1]!;
      out.valueBytes.set(c.valueBytes.subarray(vfrom, c.valueEnd[b - 1]!), vo);
      shift(out.valueEnd, c.valueEnd, a, b, k, vo - vfrom);
      vo += c.valueEnd[b - 1]! - vfrom;
    }
    if (identity) out.parent.set(c.parent.subarray(a, b), k);
    else
      for (let r = a, q = k; r < b; r++, q++) {
        const op = c.parent[r]!;
        out.parent[q] = op < 0 ? -1 : p.oldToNew[op]!;
        if (op >= 0 && out.parent[q]! < 0) throw new PdbError('E_INTERNAL', 'tree index: a kept row lost its directory');
      }
    k = e - 1;
  }
}

/** to[q + i] = from[a + i] + delta for the rows a .. b - 1 (offsets moved with their bytes). */
function shift(to: Uint32Array, from: Uint32Array, a: number, b: number, q: number, delta: number): void {
  if (delta === 0) to.set(from.subarray(a, b), q);
  else for (let r = a; r < b; r++) to[q++] = from[r]! + delta;
}

/**
 * The columns of the tree as scanned: `old` (null: none) updated by `raw`, each touched file with
 * its hashed content from `content`. Touched rows are trusted unless racily clean at the walk's
 * start (the coarse window when `coarse`). `copied`, given, takes which old row each new row is
 * unchanged (-1: new or touched), or null when a symlink was touched (targets are rebuilt then).
 */
export function nextColumns(
  old: IndexColumns | null,
  raw: RawScan,
  content: (t: RawEntry) => Content | undefined,
  coarse: boolean,
  copied?: { from: Int32Array | null },
): IndexColumns {
  const c = old ?? NONE;
  const window = coarse ? COARSE_RACY_WINDOW_MS : RACY_WINDOW_MS;
  if (copied) copied.from = null;
  if (c.n === 0) return firstColumns(raw, content, window);
  // Symlink targets move with their runs unless a touched or new entry is (or was) a symlink.
  const linksTouched = touchesLinks(c, raw);
  if (!linksTouched && sameRows(c, raw)) {
    const out = restated(c);
    for (const t of raw.touched) updateRow(out, t.row, t, t.kind === KIND_FILE ? content(t) : undefined, raw.startedAtMs, window);
    if (copied) {
      const from = new Int32Array(c.n);
      for (let i = 0; i < c.n; i++) from[i] = i;
      for (const t of raw.touched) from[t.row] = -1;
      copied.from = from;
    }
    return out;
  }
  const p = plan(c, raw);
  if (copied && !linksTouched) {
    const from = p.src.map((s) => (s >= 0 ? s : -1));
    for (const t of raw.touched) if (t.row >= 0) from[p.oldToNew[t.row]!] = -1;
    copied.from = from;
  }
  const inserted = insertRows(p);
  // (A symlink gone touches no row: its target goes with it, as the kept rows' targets are counted.)
  const out = emptyColumns(p.src.length, p.nameBytes, linksTouched ? 0 : p.valueBytes);
  copyKept(c, p, out, !linksTouched);
  const at = (t: RawEntry, j: number) => (t.row >= 0 ? p.oldToNew[t.row]! : inserted[j]!);
  const inserts = new Map(p.inserts.map((x, j) => [x.t, j]));
  for (const t of raw.touched)
    updateRow(out, at(t, inserts.get(t) ?? -1), t, t.kind === KIND_FILE ? content(t) : undefined, raw.startedAtMs, window);
  if (linksTouched) rebuildTargets(c, p, raw, out);
  return out;
}

/**
 * The columns of a tree scanned with no index before it (a first import): every entry is new, so
 * the rows are the walk's entries sorted and written one by one, with no key or name buffer per
 * entry as a merge into old rows makes (at 268,753 entries those were about 100 MB of heap).
 */
function firstColumns(raw: RawScan, content: (t: RawEntry) => Content | undefined, window: number): IndexColumns {
  const rows = byPathBytes(raw.touched);
  const nameOf = (t: RawEntry) => t.path.slice(t.path.lastIndexOf('/') + 1);
  let nameBytes = 0;
  let valueBytes = 0;
  for (const t of rows) {
    nameBytes += Buffer.byteLength(nameOf(t), 'utf8');
    if (t.kind === KIND_LINK) valueBytes += Buffer.byteLength(t.target!, 'utf8');
  }
  const out = emptyColumns(rows.length, nameBytes, valueBytes);
  const [names, values] = [out.nameBytes, out.valueBytes].map((u) => Buffer.from(u.buffer, u.byteOffset, u.byteLength)) as [Buffer, Buffer];
  const dirs = new Map<string, number>();
  let po = 0;
  let vo = 0;
  for (let k = 0; k < rows.length; k++) {
    const t = rows[k]!;
    out.nameEnd[k] = po += names.write(nameOf(t), po, 'utf8');
    if (t.kind === KIND_LINK) vo += values.write(t.target!, vo, 'utf8');
    out.valueEnd[k] = vo;
    const slash = t.path.lastIndexOf('/');
    const parent = slash < 0 ? -1 : (dirs.get(t.path.slice(0, slash)) ?? -2);
    if (parent === -2) throw new PdbError('E_INTERNAL', `tree index: no directory for ${t.path}`);
    out.parent[k] = parent;
    if (t.kind === KIND_DIR) dirs.set(t.path, k);
    out.flags[k] = needsEscape(t.path) ? F_ESCAPE : 0;
    updateRow(out, k, t, t.kind === KIND_FILE ? content(t) : undefined, raw.startedAtMs, window);
  }
  return out;
}

/** A character above U+FFFF: its surrogates sort below U+E000-U+FFFF in UTF-16, above them in UTF-8. */
const SURROGATE = /[\uD800-\uDFFF]/;

/** Entries sorted by the UTF-8 bytes of their paths: by string comparison, which agrees unless a path holds a surrogate. */
function byPathBytes(touched: RawEntry[]): RawEntry[] {
  if (touched.some((t) => SURROGATE.test(t.path))) return sortEntries(touched);
  return [...touched].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Is a touched or new entry a symlink, or was it one? */
function touchesLinks(c: IndexColumns, raw: RawScan): boolean {
  return raw.touched.some((t) => t.kind === KIND_LINK || (t.row >= 0 && c.kind[t.row] === KIND_LINK));
}

/**
 * The rows nextColumns changes (ascending) when it restates `old` (the same rows, none a symlink
 * touched: only what rows hold changed), else null: what a delta of the index records.
 */
export function restatedRows(old: IndexColumns | null, raw: RawScan): Uint32Array | null {
  if (!old || touchesLinks(old, raw) || !sameRows(old, raw)) return null;
  return Uint32Array.from(raw.touched, (t) => t.row).sort();
}

/** The scan kept every row of `c` where it was: no new path, none gone (the walk saw each row). */
function sameRows(c: IndexColumns, raw: RawScan): boolean {
  return c.n > 0 && raw.status !== null && raw.status.length === c.n && raw.status.indexOf(0) < 0 && raw.touched.every((t) => t.row >= 0);
}

/**
 * The columns of the same rows for new stat data and content: the structure (parents, names,
 * symlink targets) is shared with `c`, never written for either, and each column a touched row can
 * change is one copy. Nothing runs per row in JavaScript, so ten changed files in a large tree cost
 * ten rows and a few copies.
 */
function restated(c: IndexColumns): IndexColumns {
  return {
    n: c.n,
    parent: c.parent,
    nameEnd: c.nameEnd,
    nameBytes: c.nameBytes,
    valueEnd: c.valueEnd,
    valueBytes: c.valueBytes,
    kind: c.kind.slice(),
    flags: c.flags.slice(),
    ino: c.ino.slice(),
    size: c.size.slice(),
    mtime: c.mtime.slice(),
    ctime: c.ctime.slice(),
    mode: c.mode.slice(),
    digest: c.digest.slice(),
  };
}

/** Every row's symlink target again: the kept rows' from `c`, the touched and new ones' from the walk. */
function rebuildTargets(c: IndexColumns, p: Plan, raw: RawScan, out: IndexColumns): void {
  const targets: Array<Buffer | null> = new Array(out.n).fill(null);
  for (let k = 0; k < out.n; k++) {
    const s = p.src[k]!;
    if (s >= 0 && c.kind[s] === KIND_LINK)
      targets[k] = Buffer.from(c.valueBytes.subarray(s === 0 ? 0 : c.valueEnd[s - 1]!, c.valueEnd[s]!));
  }
  const inserts = new Map(p.inserts.map((x, j) => [x.t, j]));
  const rows = insertRows(p);
  for (const t of raw.touched) {
    const k = t.row >= 0 ? p.oldToNew[t.row]! : rows[inserts.get(t)!]!;
    targets[k] = t.kind === KIND_LINK ? Buffer.from(t.target!, 'utf8') : null;
  }
  out.valueBytes = new Uint8Array(targets.reduce((n, b) => n + (b?.length ?? 0), 0));
  let vo = 0;
  for (let k = 0; k < out.n; k++) {
    const b = targets[k];
    if (b) out.valueBytes.set(b, vo);
    out.valueEnd[k] = vo += b ? b.length : 0;
  }
}

function updateRow(out: IndexColumns, k: number, t: RawEntry, got: Content | undefined, recordedAtMs: number, window: number): void {
  out.kind[k] = t.kind;
  out.ino[k] = t.ino;
  out.mtime[k] = t.mtimeMs;
  out.ctime[k] = t.ctimeMs;
  out.mode[k] = t.mode;
  out.size[k] = t.size;
  let flags = out.flags[k]! & F_ESCAPE;
  if (t.kind === KIND_FILE) {
    if (!got) throw new PdbError('E_INTERNAL', `tree index: ${t.path} was not hashed`);
    got.digest.copy(out.digest, k * 32);
    out.size[k] = got.size;
    if ((t.mode & 0o111) !== 0) flags |= F_EXEC;
  } else out.digest.fill(0, k * 32, k * 32 + 32);
  if (isTrustable(t.mtimeMs, t.ctimeMs, recordedAtMs, window) && (t.kind !== KIND_FILE || got!.size === t.size)) flags |= F_TRUSTED;
  out.flags[k] = flags;
}
