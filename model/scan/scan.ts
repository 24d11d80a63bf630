import { lstatSync, readdirSync, readlinkSync, type Dirent } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import type { Digest } from '../canonical-json.js';
import { PdbError, osErrorCode } from '../errors.js';
import { sharedFsPool, type FsPool } from './fs-pool.js';
import type { ObjectStore } from '../store/object-store.js';
import { progressCounter, type ProgressFn } from '../progress.js';
import { assertContractPath, entryKey, sortEntries, type Entry } from '../snapshot.js';
import { isTrustable, racyWindowMs, statSignature, type TreeIndex } from './tree-index.js';

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
  // "policy" is the workspace policy for agents (model/workspace-policy.ts checks it); the scan ignores it.
  const unknownKeys = Object.keys(doc).filter((k) => k !== 'excludes' && k !== '$schema' && k !== 'policy');
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

/** A regular file as the walk saw it (lstat, number form). */
export interface WalkedFile {
  path: string;
  abs: string;
  size: number;
  exec: boolean;
  /** Stat signature (model/scan/tree-index.ts): inode, size, mtime, ctime, mode. */
  sig: string;
  mtimeMs: number;
  ctimeMs: number;
}

/** A tree as one stat walk saw it: what a scan hashes, and what a race check compares against. */
export interface Walk {
  dirs: string[];
  files: WalkedFile[];
  links: Array<{ path: string; target: string }>;
  /** When the walk started (ms since the epoch): anything written since may be racily clean. */
  startedAtMs: number;
}

/**
 * The names of a directory. Node decodes names as UTF-8 with replacement characters, so a name
 * holding U+FFFD is checked against the raw bytes: a name that is not UTF-8 is E_NON_UTF8_NAME.
 */
function readNames(absDir: string, relDir: string, root: string): Dirent[] {
  let dirents: Dirent[];
  try {
    dirents = readdirSync(absDir, { withFileTypes: true });
  } catch (err) {
    if (relDir === '' && osErrorCode(err) === 'ENOENT') throw new PdbError('E_SOURCE_MISSING', `${root} does not exist`, { cause: err });
    throw err;
  }
  if (dirents.some((d) => d.name.includes('\uFFFD'))) {
    for (const raw of readdirSync(absDir, { encoding: 'buffer' })) {
      try {
        utf8.decode(raw);
      } catch {
        const shown = relDir ? `${relDir}/${raw.toString('latin1')}` : raw.toString('latin1');
        throw new PdbError('E_NON_UTF8_NAME', `the name "${shown}" is not valid UTF-8`, {
          path: shown,
          hint: 'Rename it or add its directory to "excludes" in pdb-env.json.',
        });
      }
    }
  }
  return dirents;
}

function readTarget(abs: string, rel: string): string {
  const target = readlinkSync(abs);
  if (!target.includes('\uFFFD')) return target;
  try {
    return utf8.decode(readlinkSync(abs, { encoding: 'buffer' }));
  } catch {
    throw new PdbError('E_NON_UTF8_NAME', `the symlink "${rel}" has a target that is not valid UTF-8`, { path: rel });
  }
}

function unsupported(rel: string, what: string): PdbError {
  return new PdbError('E_UNSUPPORTED_ENTRY', `"${rel}" is ${what}; the v1 contract holds only directories, files and symlinks`, {
    path: rel,
    hint: 'Remove it, or exclude it in pdb-env.json.',
  });
}

/**
 * Walk a tree under the v1 source contract: directories by their type from readdir, every file
 * lstat'ed (its signature), every symlink read (never followed).
 */
export function walkTree(root: string, options: Pick<ScanOptions, 'excludes' | 'excludeAbsolute' | 'onProgress'>): Walk {
  const startedAtMs = Date.now();
  const extra = (options.excludeAbsolute ?? [])
    .map((abs) => relative(root, abs))
    .filter((r) => r && !r.startsWith('..') && !r.startsWith(sep))
    .map((r) => r.split(sep).join('/'));
  const excluded = createExcludeMatcher(options.excludes, extra);
  const walk: Walk = { dirs: [], files: [], links: [], startedAtMs };
  let seen = 0;
  const progress = options.onProgress;

  // Synchronous on purpose: 20,000 lstat calls through promises cost ~3x the CPU of lstatSync,
  // and nothing else can run until the walk is done anyway.
  function visit(absDir: string, relDir: string): void {
    for (const d of readNames(absDir, relDir, root)) {
      const name = d.name;
      const rel = relDir ? `${relDir}/${name}` : name;
      if (excluded(rel, name)) continue;
      if (progress && ++seen % 2048 === 0) progress({ phase: 'scan', files: seen, totalFiles: 0, bytes: 0, totalBytes: 0 });
      const abs = `${absDir}/${name}`;
      if (d.isDirectory()) {
        walk.dirs.push(rel);
        visit(abs, rel);
      } else if (d.isSymbolicLink()) walk.links.push({ path: rel, target: readTarget(abs, rel) });
      else if (d.isFile()) {
        const st = lstatSync(abs);
        if (!st.isFile()) throw new PdbError('E_SOURCE_CHANGED', `"${rel}" changed type while it was scanned`, { path: rel });
        walk.files.push({
          path: rel,
          abs,
          size: st.size,
          exec: (st.mode & 0o111) !== 0,
          sig: statSignature(st),
          mtimeMs: st.mtimeMs,
          ctimeMs: st.ctimeMs,
        });
      } else throw unsupported(rel, d.isFIFO() ? 'a fifo' : d.isSocket() ? 'a socket' : 'a device');
    }
  }
  visit(root, '');
  return walk;
}

export interface ScanOptions {
  excludes: string[];
  /** Absolute paths inside the root to leave out (the store when it sits inside the source). */
  excludeAbsolute?: string[];
  /** Hash only, or hash and install each file's bytes into the object store. */
  store?: ObjectStore;
  /** Trust the recorded digest of a file whose signature is the one this index recorded. */
  trust?: TreeIndex | null;
  /** Check that each trusted digest is in the store (its objects may have moved since the index was written). */
  checkObjects?: boolean;
  pool?: FsPool;
  onProgress?: ProgressFn;
}

export interface ScanResult {
  /** Sorted contract entries. */
  entries: Entry[];
  /** What the walk saw: signatures for the next tree index, and for a race check. */
  walk: Walk;
  filesHashed: number;
  filesTrusted: number;
  objectsInstalled: number;
  bytes: number;
  /** With `trust`: the paths whose entry differs from the index (added, deleted, changed), sorted. */
  changedPaths: string[] | null;
  /** With `trust`: the entry now at each changed path (null: deleted). */
  changedEntries: Map<string, Entry | null> | null;
}

/** Scan a tree into contract entries, hashing what the trusted index cannot vouch for; optionally install into the store. */
export async function scanTree(root: string, options: ScanOptions): Promise<ScanResult> {
  const walk = walkTree(root, options);
  const trust = options.trust ?? null;
  const seen = trust ? new Uint8Array(trust.count) : null;
  const changed = new Map<string, Entry | null>();
  const files: Array<Entry | null> = new Array(walk.files.length).fill(null);
  const toHash: number[] = [];
  let bytes = 0;
  const store = options.store;
  if (trust) {
    for (const path of walk.dirs) {
      const i = trust.position(path);
      if (i !== undefined) seen![i] = 1;
      if (i === undefined || trust.kind(i) !== 'd') changed.set(path, { path, kind: 'dir' });
    }
    for (const l of walk.links) {
      const i = trust.position(l.path);
      if (i !== undefined) seen![i] = 1;
      if (i === undefined || trust.kind(i) !== 'l' || trust.target(i) !== l.target)
        changed.set(l.path, { path: l.path, kind: 'symlink', target: l.target });
    }
  }
  walk.files.forEach((f, k) => {
    bytes += f.size;
    const i = trust?.position(f.path);
    if (i !== undefined) {
      seen![i] = 1;
      if (trust!.sigs[i] === f.sig && trust!.kind(i) === 'f') {
        const e = trust!.entry(i) as Extract<Entry, { kind: 'file' }>;
        if (!store || !options.checkObjects || store.has(e.digest)) return void (files[k] = e);
      }
    }
    toHash.push(k);
  });
  const hashed = await hashFiles(walk, toHash, options);
  for (const [k, e] of hashed.entries) {
    files[k] = e;
    if (!trust) continue;
    const i = trust.position(e.path);
    if (i === undefined || trust.kind(i) !== 'f' || entryKey(trust.entry(i)) !== entryKey(e)) changed.set(e.path, e);
  }
  if (trust) for (let i = 0; i < trust.count; i++) if (!seen![i]) changed.set(trust.paths[i]!, null);
  // Nothing differs from the index: its (sorted) entries are the result, built only if someone reads them.
  const same = trust !== null && changed.size === 0;
  let entries: Entry[] | null = null;
  const build = () =>
    (entries ??= same
      ? trust.entries
      : sortEntries([
          ...walk.dirs.map((path) => ({ path, kind: 'dir' as const })),
          ...walk.links.map((l) => ({ path: l.path, kind: 'symlink' as const, target: l.target })),
          ...(files as Entry[]),
        ]));
  return {
    get entries() {
      return build();
    },
    walk,
    filesHashed: toHash.length,
    filesTrusted: walk.files.length - toHash.length,
    objectsInstalled: hashed.installed,
    bytes,
    changedPaths: trust ? sortEntries([...changed.keys()].map((path) => ({ path }))).map((c) => c.path) : null,
    changedEntries: trust ? changed : null,
  };
}

/** Hash (or hash and install) the files at positions `which` of the walk; their entries by position. */
async function hashFiles(walk: Walk, which: number[], options: ScanOptions): Promise<{ entries: Map<number, Entry>; installed: number }> {
  const pool = options.pool ?? sharedFsPool();
  const store = options.store;
  // Large files first so one 256 MiB file does not finish last on a single worker.
  const order = [...which].sort((a, b) => walk.files[b]!.size - walk.files[a]!.size);
  const files = order.map((k) => walk.files[k]!);
  const count = progressCounter(
    'hash',
    files.length,
    files.reduce((n, f) => n + f.size, 0),
    options.onProgress,
  );
  const sizes = new Map(files.map((f) => [f.abs, f.size]));
  const results = await pool.map(
    files.map((f) => f.abs),
    (paths) => (store ? { op: 'install', paths, objectsDir: store.paths.objects, tmpDir: store.paths.tmp } : { op: 'hash', paths }),
    {
      onBatch: (paths) =>
        count(
          paths.length,
          paths.reduce((n, p) => n + sizes.get(p)!, 0),
        ),
    },
  );
  // Two workers may race to install the same bytes (both renames are atomic and equal): count digests.
  const installedDigests = new Set<string>();
  const entries = new Map<number, Entry>();
  files.forEach((f, j) => {
    const r = results[j]!;
    if (r.size !== f.size) {
      throw new PdbError('E_SOURCE_CHANGED', `"${f.path}" changed size while it was read (${f.size} -> ${r.size} bytes)`, {
        path: f.path,
        hint: 'Stop writers in the tree and try again.',
      });
    }
    if (r.installed) installedDigests.add(r.digest);
    entries.set(order[j]!, { path: f.path, kind: 'file', digest: `sha256:${r.digest}` as Digest, size: r.size, exec: f.exec });
  });
  return { entries, installed: installedDigests.size };
}

/** Signatures of the walked files that are safe to trust next time (git's racy-clean rule), by path. */
export function trustableSignatures(walk: Walk, recordedAtMs = walk.startedAtMs): Map<string, string> {
  const window = racyWindowMs(walk.files.map((f) => f.mtimeMs));
  const out = new Map<string, string>();
  for (const f of walk.files) if (isTrustable(f.mtimeMs, f.ctimeMs, recordedAtMs, window)) out.set(f.path, f.sig);
  return out;
}

/** sha256 digests of files (hash only, nothing installed), in the order given. */
export async function hashPaths(paths: string[], pool: FsPool = sharedFsPool()): Promise<Digest[]> {
  const results = await pool.map(paths, (batch) => ({ op: 'hash', paths: batch }));
  return results.map((r) => `sha256:${r!.digest}` as Digest);
}
