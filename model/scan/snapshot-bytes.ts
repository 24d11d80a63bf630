// The canonical bytes of a Snapshot written straight from tree index columns: the same bytes as
// canonicalSnapshot (model/snapshot.ts) gives for the rows as entries, without building an entry
// or a string per row. A row's path is its directory's path as already written (rows come after
// their directory), '/', and its name; digests are written as hex from their bytes. A path JSON
// must escape (flag F_ESCAPE, set for every path holding such a character, so for everything
// below such a directory too) and every symlink target go through JSON.stringify. The test suite
// checks the two agree on random trees with every character class JSON treats specially.
import { sha256Digest, type Digest } from '../canonical-json.js';
import type { ObjectStore } from '../store/object-store.js';
import { F_ESCAPE, F_EXEC, KIND_DIR, KIND_FILE, rowPath, rowTarget, type IndexColumns } from './index-columns.js';
import { nativeSnapshotSplice, nativeSnapshotWriter } from './scanner.js';
import { chunkThreshold, keptSnapshot, nativeChunkList } from '../store/chunks.js';

const HEX = Buffer.from('0123456789abcdef', 'latin1');
const bytesOf = (s: string) => Buffer.from(s, 'utf8');
const DIR_HEAD = bytesOf('{"kind":"dir","path":');
const FILE_HEAD = bytesOf('{"digest":"sha256:');
const FILE_EXEC = bytesOf('","exec":true,"kind":"file","path":');
const FILE_PLAIN = bytesOf('","exec":false,"kind":"file","path":');
const FILE_SIZE = bytesOf(',"size":');
const LINK_HEAD = bytesOf('{"kind":"symlink","path":');
const LINK_TARGET = bytesOf(',"target":');

/**
 * Which rows of the Snapshot `like` (the rows of the index it was recorded with, `rows` of them)
 * each row of the columns is, unchanged: `from[i]` that row, or -1 for a row new or touched
 * (model/scan/index-update.ts nextColumns gives it).
 */
export interface RowsFrom {
  from: Int32Array;
  rows: number;
}

/**
 * The canonical Snapshot document `{base, entries, excludes, version}` of the rows, and its
 * digest: written by native/snapshot.c where the native scanner runs (a loop over every row runs
 * once per process, and JavaScript never optimizes it then), by the same code in JavaScript
 * otherwise; `writer` names one. Where this process kept the bytes of `like` (the daemon, chunks.ts
 * rememberCuts) and `from` says which of its rows are unchanged, those rows' entries are copied
 * from it in runs and only the others written (snapshotSplice: each copied entry is checked
 * against its row's kind, digest, exec bit and size, and a disagreement writes the whole).
 */
export function snapshotBytesFromColumns(
  c: IndexColumns,
  base: Digest | null,
  excludes: readonly string[],
  writer: 'auto' | 'js' | 'native' = 'auto',
  like: Digest | null = null,
  from: RowsFrom | null = null,
): { bytes: Buffer; digest: Digest } {
  const { head, tail } = documentEnds(base, excludes);
  const native = nativeSnapshotWriter(writer);
  if (native) {
    const ends = new Uint32Array(c.n + 1);
    const bytes = splice(c, head, tail, ends, like, from, writer) ?? native(c, head, tail, ends);
    // A large one is cut and hashed by the addon in one pass (from `like`'s cut where this process
    // kept it); installing it takes that cut (chunks.ts).
    const cut = bytes.length > chunkThreshold(like) ? nativeChunkList(bytes, like, ends[0] === 0xffffffff ? null : ends) : null;
    return { bytes, digest: cut?.digest ?? sha256Digest(bytes) };
  }
  return jsSnapshotBytes(c, head, tail);
}

/** The bytes spliced from the kept Snapshot `like`, or null where there is none to splice from. */
function splice(
  c: IndexColumns,
  head: Buffer,
  tail: Buffer,
  ends: Uint32Array,
  like: Digest | null,
  from: RowsFrom | null,
  writer: 'auto' | 'js' | 'native',
): Buffer | null {
  const kept = like && from && from.from.length === c.n ? keptSnapshot(like) : undefined;
  const write = kept && kept.ends.length === from!.rows + 1 ? nativeSnapshotSplice(writer) : null;
  return write ? write(c, head, tail, ends, kept!.bytes, kept!.ends, from!.from) : null;
}

/** What comes before and after the entries in a Snapshot document's canonical bytes. */
function documentEnds(base: Digest | null, excludes: readonly string[]): { head: Buffer; tail: Buffer } {
  return {
    head: bytesOf(`{"base":${base === null ? 'null' : JSON.stringify(base)},"entries":[`),
    tail: bytesOf(`],"excludes":${JSON.stringify(excludes)},"version":1}`),
  };
}

/**
 * Install the Snapshot of the rows into `store`; its digest. A Snapshot larger than
 * chunkThreshold(like) is stored as chunks (model/store/chunks.ts); made in memory and cut and hashed by
 * the addon, it is never written whole. Streamed into a file instead and read back to be cut, the
 * same 25,000-entry Snapshot took 25-40 ms more of a checkpoint.
 */
export async function installSnapshotFromColumns(
  store: ObjectStore,
  c: IndexColumns,
  base: Digest | null,
  excludes: readonly string[],
  writer: 'auto' | 'js' | 'native' = 'auto',
  like: Digest | null = null,
  from: RowsFrom | null = null,
): Promise<Digest> {
  const doc = snapshotBytesFromColumns(c, base, excludes, writer, like, from);
  return store.putDocumentBytes(doc.bytes, doc.digest, like);
}

function jsSnapshotBytes(c: IndexColumns, head: Buffer, tail: Buffer): { bytes: Buffer; digest: Digest } {
  // Where each directory's path (unescaped) was written, to copy from for what it holds.
  const at = new Int32Array(c.n);
  const len = new Int32Array(c.n);
  let bound = head.length + tail.length + c.valueBytes.length * 6 + c.n * 160;
  for (let i = 0; i < c.n; i++) {
    const p = c.parent[i]!;
    len[i] = (p < 0 ? -1 : len[p]!) + 1 + c.nameEnd[i]! - (i === 0 ? 0 : c.nameEnd[i - 1]!);
    bound += len[i]! * 6; // generous: every byte escaped as \u00XX
  }
  const out = Buffer.allocUnsafe(bound);
  let o = 0;
  const put = (b: Uint8Array) => {
    for (let k = 0; k < b.length; k++) out[o++] = b[k]!;
  };
  const putPath = (i: number) => {
    if ((c.flags[i]! & F_ESCAPE) !== 0) return put(bytesOf(JSON.stringify(rowPath(c, i))));
    out[o++] = 0x22;
    at[i] = o;
    const p = c.parent[i]!;
    if (p >= 0) {
      out.copy(out, o, at[p]!, at[p]! + len[p]!);
      o += len[p]!;
      out[o++] = 0x2f;
    }
    const names = c.nameBytes;
    for (let k = i === 0 ? 0 : c.nameEnd[i - 1]!, e = c.nameEnd[i]!; k < e; k++) out[o++] = names[k]!;
    out[o++] = 0x22;
  };
  put(head);
  for (let i = 0; i < c.n; i++) {
    if (i > 0) out[o++] = 0x2c;
    const kind = c.kind[i];
    if (kind === KIND_DIR) {
      put(DIR_HEAD);
      putPath(i);
    } else if (kind === KIND_FILE) {
      put(FILE_HEAD);
      for (let k = i * 32, e = k + 32; k < e; k++) {
        const b = c.digest[k]!;
        out[o++] = HEX[b >> 4]!;
        out[o++] = HEX[b & 15]!;
      }
      put((c.flags[i]! & F_EXEC) !== 0 ? FILE_EXEC : FILE_PLAIN);
      putPath(i);
      put(FILE_SIZE);
      o += out.write(String(c.size[i]), o, 'latin1');
    } else {
      put(LINK_HEAD);
      putPath(i);
      put(LINK_TARGET);
      put(bytesOf(JSON.stringify(rowTarget(c, i))));
    }
    out[o++] = 0x7d;
  }
  put(tail);
  const bytes = out.subarray(0, o);
  return { bytes, digest: sha256Digest(bytes) };
}
