// Content-defined chunks of a large document (FastCDC with normalized chunking, as restic and borg
// chunk): a boundary depends only on the 32 bytes before it, so two Snapshots that differ in a few
// entries share every chunk those entries are not in. Boundaries only decide what is shared, never
// what is read: a document is always reassembled and checked against its own digest.
import { mkdirSync, existsSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { sha256Digest, type Digest } from '../canonical-json.js';
import { PdbError, isPdbError, osErrorCode, toPdbError } from '../errors.js';
import { sha256 } from '../os/hash.js';
import { loadNativeAddon } from '../os/native.js';
import { tempPath } from '../os/temp-name.js';
import { chunkFile, installDeflated, readChunkBytes } from './deflated.js';
import { RECORD, decodeChunkList, encodeChunkList, chunksNotIn, listChunkRefs, type ChunkRef } from './chunk-list.js';
export { decodeChunkList, encodeChunkList, chunksNotIn, type ChunkRef } from './chunk-list.js';

/**
 * Chunk sizes: small enough that a 1-entry change of a Snapshot rewrites a few KB, large enough
 * that a 250,000-entry Snapshot (48 MB) is about 40,000 files; 32 KiB at most (repeated bytes cut
 * nowhere before it). At 8 KiB on average a 1-file checkpoint added up to 1.04x the goal's 64 KiB
 * plus the file (receipts/bench/bench-rhythm-20261203T095734Z-68fb77.json), at 4 KiB with the
 * level-2 masks 1.359x (bench-rhythm-20261203T121309Z-66de8d.json). 1 KiB (was 2 KiB): a change
 * rewrites the chunk it falls in, and a chunk hit is on average larger than the average chunk (a
 * byte falls in a chunk in proportion to its size), so what a two-file checkpoint added was mostly
 * rewritten chunks; test/sessions/lifecycle/checkpoint-growth.test.ts measures it against git's
 * loose objects (docs/store.md, "Chunk size").
 */
export const CHUNK_MIN = 256;
export const CHUNK_AVG = 1024;
export const CHUNK_MAX = 32 * 1024;
/** A document larger than this is stored as chunks; smaller ones stay one object (as every document before). */
export const CHUNK_THRESHOLD = 16 * 1024;
/**
 * The same for a document that follows another (`like`: a session's next Snapshot or cumulative
 * Changeset), whose chunks it shares: a Changeset under 16 KiB was written whole at every
 * checkpoint, 38% of what 30 two-file checkpoints of a 5,000-entry tree added
 * (test/sessions/lifecycle/checkpoint-growth.test.ts; docs/store.md, "Chunk size"). 2 KiB (was 4):
 * a Changeset of 2-4 KiB written whole each time cost more than its few deflated chunks.
 */
export const FOLLOW_THRESHOLD = 2 * 1024;

/** Above how many bytes a document is stored as chunks: lower when it follows one whose chunks it can share. */
export function chunkThreshold(like: Digest | null): number {
  return like ? FOLLOW_THRESHOLD : CHUNK_THRESHOLD;
}
/**
 * A chunk list larger than this is chunked in turn (was CHUNK_THRESHOLD, 16 KiB): a 5,000-entry
 * Snapshot's list (247 chunks of 2 KiB on average, 8.9 KB) was written whole at every checkpoint.
 */
export const LIST_THRESHOLD = 2 * 1024;

// The gear table: 256 fixed pseudo-random words. Changing them changes boundaries (and so what new
// Snapshots share with old ones), never what any document reads back as.
let gearTable: Int32Array | undefined;
function gear(): Int32Array {
  if (!gearTable) {
    gearTable = new Int32Array(256);
    for (let i = 0; i < 256; i++) gearTable[i] = sha256(`pdb-env gear ${i}`).readInt32BE(0);
  }
  return gearTable;
}

// Normalized chunking, level 1 (FastCDC): a harder mask before the average size, an easier one
// after, each one bit from the average's. Level 2 (two bits) keeps sizes closer to the average but
// ties a cut to where its chunk started: after an insertion into sorted, path-heavy text (a
// Changeset) its cuts took up to 17 chunks to fall on the old ones again.
// The hash shifts left, so only its top bits depend on a full 32-byte window: the masks use those.
const MASK_HARD = 0xffe00000 | 0; // 11 bits: log2(CHUNK_AVG) + 1
const MASK_EASY = 0xff800000 | 0; // 9 bits: log2(CHUNK_AVG) - 1

/** Where the chunk that starts at `start` ends (exclusive). */
function cutPoint(b: Uint8Array, start: number, GEAR: Int32Array): number {
  const end = b.length;
  if (end - start <= CHUNK_MIN) return end;
  const stop = Math.min(end, start + CHUNK_MAX);
  const normal = Math.min(stop, start + CHUNK_AVG);
  let h = 0;
  let i = start + CHUNK_MIN;
  for (; i < normal; i++) {
    h = ((h << 1) + GEAR[b[i]!]!) | 0;
    if ((h & MASK_HARD) === 0) return i + 1;
  }
  for (; i < stop; i++) {
    h = ((h << 1) + GEAR[b[i]!]!) | 0;
    if ((h & MASK_EASY) === 0) return i + 1;
  }
  return stop;
}

/**
 * The chunks of `bytes` with their digests: the chunks chunkEnds cuts. Given the chunks of a
 * similar document (`like`: the session's previous Snapshot), a stretch holding the bytes of one
 * of them is recognized by its digest instead of scanned for its boundary: the same bytes from the
 * same start cut the same way (the gear hash starts afresh in each chunk), so the result is the
 * same, and only the chunks around a change are scanned. Measured on a 25,000-entry Snapshot (5
 * MB): the scan alone took 12 ms; a SHA-256 of every chunk is needed for their names either way.
 */
export function chunkRefs(bytes: Uint8Array, like: readonly ChunkRef[] = []): ChunkRef[] {
  const table = gear();
  const starts: number[] = [];
  for (let k = 0, o = 0; k < like.length; o += like[k]!.size, k++) starts.push(o);
  const out: ChunkRef[] = [];
  const n = bytes.length;
  // Whether old chunk k's bytes are at `x`: it must also end where it ended (not cut short by its document's end).
  const holds = (k: number, x: number): boolean => {
    const size = like[k]!.size;
    if (x + size > n || (k === like.length - 1 && x + size !== n)) return false;
    return sha256Digest(bytes.subarray(x, x + size)) === like[k]!.digest;
  };
  let next = 0; // the old chunk expected at x
  let shift = 0; // x minus the old offset at the last match
  for (let x = 0; x < n;) {
    let found = -1;
    if (next < like.length && holds(next, x)) found = next;
    else if (like.length) {
      // After a change, the old chunk near the same place (shifted as at the last match).
      const want = x - shift;
      let lo = 0;
      for (let hi = starts.length; lo < hi;) {
        const mid = (lo + hi) >> 1;
        if (starts[mid]! < want - CHUNK_MAX) lo = mid + 1;
        else hi = mid;
      }
      for (let k = lo; k < starts.length && starts[k]! <= want + CHUNK_MAX && found < 0; k++) if (k !== next && holds(k, x)) found = k;
    }
    if (found >= 0) {
      out.push(like[found]!);
      shift = x - starts[found]!;
      next = found + 1;
      x += like[found]!.size;
      continue;
    }
    const end = cutPoint(bytes, x, table);
    out.push({ digest: sha256Digest(bytes.subarray(x, end)), size: end - x });
    x = end;
  }
  return out;
}

type AddonCut = { digest: Buffer; list: Buffer; mids: Buffer; fresh: number };
type AddonChunks = (bytes: Uint8Array, gear: Int32Array, params: Uint32Array, like?: CutMemo) => AddonCut | null;
let addonChunks: AddonChunks | null | undefined;
const PARAMS = new Uint32Array([CHUNK_MIN, CHUNK_AVG, CHUNK_MAX, MASK_HARD >>> 0, MASK_EASY >>> 0]);

/** A document's native cut kept for the next one like it: its bytes, chunk list, the hash's kept states, and the list object it was installed with. */
interface CutMemo {
  bytes: Uint8Array;
  list: Buffer;
  mids: Buffer;
  installedList: Digest | null;
  /** A Snapshot's: where each row's entry ends (native/snapshot.c), for the next one to copy rows from. */
  ends: Uint32Array | null;
}

/**
 * The digest of `bytes` and their chunk list (encodeChunkList's bytes), cut and hashed by the
 * native addon (native/chunks.c chunkDocument: the whole digest on a second thread while the
 * chunks are cut and hashed); null where the addon or its SHA-256 is not to be had. The same cut
 * as chunkEnds (a test holds the two to it). Measured on a 25,000-entry Snapshot (5 MB) in a
 * checkpoint's own process: reading the file back and cutting it in JavaScript took 25-40 ms.
 * `like` names the document this one follows (a session's previous Snapshot): where this process
 * kept its cut (rememberCuts), the chunks and hash states of the bytes the two share are taken from
 * it, found by comparing the bytes, and only the rest is cut and hashed.
 */
export function nativeChunkList(
  bytes: Uint8Array,
  like: Digest | null = null,
  ends: Uint32Array | null = null,
): { digest: Digest; list: Buffer; fresh: number } | null {
  const known = cut.get(bytes);
  if (known) return known;
  if (addonChunks === undefined) {
    const addon = loadNativeAddon().addon as { chunks?: AddonChunks } | null;
    addonChunks = typeof addon?.chunks === 'function' ? addon.chunks.bind(addon) : null;
  }
  const before = like ? memoOf(like) : undefined;
  const r = addonChunks?.(bytes, gear(), PARAMS, before);
  if (!r) return null;
  const out = { digest: `sha256:${r.digest.toString('hex')}` as Digest, list: r.list, fresh: r.fresh };
  cut.set(bytes, out);
  if (memos) keepMemo(out.digest, { bytes, list: r.list, mids: r.mids, installedList: null, ends });
  return out;
}

/** The bytes of a Snapshot this process cut and kept (rememberCuts), with where each row's entry ends; undefined when not kept. */
export function keptSnapshot(digest: Digest): { bytes: Uint8Array; ends: Uint32Array } | undefined {
  const m = memos?.get(digest);
  return m?.ends ? { bytes: m.bytes, ends: m.ends } : undefined;
}
// The last cuts by their bytes (immutable while installed): the digest a caller named a document
// by and the list installChunked stores come from one pass.
const cut = new WeakMap<Uint8Array, { digest: Digest; list: Buffer; fresh: number }>();

// The documents cut last, by digest, oldest first, within memoBudget bytes; null: not kept (only
// the daemon keeps them, rememberCuts). A digest names its bytes, so a kept cut is never stale.
let memos: Map<Digest, CutMemo> | null = null;
let memoBudget = 0;

/**
 * Keep the documents this process cuts, up to `budget` bytes of them, for the next cut of a
 * document like one (the daemon turns it on: its next checkpoint of a session is like the last).
 */
export function rememberCuts(budget = 160 * 1024 * 1024): void {
  memos ??= new Map();
  memoBudget = budget;
  // The blocks of Snapshots let go are written again (native/snapshot.c snapshotFree).
  (loadNativeAddon().addon as { keepSnapshotSpares?: (on: boolean) => void } | null)?.keepSnapshotSpares?.(true);
}

function memoOf(digest: Digest): CutMemo | undefined {
  const m = memos?.get(digest);
  if (m) {
    memos!.delete(digest);
    memos!.set(digest, m); // the most recently used last
  }
  return m;
}

function keepMemo(digest: Digest, m: CutMemo): void {
  memos!.delete(digest);
  memos!.set(digest, m);
  let total = 0;
  const size = (x: CutMemo) => x.bytes.length + x.list.length + x.mids.length + (x.ends?.byteLength ?? 0);
  for (const x of memos!.values()) total += size(x);
  for (const [k, x] of memos!) {
    if (total <= memoBudget || k === digest) break;
    memos!.delete(k);
    total -= size(x);
  }
}

/**
 * The bytes of a chunked document's list (undecoded) and the list's object; null when it is not
 * chunked or its list cannot be read (nothing to share then). A list this process installed is
 * taken from its memo when the store's record names that very list object.
 */
function chunkListOf(host: ChunkHost, digest: Digest): { bytes: Buffer; list: Digest } | null {
  const rec = readChunkedRecord(host, digest);
  if (!rec || rec === 'bad') return null;
  const m = memos?.get(digest);
  try {
    const bytes = m && m.installedList === rec.list ? m.list : host.getBytes(rec.list);
    return bytes.length % RECORD === 0 ? { bytes, list: rec.list } : null;
  } catch {
    return null;
  }
}

/** The chunk boundaries of `bytes`: the end offset of each chunk, in order (the last is bytes.length). */
export function chunkEnds(bytes: Uint8Array): number[] {
  const ends: number[] = [];
  const table = gear();
  for (let at = 0; at < bytes.length;) ends.push((at = cutPoint(bytes, at, table)));
  return ends;
}

/**
 * What stands in for a chunked document in the store: the digest of its chunk list and its size,
 * one line. The document's identity stays its own digest; this record only says where its bytes are.
 */
export function encodeChunkedRecord(list: Digest, size: number): string {
  return `pdb-env-chunked 1 ${list} ${size}\n`;
}

export function decodeChunkedRecord(text: string): { list: Digest; size: number } | null {
  const m = /^pdb-env-chunked 1 (sha256:[0-9a-f]{64}) (\d+)\n$/.exec(text);
  return m ? { list: m[1] as Digest, size: Number(m[2]) } : null;
}

/** What of the object store chunked documents are kept with (model/store/object-store.ts). */
export interface ChunkHost {
  /** objects: the directory objectPath names its two levels below (a chunk's size is looked up from there). */
  readonly paths: { tmp: string; objects?: string; deflated?: string };
  readonly repairHint: string;
  objectPath(digest: Digest): string;
  chunkedPath(digest: Digest): string;
  getBytes(digest: Digest): Buffer;
  installWhole(digest: Digest, bytes: Buffer, kind: string): void;
  quarantineObject(digest: Digest): string | null;
}

/**
 * Install a large document as content-defined chunks (ordinary objects, each installed once and
 * shared by every document holding it), their list (an object too, chunked in turn when large)
 * and, last, the record that names the list: a record is never there before what it names. A
 * document already whole in the store stays so. A chunk already present is trusted here; reading
 * checks the whole document, and verify re-hashes every chunk.
 */
export function installChunked(host: ChunkHost, digest: Digest, bytes: Buffer, like: Digest | null = null, isList = false): void {
  const whole = host.objectPath(digest);
  if (existsSync(whole)) {
    if (readFileSync(whole).equals(bytes)) return;
    host.quarantineObject(digest);
  }
  // A chunk list is cut at its records (chunk-list.ts listChunkRefs), a document by its bytes.
  const native = isList ? null : nativeChunkList(bytes, like);
  const cutHere = native?.digest === digest;
  // The chunks of the document this one is like are in the store (that document is live: it is
  // read through them); only the others are looked for, so a small change costs a few lookups.
  // Reading every shared chunk back to compare it would make each checkpoint cost the whole
  // Snapshot again (thousands of files); a chunk damaged in the store since is named by verify,
  // and every reader of either document (restore, export, diff) refuses it, typed.
  const likeRaw = like ? chunkListOf(host, like) : null;
  const likeList = likeRaw?.list ?? null;
  let list: Buffer;
  if (cutHere) list = native.list;
  else if (isList) list = encodeChunkList(listChunkRefs(bytes));
  else list = encodeChunkList(chunkRefs(bytes, likeRaw ? (decodeChunkList(likeRaw.bytes) ?? []) : []));
  // One chunk is the document itself (the same digest): it is kept whole, with no list to name it.
  if (list.length <= RECORD) return host.installWhole(digest, bytes, 'doc');
  // (installWhole looks for the object itself: a name not found costs a directory lookup.)
  // The chunks a following document adds are kept deflated (deflated.ts); a list's pieces are digests.
  for (const c of chunksNotIn(list, likeRaw?.bytes ?? null)) {
    const piece = bytes.subarray(c.at, c.at + c.size);
    if (like && !isList) installDeflated(host, c.digest, piece);
    else host.installWhole(c.digest, piece, 'obj');
  }
  const listDigest = sha256Digest(list);
  if (list.length > LIST_THRESHOLD) installChunked(host, listDigest, list, likeList, true);
  else if (!existsSync(host.objectPath(listDigest))) host.installWhole(listDigest, list, 'obj');
  const record = host.chunkedPath(digest);
  const tmp = tempPath(host.paths.tmp, 'doc');
  try {
    mkdirSync(dirname(record), { recursive: true });
    writeFileSync(tmp, encodeChunkedRecord(listDigest, bytes.length), { flag: 'wx', mode: 0o444 });
    renameSync(tmp, record);
    const m = memos?.get(digest);
    if (m && native?.digest === digest) m.installedList = listDigest;
    // A session's document is followed once: the one this followed is not kept beside it (its
    // bytes go back to be written again, native/snapshot.c snapshotFree).
    if (like && like !== digest) memos?.delete(like);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // rollback of our own temp file
    }
    throw toPdbError(err, 'E_IO', { action: `installing object ${digest}`, path: record });
  }
}

/**
 * The objects a chunked document's bytes are kept in (its list, the list's own pieces, its
 * chunks), for gc's mark and verify's list of what is missing; [] for a document kept whole. A
 * list that cannot be read contributes itself only: reading the document reports it.
 */
export function chunkParts(host: ChunkHost, digest: Digest): Digest[] {
  const rec = readChunkedRecord(host, digest);
  if (!rec || rec === 'bad') return [];
  const out: Digest[] = [rec.list, ...chunkParts(host, rec.list)];
  try {
    for (const c of decodeChunkList(host.getBytes(rec.list)) ?? []) out.push(c.digest);
  } catch {
    // reported by whoever reads the document
  }
  return out;
}

export function readChunkedRecord(host: ChunkHost, digest: Digest): { list: Digest; size: number } | null | 'bad' {
  if (existsSync(host.objectPath(digest))) return null;
  let text: string;
  try {
    text = readFileSync(host.chunkedPath(digest), 'utf8');
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') return null;
    throw toPdbError(err, 'E_IO', { action: `reading object ${digest}` });
  }
  return decodeChunkedRecord(text) ?? 'bad';
}

/** E_OBJECT_CORRUPT of the chunked document `digest`, saying why and naming the piece's file. */
export const chunkedCorrupt =
  (host: ChunkHost, digest: Digest) =>
  (why: string, path?: string): PdbError =>
    new PdbError('E_OBJECT_CORRUPT', `object ${digest} (stored as chunks) ${why}`, { hint: host.repairHint, path });

/** The chunks a chunked document's record `rec` lists (its list read and checked); E_OBJECT_CORRUPT naming the record or the list. */
export function chunkRefsOf(
  host: ChunkHost,
  digest: Digest,
  rec: { list: Digest; size: number } | 'bad',
): { refs: ChunkRef[]; size: number } {
  const corrupt = chunkedCorrupt(host, digest);
  if (rec === 'bad') throw corrupt('has a record that is not a chunk list reference', host.chunkedPath(digest));
  let refs: ChunkRef[] | null;
  try {
    refs = decodeChunkList(host.getBytes(rec.list));
  } catch (err) {
    if (isPdbError(err, 'E_OBJECT_MISSING') || isPdbError(err, 'E_OBJECT_CORRUPT'))
      throw corrupt(`cannot be read: its chunk list ${rec.list} is missing or damaged`, host.objectPath(rec.list));
    throw err;
  }
  if (!refs) throw corrupt(`cannot be read: ${rec.list} is not a chunk list`, host.objectPath(rec.list));
  return { refs, size: rec.size };
}

/** A chunked document's bytes, reassembled and checked against its digest; any piece missing or damaged is E_OBJECT_CORRUPT naming the document. */
export function readChunked(host: ChunkHost, digest: Digest, rec: { list: Digest; size: number } | 'bad'): Buffer {
  const corrupt = chunkedCorrupt(host, digest);
  const { refs, size } = chunkRefsOf(host, digest, rec);
  const pieces: Buffer[] = [];
  for (const c of refs) {
    const piece = readChunkBytes(host, c.digest);
    if (piece === null) throw corrupt(`misses its chunk ${c.digest}`, host.objectPath(c.digest));
    if (piece === 'bad') throw corrupt(`has a damaged chunk ${c.digest} (it does not inflate)`, chunkFile(host, c.digest));
    pieces.push(piece);
  }
  const bytes = Buffer.concat(pieces);
  if (bytes.length === size && sha256Digest(bytes) === digest) return bytes;
  const bad = refs.find((c, i) => pieces[i]!.length !== c.size || sha256Digest(pieces[i]!) !== c.digest);
  throw bad ? corrupt(`has a damaged chunk ${bad.digest}`, chunkFile(host, bad.digest)) : corrupt('does not match its digest');
}
