// The scan of a tree under the v1 source contract: a stat walk against the tree's index
// (tree-walk.ts, or the native scanner), then the files the index cannot vouch for hashed (and
// installed), then what changed. The result carries the tree as index columns, from which the next
// index and the Snapshot's canonical bytes are made without an object per unchanged entry.
import { readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import type { Digest } from '../canonical-json.js';
import { PdbError, osErrorCode } from '../errors.js';
import { sharedFsPool, type FsPool } from './fs-pool.js';
import { boundHeapGrowth, collectAbove } from '../os/heap.js';
import type { ObjectStore } from '../store/object-store.js';
import { progressCounter, type ProgressFn } from '../progress.js';
import { assertContractPath, sortEntries, type Entry } from '../snapshot.js';
import { KIND_DIR, KIND_FILE, KIND_LINK, rowDigestHex, type IndexColumns } from './index-columns.js';
import { allWholeSeconds, nextColumns, restatedRows, type Content } from './index-update.js';
import { scanWalk as rawWalk } from './scanner.js';
import { installSnapshotFromColumns } from './snapshot-bytes.js';
import { TreeIndex, indexHeader, rootSig, type IndexFields } from './tree-index.js';
import type { RawEntry, RawScan } from './tree-walk.js';

/** Administrative roots that no scan ever includes. */
export const ADMIN_ROOTS = ['.git', '.pdb', '.pdb-host'] as const;

export { SOURCE_CONFIG } from '../paths.js';
import { SOURCE_CONFIG } from '../paths.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Read the optional `pdb-env.json` of a source root: `{ "excludes": ["node_modules", "dist"] }`. */
export async function readSourceConfig(root: string): Promise<{ excludes: string[]; backend?: string }> {
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
  // "policy" is the workspace policy for agents (model/workspace-policy.ts checks it) and "backend"
  // the backend `pdb-env hook claude-code` creates sessions with (sessions/hooks/claude-code.ts), "history"
  // how many checkpoints gc keeps per session (sessions/history/keep.ts); the scan ignores them.
  const unknownKeys = Object.keys(doc).filter((k) => !['excludes', '$schema', 'policy', 'backend', 'history'].includes(k));
  if (unknownKeys.length)
    throw new PdbError('E_CONFIG_INVALID', `${SOURCE_CONFIG} has unknown keys: ${unknownKeys.join(', ')}`, {
      path: SOURCE_CONFIG,
      hint: 'Known keys: "excludes", "policy", "backend", "history".',
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
  const backend = (doc as { backend?: unknown }).backend;
  if (backend !== undefined && (typeof backend !== 'string' || backend === ''))
    throw new PdbError('E_CONFIG_INVALID', `${SOURCE_CONFIG}: "backend" must be a backend name such as "reflink"`, { path: SOURCE_CONFIG });
  return { excludes: normalized.sort(), ...(backend === undefined ? {} : { backend }) };
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** What a scan leaves out: bare names at any depth, exact relative paths (with the admin roots and the store). */
export function exclusion(root: string, excludes: readonly string[], excludeAbsolute: readonly string[] = []) {
  const extra = excludeAbsolute
    .map((abs) => relative(root, abs))
    .filter((r) => r && !r.startsWith('..') && !r.startsWith(sep))
    .map((r) => r.split(sep).join('/'))
    .sort();
  const names = new Set(excludes.filter((x) => !x.includes('/')));
  const paths = new Set([...ADMIN_ROOTS, ...excludes.filter((x) => x.includes('/')), ...extra]);
  return { names, paths, extra };
}

/**
 * A stat walk's entries in contract order, made one at a time: nothing hashed (a file's digest is
 * "sha256:"), no absolute path, signature or list per kind (268,753 entries: the walkTree this replaced held 242 MB, this 83).
 */
export function* walkEntries(root: string, options: Pick<ScanOptions, 'excludes' | 'excludeAbsolute'>): Generator<Entry> {
  const ex = exclusion(root, options.excludes, options.excludeAbsolute);
  const raw = rawWalk({ root, excludeNames: ex.names, excludePaths: ex.paths, index: null, dirRule: false });
  for (const t of sortEntries(raw.touched)) {
    if (t.kind === KIND_DIR) yield { path: t.path, kind: 'dir' };
    else if (t.kind === KIND_LINK) yield { path: t.path, kind: 'symlink', target: t.target! };
    else yield { path: t.path, kind: 'file', digest: 'sha256:' as Digest, size: t.size, exec: (t.mode & 0o111) !== 0 };
  }
}

export interface ScanOptions {
  excludes: string[];
  /** Absolute paths inside the root to leave out (the store when it sits inside the source). */
  excludeAbsolute?: string[];
  /** Hash only, or hash and install each file's bytes into the object store. */
  store?: ObjectStore;
  /** Trust what this index recorded: a file's digest for its signature, a directory's names for its own. */
  trust?: TreeIndex | null;
  /** Check that each trusted digest is in the store (its objects may have moved since the index was written). */
  checkObjects?: boolean;
  /** Rows of `trust` whose stat data is vouched for as recorded (the daemon's watch, watch.ts). */
  vouch?: Uint8Array | null;
  pool?: FsPool;
  onProgress?: ProgressFn;
}

export interface ScanResult {
  /** Sorted contract entries (built when first read). */
  readonly entries: Entry[];
  /** The stat walk as it came back. */
  raw: RawScan;
  /** Relative paths left out besides the excludes (the store inside a source), sorted. */
  extraExcludes: string[];
  files: number;
  bytes: number;
  /** Files whose bytes a worker read and digested in this scan: counted from the digests that came back, not from what was asked. */
  filesHashed: number;
  filesTrusted: number;
  /** Whether the file at a relative path was among those hashed in this scan. */
  wasHashed(path: string): boolean;
  objectsInstalled: number;
  /** Rows of the index that no longer describe the tree as it is (touched or gone); 0: the index is exact. */
  stale: number;
  /** With `trust`: the paths whose entry differs from the index (added, deleted, changed), sorted. */
  changedPaths: string[] | null;
  /** With `trust`: the entry now at each changed path (null: deleted). */
  changedEntries: Map<string, Entry | null> | null;
  /** The tree as scanned, as index columns (built when first asked for). */
  columns(): IndexColumns;
  /** A tree index of the tree as scanned, recorded at the walk's start. */
  nextIndex(fields: Omit<IndexFields, 'recordedAtMs' | 'excludes'>): TreeIndex;
  /** The rows of `trust` that nextIndex changes when it only restates them (index-update.ts), else null. */
  restatedRows(): Uint32Array | null;
  /**
   * Make the columns, then let the walk's entries and the hashes go (an object per entry: tens of
   * MB for a large tree): afterwards `raw.touched` is empty and wasHashed and restatedRows fail; the counts,
   * columns, entries, nextIndex and installSnapshot stay.
   */
  release(): void;
  /** Install the scanned tree's Snapshot; `like` names the Snapshot it follows (whose chunks it shares, model/store/chunks.ts). */
  installSnapshot(store: ObjectStore, base: Digest | null, like?: Digest | null): Promise<Digest>;
}

/** Entries touched by a walk from which a scan bounds its heap's growth (model/os/heap.ts), and the heap it collects above. */
const LARGE_WALK = 50_000;
const LARGE_HEAP_BYTES = 64 * 1024 * 1024;

/** Scan a tree into contract entries, hashing what the trusted index cannot vouch for; optionally install into the store. */
export async function scanTree(root: string, options: ScanOptions): Promise<ScanResult> {
  const trust = options.trust ?? null;
  const ex = exclusion(root, options.excludes, options.excludeAbsolute);
  const h = trust?.header;
  const dirRule = !!h && sameList(h.excludes, options.excludes) && h.extraExcludes !== null && sameList(h.extraExcludes, ex.extra);
  const raw = rawWalk({ root, excludeNames: ex.names, excludePaths: ex.paths, index: trust, dirRule, vouch: trust ? options.vouch : null });
  options.onProgress?.({ phase: 'scan', files: raw.files, totalFiles: 0, bytes: 0, totalBytes: 0 });
  if (trust && options.store && options.checkObjects) recheckObjects(trust, raw, options.store);
  const toHash = raw.touched.filter((t) => t.kind === KIND_FILE);
  // A walk this large holds an object per entry while its files are hashed: V8 would let the
  // batches' garbage grow the heap to a multiple of that before collecting (first imports of
  // 268,753 entries peaked at 229,184-298,408 KiB from run to run; issue 38's limit is 300 MB).
  const large = raw.touched.length >= LARGE_WALK;
  if (large) boundHeapGrowth(30);
  let hashed: Hashed | null = await hashFiles(root, toHash, options);
  // The batches' garbage goes before the columns are made beside the walk.
  if (large) collectAbove(LARGE_HEAP_BYTES);
  const changed = trust ? changesOf(trust, raw, hashed) : null;
  let cols: IndexColumns | null = null;
  const coarse = (h?.coarse ?? true) && allWholeSeconds(raw);
  // Which rows of the index each new row is, unchanged: a Snapshot of them copies those rows' entries (snapshot-bytes.ts).
  const copied: { from: Int32Array | null } = { from: null };
  const columns = () => (cols ??= nextColumns(trust?.cols ?? null, raw, (t) => walked().get(t), coarse, copied));
  const walked = (): Hashed => {
    if (!hashed) throw new PdbError('E_INTERNAL', 'the walk of a scan was read after it was released');
    return hashed;
  };
  let entries: Entry[] | null = null;
  let hashedPaths: Set<string> | null = null;
  const same = trust !== null && changed!.size === 0;
  const stale = trust ? raw.touched.filter((t) => t.row >= 0).length + unseen(raw.status!).length : raw.touched.length;
  return {
    get entries() {
      return (entries ??= same ? trust.entries : new TreeIndex(indexHeader(emptyFields(), 0), columns()).entries);
    },
    raw,
    extraExcludes: ex.extra,
    files: raw.files,
    bytes: raw.bytes,
    filesHashed: hashed.count,
    filesTrusted: raw.files - hashed.count,
    wasHashed: (path) => (hashedPaths ??= new Set(walked().files.map((t) => t.path))).has(path),
    objectsInstalled: hashed.installed,
    stale,
    changedPaths: changed ? sortEntries([...changed.keys()].map((path) => ({ path }))).map((x) => x.path) : null,
    changedEntries: changed,
    columns,
    nextIndex: (fields) => {
      const c = columns();
      const header = indexHeader(
        {
          ...fields,
          excludes: options.excludes,
          extraExcludes: ex.extra,
          recordedAtMs: raw.startedAtMs,
          coarse,
          root: rootSig(raw.root, raw.startedAtMs, coarse),
        },
        c.n,
      );
      return new TreeIndex(header, c);
    },
    restatedRows: () => (walked(), restatedRows(trust?.cols ?? null, raw)),
    release: () => {
      columns();
      hashed = null;
      raw.touched = [];
    },
    installSnapshot: (store, base, like = null) => {
      const c = columns();
      // The rows copied are the index's: only the Snapshot recorded with that index is theirs.
      const from = like !== null && trust?.header.snapshot === like && copied.from ? { from: copied.from, rows: trust.cols.n } : null;
      return installSnapshotFromColumns(store, c, base, options.excludes, 'auto', like, from);
    },
  };
}

const emptyFields = (): IndexFields => ({
  snapshot: null,
  changeset: null,
  base: null,
  excludes: [],
  recordedAtMs: 0,
  generation: '',
  source: null,
});

/** Index rows the walk did not see (found by indexOf: a loop over every row is slow in code that runs once). */
function unseen(status: Uint8Array): number[] {
  const out: number[] = [];
  for (let i = status.indexOf(0); i >= 0; i = status.indexOf(0, i + 1)) out.push(i);
  return out;
}

/** After objects left the store: trusted files whose object is gone are hashed (and installed) again. */
function recheckObjects(trust: TreeIndex, raw: RawScan, store: ObjectStore): void {
  const c = trust.cols;
  for (let i = 0; i < c.n; i++) {
    if (raw.status![i] !== 1 || c.kind[i] !== KIND_FILE) continue;
    if (store.has(`sha256:${rowDigestHex(c, i)}` as Digest)) continue;
    raw.status![i] = 2;
    raw.touched.push({
      path: trust.path(i),
      row: i,
      kind: KIND_FILE,
      ino: c.ino[i]!,
      size: c.size[i]!,
      mtimeMs: c.mtime[i]!,
      ctimeMs: c.ctime[i]!,
      mode: c.mode[i]!,
      target: null,
    });
  }
}

/** The entry of a touched path as scanned. */
function entryOf(t: RawEntry, content: Hashed): Entry {
  if (t.kind === KIND_DIR) return { path: t.path, kind: 'dir' };
  if (t.kind === KIND_LINK) return { path: t.path, kind: 'symlink', target: t.target! };
  const got = content.get(t)!;
  return {
    path: t.path,
    kind: 'file',
    digest: `sha256:${got.digest.toString('hex')}` as Digest,
    size: got.size,
    exec: (t.mode & 0o111) !== 0,
  };
}

/** Paths whose entry is not the index's: touched entries with other content, kind or target, and rows not seen. */
function changesOf(trust: TreeIndex, raw: RawScan, content: Hashed): Map<string, Entry | null> {
  const c = trust.cols;
  const changed = new Map<string, Entry | null>();
  for (const t of raw.touched) {
    const i = t.row;
    let differs = i < 0 || c.kind[i] !== t.kind;
    if (!differs && t.kind === KIND_FILE) {
      const got = content.get(t)!;
      differs =
        got.size !== c.size[i] ||
        ((t.mode & 0o111) !== 0) !== ((c.flags[i]! & 1) !== 0) ||
        !got.digest.equals(c.digest.subarray(i * 32, i * 32 + 32));
    } else if (!differs && t.kind === KIND_LINK) differs = t.target !== trust.target(i);
    if (differs) changed.set(t.path, entryOf(t, content));
  }
  const status = raw.status!;
  for (const i of unseen(status)) changed.set(trust.path(i), null);
  return changed;
}

/**
 * The touched files as hashed: digests and sizes in columns by position in `files` (a first import
 * of 250,000 files held a Map, a Content and a Buffer per file, and every worker result, at once).
 */
export interface Hashed {
  /** The files hashed, largest first. */
  files: RawEntry[];
  count: number;
  installed: number;
  /** The content of a hashed file (a view into the columns), undefined for one not hashed. */
  get(t: RawEntry): Content | undefined;
}

/** Hash (or hash and install) the touched files; their content by entry. */
async function hashFiles(root: string, files: RawEntry[], options: ScanOptions): Promise<Hashed> {
  const pool = options.pool ?? sharedFsPool();
  const store = options.store;
  // Large files first so one 256 MiB file does not finish last on a single worker.
  const order = [...files].sort((a, b) => b.size - a.size);
  const count = progressCounter(
    'hash',
    order.length,
    order.reduce((n, f) => n + f.size, 0),
    options.onProgress,
  );
  const digests = Buffer.alloc(order.length * 32);
  const sizes = new Float64Array(order.length);
  // Two workers may race to install the same bytes (both renames are atomic and equal): count digests.
  const installed: number[] = [];
  let failed = -1;
  let failure: PdbError | null = null;
  // Each batch's paths are made when a worker takes it and its results kept as columns when it
  // answers: only the batches in flight exist as objects. The first failure in file order is thrown.
  await pool.each(
    order,
    (batch) => {
      const paths = batch.map((f) => `${root}/${f.path}`);
      return store ? { op: 'install', paths, objectsDir: store.paths.objects, tmpDir: store.paths.tmp } : { op: 'hash', paths };
    },
    (j, r) => {
      const f = order[j]!;
      const bad = resultError(f, r);
      if (bad) {
        if (failed < 0 || j < failed) [failed, failure] = [j, bad];
        return;
      }
      digests.write(r!.digest, j * 32, 32, 'hex');
      sizes[j] = r!.size;
      if (r!.installed) installed.push(j);
    },
    {
      onBatch: (batch) =>
        count(
          batch.length,
          batch.reduce((n, f) => n + f.size, 0),
        ),
    },
  );
  if (failure) throw failure;
  const slot = new Map<RawEntry, number>();
  order.forEach((f, j) => slot.set(f, j));
  return {
    files: order,
    count: order.length,
    installed: distinctDigests(digests, installed),
    get: (t) => {
      const j = slot.get(t);
      return j === undefined ? undefined : { digest: digests.subarray(j * 32, j * 32 + 32), size: sizes[j]! };
    },
  };
}

/**
 * How many distinct digests the slots `js` of `digests` (32 bytes each) hold: an open-addressing
 * table of slot numbers keyed by each digest's first bytes (a string per digest in a Set was about
 * 20 MB at 250,000 files).
 */
function distinctDigests(digests: Buffer, js: readonly number[]): number {
  const table = new Int32Array(2 ** Math.ceil(Math.log2(js.length * 2 + 2))).fill(-1);
  const mask = table.length - 1;
  let n = 0;
  for (const j of js) {
    for (let h = digests.readUInt32LE(j * 32) & mask; ; h = (h + 1) & mask) {
      const k = table[h]!;
      if (k < 0) {
        table[h] = j;
        n++;
        break;
      }
      if (digests.compare(digests, k * 32, k * 32 + 32, j * 32, j * 32 + 32) === 0) break;
    }
  }
  return n;
}

/** Why a worker's answer for `f` is no hash of it, or null when it is one. */
function resultError(f: RawEntry, r: { digest: string; size: number } | null): PdbError | null {
  if (r!.size !== f.size)
    return new PdbError('E_SOURCE_CHANGED', `"${f.path}" changed size while it was read (${f.size} -> ${r!.size} bytes)`, {
      path: f.path,
      hint: 'Stop writers in the tree and try again.',
    });
  // Only a whole sha256 counts as hashed (a worker that answered without reading leaves a file unhashed).
  if (typeof r!.digest !== 'string' || !/^[0-9a-f]{64}$/.test(r!.digest))
    return new PdbError('E_SOURCE_CHANGED', `"${f.path}" was not hashed (its worker returned no digest)`, {
      path: f.path,
      hint: 'This is a pdb-env bug: report it with the tree it happened on.',
    });
  return null;
}
