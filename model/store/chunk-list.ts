// Chunk lists (model/store/chunks.ts): the object naming a chunked document's chunks in order,
// and what of one list another does not name.
import { sha256Digest, type Digest } from '../canonical-json.js';

/**
 * The chunks of `list` (a chunk list's bytes) that `before` (another's, or null) does not name:
 * where each begins in the document, its length and its digest. Compared as bytes, 36 a record,
 * with no digest string made for a chunk the two share: a Snapshot of 25,000 entries has some
 * thousands of chunks and a checkpoint after a small change shares all but a few.
 */
export function chunksNotIn(list: Buffer, before: Buffer | null): Array<{ at: number; size: number; digest: Digest }> {
  // Each record of `before` by the first 4 bytes of its digest (a number, no string), confirmed in full.
  const seen = new Map<number, number | number[]>();
  if (before)
    for (let o = 0; o + RECORD <= before.length; o += RECORD) {
      const k = before.readUInt32BE(o) >>> 2; // 30 bits: a small integer to V8
      const had = seen.get(k);
      if (had === undefined) seen.set(k, o);
      else if (typeof had === 'number') seen.set(k, [had, o]);
      else had.push(o);
    }
  const sameDigest = (o: number, p: number) => list.compare(before!, p, p + 32, o, o + 32) === 0;
  const out: Array<{ at: number; size: number; digest: Digest }> = [];
  let at = 0;
  for (let o = 0; o + RECORD <= list.length; o += RECORD) {
    const size = list.readUInt32BE(o + 32);
    const had = seen.get(list.readUInt32BE(o) >>> 2);
    const known = had !== undefined && (typeof had === 'number' ? sameDigest(o, had) : had.some((p) => sameDigest(o, p)));
    if (!known) out.push({ at, size, digest: `sha256:${list.toString('hex', o, o + 32)}` as Digest });
    at += size;
  }
  return out;
}

/** One chunk of a document: its object and its length. */
export interface ChunkRef {
  digest: Digest;
  size: number;
}

// A chunk list is itself an object: per chunk, its 32 digest bytes and its length (uint32, big
// endian), 36 bytes a chunk. Binary, so that a list of a large document is chunked in turn.
export const RECORD = 36;

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
 * How a chunk list is cut when it is chunked in turn: after a record whose digest's last four bytes
 * are a multiple of LIST_FANOUT (or after LIST_MAX_RECORDS records), so a boundary depends on one
 * record alone and a changed record rewrites only its own piece of the list: 8 records, 288 bytes,
 * on average. Cut as the documents were (1 KiB on average, at any byte), a list's pieces hit by a
 * two-file checkpoint of a 5,000-entry tree were about 1.4 KB each, and lists were 29% of what 30
 * such checkpoints added to the store (docs/store.md, "Chunk size").
 */
export const LIST_FANOUT = 8;
export const LIST_MAX_RECORDS = 64;

/** The pieces of a chunk list's bytes (whole records each), with their digests. */
export function listChunkRefs(list: Buffer): ChunkRef[] {
  const out: ChunkRef[] = [];
  let start = 0;
  for (let o = 0; o + RECORD <= list.length; o += RECORD) {
    const end = o + RECORD;
    if (end === list.length || list.readUInt32BE(o + 28) % LIST_FANOUT === 0 || end - start >= LIST_MAX_RECORDS * RECORD) {
      out.push({ digest: sha256Digest(list.subarray(start, end)), size: end - start });
      start = end;
    }
  }
  return out;
}
