// Content-defined chunks of a large document (FastCDC with normalized chunking, as restic and borg
// chunk): a boundary depends only on the 32 bytes before it, so two Snapshots that differ in a few
// entries share every chunk those entries are not in. Boundaries only decide what is shared, never
// what is read: a document is always reassembled and checked against its own digest.
import type { Digest } from '../canonical-json.js';
import { sha256 } from '../os/hash.js';

/** Chunk sizes: small enough that a 1-entry change of a Snapshot rewrites about 10 KB, large enough that a 250,000-entry Snapshot (48 MB) is 6,000 files. */
export const CHUNK_MIN = 2 * 1024;
export const CHUNK_AVG = 8 * 1024;
export const CHUNK_MAX = 64 * 1024;
/** A document larger than this is stored as chunks; smaller ones stay one object (as every document before). */
export const CHUNK_THRESHOLD = 16 * 1024;

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

// Normalized chunking (FastCDC level 2): a harder mask before the average size, an easier one after.
// The hash shifts left, so only its top bits depend on a full 32-byte window: the masks use those.
const MASK_HARD = 0xfffe0000 | 0; // 15 bits
const MASK_EASY = 0xffe00000 | 0; // 11 bits

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

/** The chunk boundaries of `bytes`: the end offset of each chunk, in order (the last is bytes.length). */
export function chunkEnds(bytes: Uint8Array): number[] {
  const ends: number[] = [];
  const table = gear();
  for (let at = 0; at < bytes.length;) ends.push((at = cutPoint(bytes, at, table)));
  return ends;
}

/** One chunk of a document: its object and its length. */
export interface ChunkRef {
  digest: Digest;
  size: number;
}

// A chunk list is itself an object: per chunk, its 32 digest bytes and its length (uint32, big
// endian), 36 bytes a chunk. Binary, so that a list of a large document is chunked in turn.
const RECORD = 36;

export function encodeChunkList(chunks: readonly ChunkRef[]): Buffer {
  const out = Buffer.allocUnsafe(chunks.length * RECORD);
  chunks.forEach((c, i) => {
    out.write(c.digest.slice(7), i * RECORD, 32, 'hex');
    out.writeUInt32BE(c.size, i * RECORD + 32);
  });
  return out;
}

/** The chunks a list names; null when its bytes cannot be a list. */
export function decodeChunkList(bytes: Buffer): ChunkRef[] | null {
  if (bytes.length === 0 || bytes.length % RECORD !== 0) return null;
  const out: ChunkRef[] = [];
  for (let o = 0; o < bytes.length; o += RECORD)
    out.push({ digest: `sha256:${bytes.toString('hex', o, o + 32)}`, size: bytes.readUInt32BE(o + 32) });
  return out;
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
