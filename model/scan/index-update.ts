// The next tree index from the last one and a scan: rows the scan found the same are copied as
// they are (whole runs of path and digest bytes at once), touched rows take their new stat data
// and content, rows gone are dropped, new paths are merged in at their sorted place. Nothing is
// built per unchanged entry, so a checkpoint that changed ten files costs ten rows and a copy.
import { PdbError } from '../errors.js';
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
    oldToNew[i] = k;
    src[k++] = i;
  }
  return { src, oldToNew, inserts, nameBytes };
}

/** Copy the kept rows' columns and name bytes, and give every row its parent in the new order. */
function copyKept(c: IndexColumns, p: Plan, out: IndexColumns): void {
  const newRow = new Map<string, number>();
  let po = 0;
  for (let k = 0; k < out.n; k++) {
    const s = p.src[k]!;
    if (s < 0) {
      const { t, name } = p.inserts[-s - 1]!;
      out.nameBytes.set(name, po);
      out.nameEnd[k] = po += name.length;
      const slash = t.path.lastIndexOf('/');
      const parent = slash < 0 ? -1 : (newRow.get(t.path.slice(0, slash)) ?? p.oldToNew[findRow(c, t.path.slice(0, slash))] ?? -2);
      if (parent === -2 || parent === undefined || parent >= k) throw new PdbError('E_INTERNAL', `tree index: no directory for ${t.path}`);
      out.parent[k] = parent;
      if (t.kind === KIND_DIR) newRow.set(t.path, k);
      out.flags[k] = needsEscape(t.path) ? F_ESCAPE : 0;
      continue;
    }
    // A run of old rows kept in order: their name and digest bytes move in one copy each.
    let e = k + 1;
    while (e < out.n && p.src[e] === p.src[e - 1]! + 1) e++;
    const first = s;
    const last = s + (e - k) - 1;
    const from = first === 0 ? 0 : c.nameEnd[first - 1]!;
    out.nameBytes.set(c.nameBytes.subarray(from, c.nameEnd[last]!), po);
    out.digest.set(c.digest.subarray(first * 32, (last + 1) * 32), k * 32);
    for (let r = first, q = k; r <= last; r++, q++) {
      out.nameEnd[q] = po + (c.nameEnd[r]! - from);
      const op = c.parent[r]!;
      out.parent[q] = op < 0 ? -1 : p.oldToNew[op]!;
      if (op >= 0 && out.parent[q]! < 0) throw new PdbError('E_INTERNAL', 'tree index: a kept row lost its directory');
      out.kind[q] = c.kind[r]!;
      out.flags[q] = c.flags[r]!;
      out.ino[q] = c.ino[r]!;
      out.size[q] = c.size[r]!;
      out.mtime[q] = c.mtime[r]!;
      out.ctime[q] = c.ctime[r]!;
      out.mode[q] = c.mode[r]!;
    }
    po = out.nameEnd[e - 1]!;
    k = e - 1;
  }
}

/**
 * The columns of the tree as scanned: `old` (null: none) updated by `raw`, each touched file with
 * its hashed content from `content`. Touched rows are trusted unless racily clean at the walk's
 * start (the coarse window when `coarse`).
 */
export function nextColumns(
  old: IndexColumns | null,
  raw: RawScan,
  content: (t: RawEntry) => Content | undefined,
  coarse: boolean,
): IndexColumns {
  const c = old ?? NONE;
  const p = plan(c, raw);
  const targets: Array<Buffer | null> = new Array(p.src.length).fill(null);
  let valueBytes = 0;
  const touchedAt = new Map<number, RawEntry>();
  for (const t of raw.touched) if (t.row >= 0) touchedAt.set(p.oldToNew[t.row]!, t);
  for (let k = 0; k < p.src.length; k++) {
    const s = p.src[k]!;
    const t = s < 0 ? p.inserts[-s - 1]!.t : touchedAt.get(k);
    if (t) targets[k] = t.kind === KIND_LINK ? Buffer.from(t.target!, 'utf8') : null;
    else if (c.kind[s] === KIND_LINK) targets[k] = Buffer.from(c.valueBytes.subarray(s === 0 ? 0 : c.valueEnd[s - 1]!, c.valueEnd[s]!));
    valueBytes += targets[k]?.length ?? 0;
  }
  const out = emptyColumns(p.src.length, p.nameBytes, valueBytes);
  copyKept(c, p, out);
  const window = coarse ? COARSE_RACY_WINDOW_MS : RACY_WINDOW_MS;
  for (let k = 0; k < out.n; k++) {
    const s = p.src[k]!;
    const t = s < 0 ? p.inserts[-s - 1]!.t : touchedAt.get(k);
    if (t) updateRow(out, k, t, t.kind === KIND_FILE ? content(t) : undefined, raw.startedAtMs, window);
  }
  let vo = 0;
  for (let k = 0; k < out.n; k++) {
    const b = targets[k];
    if (b) out.valueBytes.set(b, vo);
    out.valueEnd[k] = vo += b ? b.length : 0;
  }
  return out;
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
