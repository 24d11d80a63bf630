import type { BigIntStats } from 'node:fs';
import { lstatSync, readdirSync, readlinkSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import type { Digest } from './canonical-json.js';
import { PdbError, osErrorCode } from './errors.js';
import { sharedFsPool, type FsPool } from './fs-pool.js';
import type { ObjectStore } from './object-store.js';
import { assertContractPath, sortEntries, type Entry } from './snapshot.js';

/** Administrative roots that no scan ever includes. */
export const ADMIN_ROOTS = ['.git', '.pdb', '.pdb-host'] as const;

export const SOURCE_CONFIG = 'pdb-env.json';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Read the optional `pdb-env.json` of a source root: `{ "excludes": ["node_modules", "dist"] }`. */
export async function readSourceConfig(root: string): Promise<{ excludes: string[] }> {
  let text: string;
  try {
    text = await readFile(join(root, SOURCE_CONFIG), 'utf8');
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') return { excludes: [] };
    throw err;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new PdbError('E_CONFIG_INVALID', `${SOURCE_CONFIG} is not valid JSON: ${(err as Error).message}`, {
      cause: err,
      path: SOURCE_CONFIG,
    });
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) {
    throw new PdbError('E_CONFIG_INVALID', `${SOURCE_CONFIG} must be an object like {"excludes": ["node_modules"]}`, {
      path: SOURCE_CONFIG,
    });
  }
  const unknownKeys = Object.keys(doc).filter((k) => k !== 'excludes' && k !== '$schema');
  if (unknownKeys.length)
    throw new PdbError('E_CONFIG_INVALID', `${SOURCE_CONFIG} has unknown keys: ${unknownKeys.join(', ')}`, {
      path: SOURCE_CONFIG,
      hint: 'Only "excludes" is read.',
    });
  const excludes = (doc as { excludes?: unknown }).excludes ?? [];
  if (!Array.isArray(excludes) || excludes.some((x) => typeof x !== 'string')) {
    throw new PdbError('E_CONFIG_INVALID', `${SOURCE_CONFIG}: "excludes" must be an array of strings`, { path: SOURCE_CONFIG });
  }
  const normalized = [...new Set((excludes as string[]).map((x) => x.replace(/^\/+|\/+$/g, '')))];
  for (const x of normalized) {
    try {
      assertContractPath(x);
    } catch {
      throw new PdbError('E_CONFIG_INVALID', `${SOURCE_CONFIG}: exclude "${x}" is not a relative path or name`, { path: SOURCE_CONFIG });
    }
  }
  return { excludes: normalized.sort() };
}

/**
 * A matcher for excludes: a bare name ("node_modules") matches that name at any depth; a
 * pattern with a "/" ("packages/a/dist") matches exactly that relative path.
 */
export function createExcludeMatcher(excludes: string[], extraPaths: string[] = []): (relPath: string, name: string) => boolean {
  const names = new Set(excludes.filter((x) => !x.includes('/')));
  const paths = new Set([...excludes.filter((x) => x.includes('/')), ...extraPaths]);
  const admin = new Set<string>(ADMIN_ROOTS);
  return (relPath, name) => {
    if (!relPath.includes('/') && admin.has(relPath)) return true;
    return names.has(name) || paths.has(relPath);
  };
}

/** What we know of a file from lstat, to tell an unchanged file without re-reading it. */
export interface StatSig {
  sig: string;
  /** ctime in ns; files changed too close to the scan are not trusted next time (racy-clean rule). */
  ctimeNs: bigint;
}

export type StatCache = Map<string, { sig: string; digest: Digest; size: number }>;

function statSig(st: BigIntStats): string {
  return `${st.size}:${st.mode}:${st.ino}:${st.dev}:${st.mtimeNs}:${st.ctimeNs}`;
}

export interface ScanOptions {
  excludes: string[];
  /** Absolute paths inside the root to leave out (the store when it sits inside the source). */
  excludeAbsolute?: string[];
  /** Hash only, or hash and install each file's bytes into the object store. */
  store?: ObjectStore;
  /** Trusted digests for files whose stat signature is unchanged. */
  statCache?: StatCache;
  pool?: FsPool;
}

export interface ScanResult {
  entries: Entry[];
  /** The stat cache to persist after this scan (racily-clean entries left out). */
  statCache: StatCache;
  filesHashed: number;
  filesTrusted: number;
  objectsInstalled: number;
  bytes: number;
}

interface FileRec {
  path: string;
  abs: string;
  size: number;
  exec: boolean;
  sig: string;
  ctimeNs: bigint;
}

/** Walk a tree under the v1 source contract. Symlinks are recorded, never followed. */
export async function walkTree(root: string, options: Pick<ScanOptions, 'excludes' | 'excludeAbsolute'>) {
  const extra = (options.excludeAbsolute ?? [])
    .map((abs) => relative(root, abs))
    .filter((r) => r && !r.startsWith('..') && !r.startsWith(sep))
    .map((r) => r.split(sep).join('/'));
  const excluded = createExcludeMatcher(options.excludes, extra);
  const dirs: string[] = [];
  const files: FileRec[] = [];
  const links: Array<{ path: string; abs: string }> = [];

  // Synchronous on purpose: 20,000 lstat calls through promises cost ~3x the CPU of lstatSync,
  // and nothing else can run until the walk is done anyway.
  function visit(absDir: string, relDir: string): void {
    let names: Buffer[];
    try {
      names = readdirSync(absDir, { encoding: 'buffer' });
    } catch (err) {
      if (relDir === '' && osErrorCode(err) === 'ENOENT') throw new PdbError('E_SOURCE_MISSING', `${root} does not exist`, { cause: err });
      throw err;
    }
    for (const raw of names) {
      let name: string;
      try {
        name = utf8.decode(raw);
      } catch {
        const shown = relDir ? `${relDir}/${raw.toString('latin1')}` : raw.toString('latin1');
        throw new PdbError('E_NON_UTF8_NAME', `the name "${shown}" is not valid UTF-8`, {
          path: shown,
          hint: 'Rename it or add its directory to "excludes" in pdb-env.json.',
        });
      }
      const rel = relDir ? `${relDir}/${name}` : name;
      if (excluded(rel, name)) continue;
      const abs = `${absDir}/${name}`;
      const st = lstatSync(abs, { bigint: true });
      if (st.isDirectory()) {
        dirs.push(rel);
        visit(abs, rel);
      } else if (st.isFile()) {
        files.push({ path: rel, abs, size: Number(st.size), exec: (st.mode & 0o111n) !== 0n, sig: statSig(st), ctimeNs: st.ctimeNs });
      } else if (st.isSymbolicLink()) {
        links.push({ path: rel, abs });
      } else {
        const what = st.isFIFO() ? 'a fifo' : st.isSocket() ? 'a socket' : 'a device';
        throw new PdbError('E_UNSUPPORTED_ENTRY', `"${rel}" is ${what}; the v1 contract holds only directories, files and symlinks`, {
          path: rel,
          hint: 'Remove it, or exclude it in pdb-env.json.',
        });
      }
    }
  }
  visit(root, '');
  return { dirs, files, links };
}

/** Scan a tree into contract entries; optionally install file bytes into the store in the same pass. */
export async function scanTree(root: string, options: ScanOptions): Promise<ScanResult> {
  const startNs = BigInt(Date.now()) * 1_000_000n;
  const { dirs, files, links } = await walkTree(root, options);
  const entries: Entry[] = dirs.map((path) => ({ path, kind: 'dir' as const }));
  const targets = links.map((l) => readlinkSync(l.abs, { encoding: 'buffer' }));
  links.forEach((l, i) => {
    let target: string;
    try {
      target = utf8.decode(targets[i]!);
    } catch {
      throw new PdbError('E_NON_UTF8_NAME', `the symlink "${l.path}" has a target that is not valid UTF-8`, { path: l.path });
    }
    entries.push({ path: l.path, kind: 'symlink', target });
  });

  const cache = options.statCache;
  const nextCache: StatCache = new Map();
  const toHash: FileRec[] = [];
  let trusted = 0;
  let bytes = 0;
  for (const f of files) {
    bytes += f.size;
    const hit = cache?.get(f.path);
    if (hit && hit.sig === f.sig && (!options.store || options.store.has(hit.digest))) {
      entries.push({ path: f.path, kind: 'file', digest: hit.digest, size: hit.size, exec: f.exec });
      nextCache.set(f.path, hit);
      trusted++;
    } else toHash.push(f);
  }
  const pool = options.pool ?? sharedFsPool();
  const store = options.store;
  // Large files first so one 256 MiB file does not finish last on a single worker.
  toHash.sort((a, b) => b.size - a.size);
  const results = await pool.map(
    toHash.map((f) => f.abs),
    (paths) => (store ? { op: 'install', paths, objectsDir: store.paths.objects, tmpDir: store.paths.tmp } : { op: 'hash', paths }),
  );
  // Two workers may race to install the same bytes (both renames are atomic and equal): count digests.
  const installedDigests = new Set<string>();
  toHash.forEach((f, i) => {
    const r = results[i]!;
    if (r.size !== f.size) {
      throw new PdbError('E_SOURCE_CHANGED', `"${f.path}" changed size while it was read (${f.size} -> ${r.size} bytes)`, {
        path: f.path,
        hint: 'Stop writers in the tree and try again.',
      });
    }
    if (r.installed) installedDigests.add(r.digest);
    const digest = `sha256:${r.digest}` as Digest;
    entries.push({ path: f.path, kind: 'file', digest, size: r.size, exec: f.exec });
    // Racy-clean rule (as git's index): a file changed within 2 s of the scan is re-read next time.
    if (f.ctimeNs < startNs - 2_000_000_000n) nextCache.set(f.path, { sig: f.sig, digest, size: r.size });
  });
  return {
    entries: sortEntries(entries),
    statCache: nextCache,
    filesHashed: toHash.length,
    filesTrusted: trusted,
    objectsInstalled: installedDigests.size,
    bytes,
  };
}

/** Stat cache persisted per source: `[path, sig, digest, size]` rows. */
export function serializeStatCache(cache: StatCache): string {
  return JSON.stringify({ version: 1, rows: [...cache].map(([p, v]) => [p, v.sig, v.digest, v.size]) });
}

export function parseStatCache(text: string): StatCache {
  try {
    const doc = JSON.parse(text) as { version: number; rows: Array<[string, string, Digest, number]> };
    if (doc.version !== 1) return new Map();
    return new Map(doc.rows.map(([p, sig, digest, size]) => [p, { sig, digest, size }]));
  } catch {
    return new Map();
  }
}
