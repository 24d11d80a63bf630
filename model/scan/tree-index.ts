// A tree index: the entries of a tree in one known state, each file with the stat signature it had
// then, so the next scan of that tree re-hashes only what changed (git's index, for our contract).
//
// Trust rule (git's racy-clean rule, with ctime and inode included): a file whose signature
// (inode, size, mtime, ctime, mode) is the one recorded is taken to hold the recorded bytes, unless
// its mtime or ctime is not safely older than the moment the signature was recorded: a write in
// the same clock tick as the stat could leave every field unchanged. Such racily clean entries are
// stored without a signature and re-hashed next time. ctime cannot be set from user space (utimes
// sets it to now), so restoring size and mtime after a write still changes the signature.
//
// The file is a cache: written without fsync, and one that cannot be read (cut short by a crash,
// an older format) is ignored, which only costs a full hash.
import { readFileSync } from 'node:fs';
import type { Digest } from '../canonical-json.js';
import { osErrorCode } from '../errors.js';
import type { Entry, Snapshot } from '../snapshot.js';

export const TREE_INDEX_VERSION = 1 as const;

/**
 * How much older than the recording time a file's mtime and ctime must be to be trusted. Linux's
 * file timestamps come from a clock that advances once per tick (1-10 ms); 100 ms leaves a wide
 * margin. Filesystems that keep whole seconds (FAT: 2 s) get the coarse window.
 */
export const RACY_WINDOW_MS = 100;
export const COARSE_RACY_WINDOW_MS = 2_000;

export interface TreeIndexHeader {
  kind: 'pdb-env-tree-index';
  version: typeof TREE_INDEX_VERSION;
  /** The Snapshot this state is, when known (an import's digest; a checkpoint's result). */
  snapshot: Digest | null;
  /** The Changeset of the checkpoint that recorded this state (against `base`), when there was one. */
  changeset: Digest | null;
  /** How many changes that Changeset lists. */
  changes?: number;
  /** The `base` field of that Snapshot (null for an import or a materialized base). */
  base: Digest | null;
  excludes: string[];
  /** When the signatures were recorded (ms since the epoch): nothing else wrote into the tree before. */
  recordedAtMs: number;
  /** The store's object generation then: trusted digests are known to be in the store while it is unchanged. */
  generation: string;
  /** The source directory of an import (store-local, never in receipts); null otherwise. */
  source: string | null;
  /** Number of entries, checked on read. */
  count: number;
}

/**
 * A tree index in memory. Parsed lazily: a scan looks up paths and compares signatures, and needs
 * Entry objects only for what it puts into a new Snapshot (none when nothing changed), so they are
 * built on first use.
 */
export class TreeIndex {
  private built: Array<Entry | undefined>;
  private positions: Map<string, number> | null = null;

  constructor(
    readonly header: TreeIndexHeader,
    /** Kind letter per entry: 'd', 'l', 'f'. */
    private readonly kinds: string[],
    readonly paths: string[],
    /** Per entry: a symlink's target, a file's digest hex, '' for a dir. */
    private readonly values: string[],
    private readonly sizes: Float64Array,
    private readonly execs: Uint8Array,
    /** Per entry: a file's trusted signature, '' when it is not trusted (racily clean, a dir or a symlink). */
    readonly sigs: string[],
    entries?: Entry[],
  ) {
    this.built = entries ? [...entries] : new Array(paths.length);
  }

  static fromEntries(header: TreeIndexHeader, entries: Entry[], sigs: string[]): TreeIndex {
    const n = entries.length;
    const kinds = new Array<string>(n);
    const paths = new Array<string>(n);
    const values = new Array<string>(n);
    const sizes = new Float64Array(n);
    const execs = new Uint8Array(n);
    entries.forEach((e, i) => {
      paths[i] = e.path;
      kinds[i] = e.kind === 'dir' ? 'd' : e.kind === 'symlink' ? 'l' : 'f';
      values[i] = e.kind === 'symlink' ? e.target : e.kind === 'file' ? e.digest.slice(7) : '';
      if (e.kind === 'file') [sizes[i], execs[i]] = [e.size, e.exec ? 1 : 0];
    });
    return new TreeIndex(header, kinds, paths, values, sizes, execs, sigs, entries);
  }

  get count(): number {
    return this.paths.length;
  }

  kind(i: number): 'd' | 'l' | 'f' {
    return this.kinds[i] as 'd' | 'l' | 'f';
  }

  /** A symlink's target (only for kind 'l'). */
  target(i: number): string {
    return this.values[i]!;
  }

  entry(i: number): Entry {
    let e = this.built[i];
    if (e) return e;
    const path = this.paths[i]!;
    switch (this.kinds[i]) {
      case 'd':
        e = { path, kind: 'dir' };
        break;
      case 'l':
        e = { path, kind: 'symlink', target: this.values[i]! };
        break;
      default:
        e = { path, kind: 'file', digest: `sha256:${this.values[i]!}` as Digest, size: this.sizes[i]!, exec: this.execs[i] === 1 };
    }
    this.built[i] = e;
    return e;
  }

  /** Every entry, sorted (built once). */
  get entries(): Entry[] {
    for (let i = 0; i < this.paths.length; i++) if (!this.built[i]) this.entry(i);
    return this.built as Entry[];
  }

  /** Path -> position. */
  position(path: string): number | undefined {
    if (!this.positions) {
      this.positions = new Map();
      for (let i = 0; i < this.paths.length; i++) this.positions.set(this.paths[i]!, i);
    }
    return this.positions.get(path);
  }
}

/** The stat fields a signature holds, as lstat/fstat (number form) give them. */
export interface SigStat {
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  mode: number;
}

/** A file's stat signature: inode, size, mtime, ctime and mode. Not st_dev: a btrfs snapshot or an overlay mount has another. */
export function statSignature(st: SigStat): string {
  return `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.mode}`;
}

/** The racy window for a set of files: coarse when every mtime is a whole second (a filesystem without sub-second times). */
export function racyWindowMs(mtimesMs: Iterable<number>): number {
  let any = false;
  for (const m of mtimesMs) {
    any = true;
    if (m % 1000 !== 0) return RACY_WINDOW_MS;
  }
  return any ? COARSE_RACY_WINDOW_MS : RACY_WINDOW_MS;
}

/** Is a signature with these times safely older than `recordedAtMs` (not racily clean)? */
export function isTrustable(mtimeMs: number, ctimeMs: number, recordedAtMs: number, windowMs: number): boolean {
  return Math.max(mtimeMs, ctimeMs) < recordedAtMs - windowMs;
}

/** Times of a signature string, for the racy check: [mtimeMs, ctimeMs]. */
export function signatureTimes(sig: string): [number, number] {
  const parts = sig.split(':');
  return [Number(parts[2]), Number(parts[3])];
}

const SEP = '\0';

/**
 * Serialize: a JSON header line, then NUL-separated fields (paths and targets cannot hold NUL):
 * `d path`, `l path target`, `f path hex size exec sig`, and a closing `E`.
 */
export function serializeTreeIndex(index: TreeIndex): string {
  const parts: string[] = [];
  const { entries, sigs } = index;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    switch (e.kind) {
      case 'dir':
        parts.push('d', e.path);
        break;
      case 'symlink':
        parts.push('l', e.path, e.target);
        break;
      case 'file':
        parts.push('f', e.path, e.digest.slice(7), String(e.size), e.exec ? '1' : '0', sigs[i] ?? '');
        break;
      default: {
        const never: never = e;
        throw new Error(`unknown entry ${JSON.stringify(never)}`);
      }
    }
  }
  parts.push('E');
  return `${JSON.stringify({ ...index.header, count: entries.length })}\n${parts.join(SEP)}`;
}

/** Parse a tree index; null when it is not a whole, readable one (the caller then trusts nothing). */
export function parseTreeIndex(text: string): TreeIndex | null {
  const nl = text.indexOf('\n');
  if (nl < 0) return null;
  let header: TreeIndexHeader;
  try {
    header = JSON.parse(text.slice(0, nl)) as TreeIndexHeader;
  } catch {
    return null; // a cache cut short or of another format: ignored
  }
  if (header?.kind !== 'pdb-env-tree-index' || header.version !== TREE_INDEX_VERSION || !Array.isArray(header.excludes)) return null;
  const n = header.count;
  if (!Number.isInteger(n) || n < 0) return null;
  const f = text.slice(nl + 1).split(SEP);
  const kinds = new Array<string>(n);
  const paths = new Array<string>(n);
  const values = new Array<string>(n);
  const sizes = new Float64Array(n);
  const execs = new Uint8Array(n);
  const sigs = new Array<string>(n);
  let i = 0;
  let k = 0;
  for (;;) {
    const kind = f[i++];
    if (kind === 'E') break;
    if (k >= n) return null;
    kinds[k] = kind!;
    paths[k] = f[i++]!;
    if (kind === 'd') [values[k], sigs[k]] = ['', ''];
    else if (kind === 'l') [values[k], sigs[k]] = [f[i++]!, ''];
    else if (kind === 'f') {
      const hex = f[i]!;
      if (hex.length !== 64) return null;
      values[k] = hex;
      sizes[k] = Number(f[i + 1]);
      execs[k] = f[i + 2] === '1' ? 1 : 0;
      sigs[k] = f[i + 3]!;
      i += 4;
    } else return null;
    k++;
  }
  if (k !== n || i !== f.length) return null;
  return new TreeIndex(header, kinds, paths, values, sizes, execs, sigs);
}

/** Read a tree index file; null when it is absent or unreadable (never an error: it is a cache). */
export function readTreeIndex(file: string): TreeIndex | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT' || osErrorCode(err) === 'ENOTDIR') return null;
    throw err;
  }
  return parseTreeIndex(text);
}

/** A tree index of `entries` (sorted), with the signatures in `sigs` (by path; racily clean ones already left out). */
export function createTreeIndex(
  fields: Pick<TreeIndexHeader, 'snapshot' | 'changeset' | 'base' | 'excludes' | 'recordedAtMs' | 'generation' | 'source' | 'changes'>,
  entries: Entry[],
  sigs: ReadonlyMap<string, string>,
): TreeIndex {
  return TreeIndex.fromEntries(
    { kind: 'pdb-env-tree-index', version: TREE_INDEX_VERSION, ...fields, count: entries.length },
    entries,
    entries.map((e) => (e.kind === 'file' ? (sigs.get(e.path) ?? '') : '')),
  );
}

/** The signatures of `sigs` that are safe to trust once recorded at `recordedAtMs` (git's racy-clean rule). */
export function trustableSigs(sigs: ReadonlyMap<string, string>, recordedAtMs: number): Map<string, string> {
  const times = [...sigs.values()].map(signatureTimes);
  const window = racyWindowMs(times.map(([m]) => m));
  const out = new Map<string, string>();
  let i = 0;
  for (const [path, sig] of sigs) {
    const [m, c] = times[i++]!;
    if (isTrustable(m, c, recordedAtMs, window)) out.set(path, sig);
  }
  return out;
}

/**
 * The tree index of a tree just materialized from `snapshot` (a base, or a new session's root):
 * nothing but the writer has touched it, so its signatures hold from `recordedAtMs` on.
 */
export function materializedTreeIndex(
  snapshot: Pick<Snapshot, 'base' | 'excludes' | 'entries'>,
  digest: Digest,
  generation: string,
  sigs: ReadonlyMap<string, string>,
  recordedAtMs = Date.now(),
): TreeIndex {
  return createTreeIndex(
    { snapshot: digest, changeset: null, base: snapshot.base, excludes: snapshot.excludes, recordedAtMs, generation, source: null },
    snapshot.entries,
    trustableSigs(sigs, recordedAtMs),
  );
}
