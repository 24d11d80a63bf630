import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { canonicalBytes, isDigest, sha256Digest, type Digest } from './canonical-json.js';
import { PdbError, osErrorCode } from './errors.js';

/** The directory layout of a store. Paths only; what lives where is documented in DESIGN section 4. */
export interface StorePaths {
  root: string;
  objects: string;
  bases: string;
  environments: string;
  sessions: string;
  journal: string;
  tmp: string;
  sources: string;
}

export function storePaths(root: string): StorePaths {
  return {
    root,
    objects: join(root, 'objects', 'sha256'),
    bases: join(root, 'bases'),
    environments: join(root, 'environments'),
    sessions: join(root, 'sessions'),
    journal: join(root, 'journal'),
    tmp: join(root, 'tmp'),
    sources: join(root, 'sources'),
  };
}

export const STORE_MARKER = 'store.json';

/** Unique temp name inside the store's tmp dir (same filesystem, so rename is atomic). */
export function tempName(paths: StorePaths, prefix = 'tmp'): string {
  return join(paths.tmp, `${prefix}-${process.pid}-${randomBytes(6).toString('hex')}`);
}

/** Write a file atomically: temp file in the same store, fsync, rename over the target. */
export async function writeFileAtomic(paths: StorePaths, target: string, data: string | Buffer, mode = 0o644): Promise<void> {
  const tmp = tempName(paths, 'write');
  const fh = await open(tmp, 'wx', mode);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await rename(tmp, target);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw err;
  }
}

/** Immutable, deduplicated content-addressed blobs under `<store>/objects/sha256/ab/cdef...`. */
export class ObjectStore {
  constructor(readonly paths: StorePaths) {}

  static async init(root: string): Promise<ObjectStore> {
    const paths = storePaths(root);
    for (const dir of [paths.bases, paths.environments, paths.sessions, paths.journal, paths.tmp, paths.sources]) {
      await mkdir(dir, { recursive: true });
    }
    if (!existsSync(join(paths.objects, 'ff'))) {
      for (let i = 0; i < 256; i++) mkdirSync(join(paths.objects, i.toString(16).padStart(2, '0')), { recursive: true });
    }
    const marker = join(root, STORE_MARKER);
    if (!existsSync(marker)) await writeFileAtomic(paths, marker, `${JSON.stringify({ kind: 'pdb-env-store', version: 1 })}\n`);
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
    const hex = digest.slice(7);
    return join(this.paths.objects, hex.slice(0, 2), hex.slice(2));
  }

  has(digest: Digest): boolean {
    return existsSync(this.objectPath(digest));
  }

  async putBytes(bytes: Buffer): Promise<Digest> {
    const digest = sha256Digest(bytes);
    const dst = this.objectPath(digest);
    if (existsSync(dst)) return digest;
    const tmp = tempName(this.paths, 'obj');
    await writeFile(tmp, bytes, { mode: 0o444, flag: 'wx' });
    await rename(tmp, dst);
    return digest;
  }

  /** Read an object and verify its digest. */
  getBytes(digest: Digest): Buffer {
    let bytes: Buffer;
    try {
      bytes = readFileSync(this.objectPath(digest));
    } catch (err) {
      if (osErrorCode(err) === 'ENOENT')
        throw new PdbError('E_OBJECT_MISSING', `object ${digest} is not in the store`, {
          cause: err,
          hint: 'Run pdb-env verify; re-import the source with pdb-env create.',
        });
      throw err;
    }
    if (sha256Digest(bytes) !== digest) {
      throw new PdbError('E_OBJECT_CORRUPT', `object ${digest} does not match its digest`, {
        hint: 'Run pdb-env verify to list every corrupt object.',
      });
    }
    return bytes;
  }

  async putDocument(doc: unknown): Promise<Digest> {
    const { bytes, digest } = canonicalBytes(doc);
    const dst = this.objectPath(digest);
    if (!existsSync(dst)) {
      const tmp = tempName(this.paths, 'doc');
      await writeFile(tmp, bytes, { mode: 0o444, flag: 'wx' });
      await rename(tmp, dst);
    }
    return digest;
  }

  getDocument<T>(digest: Digest): T {
    return JSON.parse(this.getBytes(digest).toString('utf8')) as T;
  }

  /** Re-hash every object; returns the digests whose bytes do not match their name. */
  async verifyAll(onProgress?: (done: number) => void): Promise<{ checked: number; corrupt: Digest[] }> {
    const corrupt: Digest[] = [];
    let checked = 0;
    for (const prefix of (await readdir(this.paths.objects)).sort()) {
      const dir = join(this.paths.objects, prefix);
      for (const rest of (await readdir(dir)).sort()) {
        const expected = `sha256:${prefix}${rest}` as Digest;
        const h = createHash('sha256');
        const fh = await open(join(dir, rest), 'r');
        try {
          for await (const chunk of fh.createReadStream()) h.update(chunk as Buffer);
        } finally {
          await fh.close().catch(() => {});
        }
        if (`sha256:${h.digest('hex')}` !== expected) corrupt.push(expected);
        checked++;
        if (onProgress && checked % 1000 === 0) onProgress(checked);
      }
    }
    return { checked, corrupt };
  }

  /** Remove leftover temp files (from a crash); returns how many. */
  async cleanTmp(olderThanMs = 0): Promise<number> {
    let n = 0;
    for (const name of await readdir(this.paths.tmp).catch(() => [] as string[])) {
      const p = join(this.paths.tmp, name);
      const st = await stat(p).catch(() => null);
      if (st && Date.now() - st.mtimeMs >= olderThanMs) {
        await rm(p, { recursive: true, force: true });
        n++;
      }
    }
    return n;
  }
}
