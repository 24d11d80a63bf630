// Whether a chunked document is stored whole, without reading its bytes (restore checks its
// target so before it takes anything): its record, its chunk list, and every chunk there and of
// the size the list gives.
import { existsSync, lstatSync } from 'node:fs';
import { sha256Digest, type Digest } from '../canonical-json.js';
import { PdbError, osErrorCode } from '../errors.js';
import { loadNativeAddon } from '../os/native.js';
import type { ChunkRef } from './chunk-list.js';
import { chunkFile, readChunkBytes } from './deflated.js';
import { chunkRefsOf, chunkedCorrupt, readChunkedRecord, type ChunkHost } from './chunks.js';

const ENOENT = 2;
type AddonSizesOf = (dir: string, names: Buffer) => Float64Array;
let addonSizesOf: AddonSizesOf | null | undefined;

/**
 * The lstat size of each chunk object, or -errno (ENOENT: 2): one native call for them all where
 * the addon has it, each looked up below the objects directory (6,197 chunks of the pinned
 * monorepo's Snapshot: about 30 ms by statSync of its full path), else statSync.
 */
function chunkSizes(host: ChunkHost, refs: ChunkRef[]): Float64Array {
  if (addonSizesOf === undefined) {
    const addon = loadNativeAddon().addon as { sizesOf?: AddonSizesOf } | null;
    addonSizesOf = typeof addon?.sizesOf === 'function' ? addon.sizesOf.bind(addon) : null;
  }
  const objects = host.paths.objects;
  if (addonSizesOf && objects) {
    // A chunk list's digests are made from its bytes (hex), so each is a name of two levels.
    const names = refs.map((r) => `${r.digest.slice(7, 9)}/${r.digest.slice(9)}\0`).join('');
    return addonSizesOf(objects, Buffer.from(names, 'latin1'));
  }
  return Float64Array.from(refs, (r) => {
    try {
      return lstatSync(host.objectPath(r.digest)).size;
    } catch (err) {
      return osErrorCode(err) === 'ENOENT' ? -ENOENT : -1;
    }
  });
}

/**
 * Without reading the document's bytes: `digest` is in the store and, stored as chunks, its record,
 * its chunk list (read and hashed: small) and every chunk are there, each of the size the list
 * gives. E_OBJECT_MISSING or E_OBJECT_CORRUPT naming the piece. A byte flipped inside a chunk is
 * found only by reading it (verify, or whoever reads the document).
 */
export function assertStored(host: ChunkHost, digest: Digest): void {
  if (existsSync(host.objectPath(digest))) return;
  const rec = readChunkedRecord(host, digest);
  if (!rec) throw new PdbError('E_OBJECT_MISSING', `object ${digest} is not in the store`, { hint: host.repairHint });
  const corrupt = chunkedCorrupt(host, digest);
  const { refs, size: whole } = chunkRefsOf(host, digest, rec);
  const sizes = chunkSizes(host, refs);
  let total = 0;
  refs.forEach((r, k) => {
    let size = sizes[k]!;
    // Not whole: kept deflated, or missing. A deflated chunk is read and checked (only the chunks
    // checkpoints after the first added are: a few a turn; deflated.ts).
    const bytes = size === -ENOENT ? readChunkBytes(host, r.digest) : null;
    if (bytes === 'bad' || (bytes && sha256Digest(bytes) !== r.digest))
      throw corrupt(`has a damaged chunk ${r.digest} (deflated)`, chunkFile(host, r.digest));
    if (bytes) size = bytes.length;
    if (size === -ENOENT)
      throw new PdbError('E_OBJECT_MISSING', `object ${digest} (stored as chunks): its chunk ${r.digest} is not in the store`, {
        hint: host.repairHint,
        path: host.objectPath(r.digest),
      });
    if (size < 0)
      throw new PdbError('E_IO', `reading chunk ${r.digest} of ${digest} failed (errno ${-size})`, { path: host.objectPath(r.digest) });
    if (size !== r.size) throw corrupt(`has a damaged chunk ${r.digest} (${size} bytes, not ${r.size})`, host.objectPath(r.digest));
    total += r.size;
  });
  if (total !== whole) throw corrupt(`has chunks of ${total} bytes, not the ${whole} its record says`, host.chunkedPath(digest));
}
