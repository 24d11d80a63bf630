import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { mkdir, open, readdir } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { canonicalBytes, isDigest, sha256Digest, type Digest } from '../canonical-json.js';
import { PdbError, isPdbError, osErrorCode, toPdbError } from '../errors.js';
import { canonicalSnapshot, type Snapshot } from '../snapshot.js';
import { nodeCrypto, randomHex } from '../os/hash.js';
import { tempPath } from '../os/temp-name.js';
import { assertStored } from './chunk-check.js';
import { chunkThreshold, chunkParts, installChunked, readChunked, readChunkedRecord } from './chunks.js';
import { deflatedPath, hasChunk, readChunkBytes } from './deflated.js';
import { installFile, writeAll } from './install-file.js';
import { makeReserve } from './reserve.js';

/** The directory layout of a store. Paths only; what lives where is documented in DESIGN section 4. */
export interface StorePaths {
  root: string;
  objects: string;
  /** Records of documents stored as chunks (model/store/chunks.ts), by digest as objects are. */
  chunked: string;
  /** Chunks kept deflated (model/store/deflated.ts), apart from objects that may be files' bytes. */
  deflated: string;
  bases: string;
  environments: string;
  sessions: string;
  journal: string;
  tmp: string;
  sources: string;
  /** Where damaged things are moved aside, never deleted: objects/, journal/, records/. */
  quarantine: string;
  /** Store-level locks (the store lock that gc holds while it decides). */
  locks: string;
}

export function storePaths(root: string): StorePaths {
  return {
    root,
    objects: join(root, 'objects', 'sha256'),
    chunked: join(root, 'objects', 'chunked'),
    deflated: join(root, 'objects', 'deflated'),
    bases: join(root, 'bases'),
    environments: join(root, 'environments'),
    sessions: join(root, 'sessions'),
    journal: join(root, 'journal'),
    tmp: join(root, 'tmp'),
    sources: join(root, 'sources'),
    quarantine: join(root, 'quarantine'),
    locks: join(root, 'locks'),
  };
}

export const STORE_MARKER = 'store.json';

/**
 * The object generation: a token that changes whenever objects leave the store (gc sweeps them,
 * verify or a failed copy quarantines them). A tree index written in the same generation may
 * trust that its digests are in the store; in another, each is checked.
 */
export const GENERATION_FILE = 'generation';

/** What to do about a corrupt or missing object (doctor and verify print it too). */
export const REPAIR_HINT =
  'pdb-env verify moves corrupt objects to the quarantine and lists what is missing; pdb-env create NAME --from DIR re-imports a source that still holds the bytes and installs them again.';

/**
 * Unique temp path inside the store's tmp dir (same filesystem, so rename is atomic), named
 * `<kind>.<pid>.<start>.<random>` so recovery can tell whether its owner still runs.
 */
export function tempName(paths: StorePaths, kind = 'tmp'): string {
  return tempPath(paths.tmp, kind);
}

/**
 * Write a file atomically: temp file in the same store, fsync, rename over the target. Every
 * failure is typed (E_NO_SPACE, E_READ_ONLY, E_PERMISSION...) and names the target; the temp
 * file is removed. `sync: false` skips the fsync, for caches that are only ever read with a check
 * (a tree index cut short by a crash is ignored).
 */
export async function writeFileAtomic(
  paths: StorePaths,
  target: string,
  data: string | Buffer | readonly Buffer[],
  mode = 0o644,
  options: { sync?: boolean } = {},
): Promise<void> {
  // Synchronous calls: each of these files is small or written once per command, and a round
  // trip through libuv's thread pool per call cost more than the writes (measured in checkpoint).
  const tmp = tempName(paths, 'write');
  try {
    const fd = openSync(tmp, 'wx', mode);
    try {
      writeAll(fd, data);
      if (options.sync !== false) fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, target);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // rollback of our own temp file; the error below is what matters
    }
    throw toPdbError(err, 'E_IO', { action: 'writing', path: target });
  }
}

/** Immutable, deduplicated content-addressed blobs under `<store>/objects/sha256/ab/cdef...`. */
export class ObjectStore {
  readonly repairHint = REPAIR_HINT;

  constructor(readonly paths: StorePaths) {}

  static async init(root: string): Promise<ObjectStore> {
    const paths = storePaths(root);
    for (const dir of [paths.bases, paths.environments, paths.sessions, paths.journal, paths.tmp, paths.sources, paths.locks]) {
      await mkdir(dir, { recursive: true });
    }
    if (!existsSync(join(paths.objects, 'ff'))) {
      for (let i = 0; i < 256; i++) mkdirSync(join(paths.objects, i.toString(16).padStart(2, '0')), { recursive: true });
    }
    const marker = join(root, STORE_MARKER);
    if (!existsSync(marker)) {
      await writeFileAtomic(paths, marker, `${JSON.stringify({ kind: 'pdb-env-store', version: 1 })}\n`);
      makeReserve(root); // room for gc on a full filesystem (reserve.ts)
    }
    return new ObjectStore(paths);
  }

  /** Open an existing store; E_STORE_INVALID when `root` is not one. */
  static open(root: string): ObjectStore {
    if (!existsSync(join(root, STORE_MARKER))) {
      throw new PdbError('E_STORE_INVALID', `${root} is not a pdb-env store (no ${STORE_MARKER})`, {
        hint: 'Create a session first (pdb-env create NAME), or pass the right --store.',
      });
    }
    return new ObjectStore(storePaths(root));
  }

  objectPath(digest: Digest): string {
    if (!isDigest(digest)) throw new PdbError('E_BAD_PATH', `not a digest: ${String(digest)}`);
    // Not path.join: paths.objects is joined already, the rest is hex, and join's normalizing was
    // most of what a check of a Snapshot's 6,197 chunks cost (assertStored: 4-5 us a path).
    return `${this.paths.objects}${sep}${digest.slice(7, 9)}${sep}${digest.slice(9)}`;
  }

  /**
   * Where a document stored as chunks (model/store/chunks.ts) keeps its one-line record: beside
   * the objects, not among them, as its bytes are not the ones its name hashes.
   */
  chunkedPath(digest: Digest): string {
    this.objectPath(digest); // a malformed digest fails here
    const hex = digest.slice(7);
    return join(this.paths.chunked, hex.slice(0, 2), hex.slice(2));
  }

  has(digest: Digest): boolean {
    return existsSync(this.objectPath(digest)) || existsSync(this.chunkedPath(digest));
  }

  /** Whether `digest` is here as an object, a chunked document or a deflated chunk (a piece chunkParts names). */
  hasPart(digest: Digest): boolean {
    return this.has(digest) || hasChunk(this, digest);
  }

  /** Whether `digest` is stored as chunks (a record naming its chunk list) rather than as one object. */
  isChunked(digest: Digest): boolean {
    return !existsSync(this.objectPath(digest)) && existsSync(this.chunkedPath(digest));
  }

  /** The current object generation ('' for a store whose objects never left). */
  generation(): string {
    try {
      return readFileSync(join(this.paths.root, GENERATION_FILE), 'utf8').trim();
    } catch (err) {
      if (osErrorCode(err) === 'ENOENT') return '';
      throw toPdbError(err, 'E_IO', { action: 'reading the object generation' });
    }
  }

  /** Objects are about to leave the store: every tree index written before stops vouching for them. */
  bumpGeneration(): void {
    const file = join(this.paths.root, GENERATION_FILE);
    const tmp = tempName(this.paths, 'write');
    try {
      writeFileSync(tmp, `${Date.now().toString(36)}-${randomHex(6)}\n`, { flag: 'wx' });
      renameSync(tmp, file);
    } catch (err) {
      throw toPdbError(err, 'E_IO', { action: 'changing the object generation', path: file });
    }
  }

  /** Install a Snapshot document (its canonical bytes written directly, see canonicalSnapshot). */
  async putSnapshot(snapshot: Snapshot): Promise<Digest> {
    const { bytes, digest } = canonicalSnapshot(snapshot);
    await this.install(digest, bytes, 'doc');
    return digest;
  }

  /** Install a document's canonical bytes whose digest the caller computed (a Snapshot written from tree index columns). */
  async putDocumentBytes(bytes: Buffer, digest: Digest, like: Digest | null = null): Promise<Digest> {
    await this.install(digest, bytes, 'doc', like);
    return digest;
  }

  async putBytes(bytes: Buffer): Promise<Digest> {
    const digest = sha256Digest(bytes);
    await this.install(digest, bytes, 'obj');
    return digest;
  }

  /**
   * Install `bytes` as object `digest` unless a good copy is there. An existing copy whose bytes
   * differ is quarantined and replaced: this is how a re-import repairs a damaged document.
   */
  private async install(digest: Digest, bytes: Buffer, kind: string, like: Digest | null = null): Promise<void> {
    if (kind === 'doc' && bytes.length > chunkThreshold(like)) return installChunked(this, digest, bytes, like);
    this.installWhole(digest, bytes, kind);
  }

  /** Install `bytes` as one object file (no chunks), unless it is there. */
  installWhole(digest: Digest, bytes: Buffer, kind: string): void {
    const dst = this.objectPath(digest);
    if (existsSync(dst)) {
      if (readFileSync(dst).equals(bytes)) return;
      this.quarantineObject(digest);
    }
    installFile(this.paths.tmp, kind, dst, bytes, digest);
  }

  /**
   * The objects a chunked document's bytes are kept in (its list, the list's own pieces, its
   * chunks), for gc's mark and verify's list of what is missing; [] for a document kept whole.
   */
  chunkParts(digest: Digest): Digest[] {
    return chunkParts(this, digest);
  }

  /**
   * Move a damaged object aside into `<store>/quarantine/objects/` (never deleted), so that it is
   * missing: the next import of a source holding those bytes installs them again. Returns where it
   * went, or null when it was already gone (another process moved it first).
   */
  quarantineObject(digest: Digest): string | null {
    const dir = join(this.paths.quarantine, 'objects');
    mkdirSync(dir, { recursive: true });
    this.bumpGeneration();
    const aside = join(dir, `${digest.slice(7)}.${new Date().toISOString().replace(/[:.]/g, '')}.${process.pid}`);
    try {
      const z = deflatedPath(this, digest)!;
      renameSync([this.objectPath(digest), z].find((p) => existsSync(p)) ?? this.chunkedPath(digest), aside);
      return aside;
    } catch (err) {
      if (osErrorCode(err) === 'ENOENT') return null;
      throw toPdbError(err, 'E_IO', { action: `moving corrupt object ${digest} to the quarantine` });
    }
  }

  /** Digests of the objects moved to the quarantine (each once, even when moved several times). */
  async quarantinedObjects(): Promise<Digest[]> {
    const names = await readdir(join(this.paths.quarantine, 'objects')).catch(() => [] as string[]);
    return [...new Set(names.map((n) => `sha256:${n.split('.')[0]}` as Digest).filter((d) => isDigest(d)))].sort();
  }

  /** `digest` is here, whole as far as can be told without reading it (chunks.ts assertStored): typed E_OBJECT_MISSING or E_OBJECT_CORRUPT otherwise. */
  assertStored(digest: Digest): void {
    assertStored(this, digest);
  }

  /** Read an object and verify its digest. */
  getBytes(digest: Digest): Buffer {
    let bytes: Buffer;
    try {
      bytes = readFileSync(this.objectPath(digest));
    } catch (err) {
      const rec = osErrorCode(err) === 'ENOENT' ? readChunkedRecord(this, digest) : null;
      if (rec) return readChunked(this, digest, rec);
      if (osErrorCode(err) === 'ENOENT')
        throw new PdbError('E_OBJECT_MISSING', `object ${digest} is not in the store`, {
          cause: err,
          hint: REPAIR_HINT,
        });
      throw toPdbError(err, 'E_IO', { action: `reading object ${digest}` });
    }
    if (sha256Digest(bytes) !== digest) {
      throw new PdbError('E_OBJECT_CORRUPT', `object ${digest} does not match its digest`, { hint: REPAIR_HINT });
    }
    return bytes;
  }

  /** Install a JSON document; `like` names a similar one already stored (the one it follows), whose chunks it is likely to share. */
  async putDocument(doc: unknown, like: Digest | null = null): Promise<Digest> {
    const { bytes, digest } = canonicalBytes(doc);
    await this.install(digest, bytes, 'doc', like);
    return digest;
  }

  /** A JSON document object; E_USAGE naming `what` when the object is not JSON (a file object's digest, say). */
  getDocument<T>(digest: Digest, what = 'document'): T {
    const bytes = this.getBytes(digest);
    try {
      return JSON.parse(bytes.toString('utf8')) as T;
    } catch (err) {
      throw new PdbError('E_USAGE', `${digest} is not a ${what}: the object holds ${bytes.length} bytes that are not JSON`, {
        cause: err,
        hint: 'Pass the digest of a Snapshot (pdb-env envs lists heads; checkpoint --json prints a result Snapshot).',
      });
    }
  }

  /**
   * Re-hash every object; returns the digests whose bytes do not match their name. With
   * `quarantine`, each corrupt object is also moved aside (see quarantineObject).
   */
  async verifyAll(
    options: { quarantine?: boolean; onProgress?: (done: number) => void } = {},
  ): Promise<{ checked: number; corrupt: Digest[] }> {
    const corrupt: Digest[] = [];
    let checked = 0;
    for (const prefix of (await readdir(this.paths.objects)).sort()) {
      const dir = join(this.paths.objects, prefix);
      for (const rest of (await readdir(dir)).sort()) {
        const expected = `sha256:${prefix}${rest}` as Digest;
        if (!isDigest(expected)) continue; // not an object name: nothing to check it against
        if ((await hashFile(join(dir, rest))) !== expected) {
          corrupt.push(expected);
          if (options.quarantine) this.quarantineObject(expected);
        }
        checked++;
        if (options.onProgress && checked % 1000 === 0) options.onProgress(checked);
      }
    }
    // Deflated chunks: their bytes once inflated (one that does not inflate is corrupt too).
    for (const prefix of (await readdir(this.paths.deflated).catch(() => [] as string[])).sort()) {
      for (const rest of (await readdir(join(this.paths.deflated, prefix))).sort()) {
        const expected = `sha256:${prefix}${rest}` as Digest;
        if (!isDigest(expected) || existsSync(this.objectPath(expected))) continue;
        const bytes = readChunkBytes(this, expected);
        if (bytes === null) continue; // gone since the listing (gc)
        checked++;
        if (bytes === 'bad' || sha256Digest(bytes) !== expected) {
          corrupt.push(expected);
          if (options.quarantine) this.quarantineObject(expected);
        }
      }
    }
    // A chunked document is checked whole once its chunks are: its record is corrupt when what it
    // names is all there and still does not make the document (a missing piece is verify's to list).
    const prefixes = await readdir(this.paths.chunked).catch(() => [] as string[]);
    for (const prefix of prefixes.sort()) {
      for (const rest of (await readdir(join(this.paths.chunked, prefix))).sort()) {
        const digest = `sha256:${prefix}${rest}` as Digest;
        if (!isDigest(digest) || existsSync(this.objectPath(digest))) continue;
        checked++;
        try {
          this.getBytes(digest);
        } catch (err) {
          if (!isPdbError(err, 'E_OBJECT_CORRUPT')) throw err;
          if (!this.chunkParts(digest).every((d) => this.hasPart(d))) continue;
          corrupt.push(digest);
          if (options.quarantine) this.quarantineObject(digest);
        }
      }
    }
    return { checked, corrupt };
  }
}

async function hashFile(path: string): Promise<string> {
  const h = nodeCrypto().createHash('sha256');
  const fh = await open(path, 'r');
  try {
    for await (const chunk of fh.createReadStream()) h.update(chunk as Buffer);
  } finally {
    await fh.close().catch(() => {}); // the stream closes it; a second close may fail harmlessly
  }
  return `sha256:${h.digest('hex')}`;
}
