// Chunks kept deflated (issue 53 item 3: store growth against git's loose objects, which git
// deflates). The chunks a following document adds (a session's next Snapshot or Changeset: the few
// around a change) are written as raw DEFLATE under `objects/deflated/ab/cdef...`, apart from
// `objects/sha256/`: an object there may also be a file's bytes (a session's file is materialized
// from it), so deflated bytes never go there. A first import's chunks stay as they are: deflating a
// 250,000-entry Snapshot's 47,000 chunks one by one would cost about a second (20-25 us a chunk
// measured), where a checkpoint after a small change deflates a few. A chunk is looked for in both
// places, whole first: chunks of older stores, and chunk lists, are whole.
import { existsSync, readFileSync } from 'node:fs';
import { sep } from 'node:path';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Digest } from '../canonical-json.js';
import { osErrorCode, toPdbError } from '../errors.js';
import { installFile } from './install-file.js';

/** The part of the object store deflated chunks are kept with. */
export interface DeflateHost {
  readonly paths: { tmp: string; deflated?: string };
  objectPath(digest: Digest): string;
  installWhole(digest: Digest, bytes: Buffer, kind: string): void;
  quarantineObject(digest: Digest): string | null;
}

/** No chunk inflates past this (chunks are at most 32 KiB): a damaged file is not inflated without bound. */
const MAX_INFLATED = 1 << 20;

/** Where chunk `digest` is kept deflated; null for a host with no such directory (then nothing is). */
export function deflatedPath(host: DeflateHost, digest: Digest): string | null {
  const dir = host.paths.deflated;
  if (!dir) return null;
  host.objectPath(digest); // a malformed digest fails here
  return `${dir}${sep}${digest.slice(7, 9)}${sep}${digest.slice(9)}`;
}

/** The file chunk `digest` is in: whole if it is there, else deflated (the path either way, for an error to name). */
export function chunkFile(host: DeflateHost, digest: Digest): string {
  const whole = host.objectPath(digest);
  const z = existsSync(whole) ? null : deflatedPath(host, digest);
  return z && existsSync(z) ? z : whole;
}

/** Whether chunk `digest` is in the store, whole or deflated. */
export function hasChunk(host: DeflateHost, digest: Digest): boolean {
  if (existsSync(host.objectPath(digest))) return true;
  const z = deflatedPath(host, digest);
  return !!z && existsSync(z);
}

/**
 * The bytes of chunk `digest` as stored (not checked against the digest: the caller checks them),
 * whole or inflated; null when it is in neither place, 'bad' when its deflated file does not inflate.
 */
export function readChunkBytes(host: DeflateHost, digest: Digest): Buffer | null | 'bad' {
  try {
    return readFileSync(host.objectPath(digest));
  } catch (err) {
    if (osErrorCode(err) !== 'ENOENT') throw toPdbError(err, 'E_IO', { action: `reading object ${digest}` });
  }
  const z = deflatedPath(host, digest);
  if (!z) return null;
  let stored: Buffer;
  try {
    stored = readFileSync(z);
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') return null;
    throw toPdbError(err, 'E_IO', { action: `reading object ${digest}`, path: z });
  }
  try {
    return inflateRawSync(stored, { maxOutputLength: MAX_INFLATED });
  } catch {
    return 'bad';
  }
}

/**
 * Install chunk `bytes` deflated unless the chunk is in the store: a copy already kept (either
 * way) that holds other bytes is quarantined and replaced, as installWhole does. Where deflating
 * saves nothing, or the host keeps no deflated chunks, it is installed whole.
 */
export function installDeflated(host: DeflateHost, digest: Digest, bytes: Buffer): void {
  const path = deflatedPath(host, digest);
  if (!path || existsSync(host.objectPath(digest))) return host.installWhole(digest, bytes, 'obj');
  if (existsSync(path)) {
    const had = readChunkBytes(host, digest);
    if (had !== 'bad' && had?.equals(bytes)) return;
    host.quarantineObject(digest);
  }
  const z = deflateRawSync(bytes, { level: 6 });
  if (z.length >= bytes.length) return host.installWhole(digest, bytes, 'obj');
  installFile(host.paths.tmp, 'obj', path, z, digest, true);
}
