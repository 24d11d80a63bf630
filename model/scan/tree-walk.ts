// The stat walk of a tree against its tree index, in JavaScript: the fallback when the native
// scanner (native/walk.c) is not built, and the oracle it is tested against. Both follow one
// algorithm and give the same RawScan:
//
// - every entry is lstat'ed once (the root too); its kind comes from that lstat;
// - a directory is read (readdir) unless it keeps its recorded names by the directory rule
//   (tree-index.ts): its row is trusted, its (inode, mtime, ctime) are the recorded ones, and the
//   scan leaves out exactly what the index's did;
// - an entry whose row is trusted and whose stat data is the recorded one is "same"; every other
//   entry the walk sees is "touched" and listed with its stat data (and a symlink's target).
//
// What the walk does not see of the index (status 0) is gone. The walk hashes nothing.
import { lstatSync, readdirSync, readlinkSync, type Stats } from 'node:fs';
import { PdbError, osErrorCode } from '../errors.js';
import {
  F_TRUSTED,
  KIND_DIR,
  KIND_FILE,
  KIND_LINK,
  childLinks,
  rowName,
  type ChildLinks,
  type IndexColumns,
  type KindCode,
  type RowStat,
} from './index-columns.js';
import type { TreeIndex } from './tree-index.js';

/** An entry the walk saw that the index does not vouch for: new, changed, retyped or untrusted. */
export interface RawEntry extends RowStat {
  path: string;
  /** The index row at this path (of any kind), -1 when there is none. */
  row: number;
  kind: KindCode;
  /** A symlink's target; null for the other kinds. */
  target: string | null;
}

export interface RawScan {
  scanner: 'native' | 'js';
  /** When the walk started (ms since the epoch): anything written since may be racily clean. */
  startedAtMs: number;
  /** Per index row: 0 not seen (gone), 1 the same as recorded, 2 seen but touched. Null without an index. */
  status: Uint8Array | null;
  /** Every touched entry (without an index: every entry), in no particular order. */
  touched: RawEntry[];
  /** The root directory's stat. */
  root: RowStat;
  /** Entries walked, regular files among them and their bytes, directories read. */
  entries: number;
  files: number;
  bytes: number;
  dirsRead: number;
  /** Entries seen that are no directory and have other links (the native scanner's; undefined from the JavaScript walk). */
  linked?: string[];
}

export interface WalkInput {
  root: string;
  /** Names left out at any depth (excludes without a '/'). */
  excludeNames: ReadonlySet<string>;
  /** Relative paths left out (excludes with a '/', the store inside a source, the admin roots). */
  excludePaths: ReadonlySet<string>;
  index: TreeIndex | null;
  /** Directories may keep their recorded names (the index left out exactly what this walk does). */
  dirRule: boolean;
  /** Index rows whose stat data is vouched for as recorded (the daemon's watch, watch.ts): not lstat'ed. The JavaScript walk lstats them anyway. */
  vouch?: Uint8Array | null;
}

const S_IFMT = 0o170000;
const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;
const S_IFLNK = 0o120000;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The kind of a stat mode, or the typed error for what the v1 contract does not hold. */
export function kindOf(mode: number, rel: string): KindCode {
  switch (mode & S_IFMT) {
    case S_IFDIR:
      return KIND_DIR;
    case S_IFREG:
      return KIND_FILE;
    case S_IFLNK:
      return KIND_LINK;
    default: {
      const t = mode & S_IFMT;
      const what = t === 0o010000 ? 'a fifo' : t === 0o140000 ? 'a socket' : 'a device';
      throw new PdbError('E_UNSUPPORTED_ENTRY', `"${rel}" is ${what}; the v1 contract holds only directories, files and symlinks`, {
        path: rel,
        hint: 'Remove it, or exclude it in pdb-env.json.',
      });
    }
  }
}

export function vanished(rel: string, cause?: unknown): PdbError {
  return new PdbError('E_SOURCE_CHANGED', `"${rel}" vanished while the tree was scanned`, {
    path: rel,
    cause,
    hint: 'Stop writers in the tree and try again.',
  });
}

export function nonUtf8(shown: string, what: 'name' | 'target'): PdbError {
  return what === 'name'
    ? new PdbError('E_NON_UTF8_NAME', `the name "${shown}" is not valid UTF-8`, {
        path: shown,
        hint: 'Rename it or add its directory to "excludes" in pdb-env.json.',
      })
    : new PdbError('E_NON_UTF8_NAME', `the symlink "${shown}" has a target that is not valid UTF-8`, { path: shown });
}

/** Names of a directory; Node decodes names with replacement characters, so one holding U+FFFD is checked against the raw bytes. */
function readNames(abs: string, rel: string): string[] {
  let names: string[];
  try {
    names = readdirSync(abs);
  } catch (err) {
    if (rel && (osErrorCode(err) === 'ENOENT' || osErrorCode(err) === 'ENOTDIR')) throw vanished(rel, err);
    throw err;
  }
  if (names.some((d) => d.includes('\uFFFD'))) {
    for (const raw of readdirSync(abs, { encoding: 'buffer' })) {
      try {
        utf8.decode(raw);
      } catch {
        throw nonUtf8(rel ? `${rel}/${raw.toString('latin1')}` : raw.toString('latin1'), 'name');
      }
    }
  }
  return names;
}

function readTarget(abs: string, rel: string): string {
  const target = readlinkSync(abs);
  if (!target.includes('\uFFFD')) return target;
  try {
    return utf8.decode(readlinkSync(abs, { encoding: 'buffer' }));
  } catch {
    throw nonUtf8(rel, 'target');
  }
}

function lstatOrVanished(abs: string, rel: string): Stats {
  try {
    return lstatSync(abs);
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') throw vanished(rel, err);
    throw err;
  }
}

/**
 * The recorded children of a kept directory (row `list`), each lstat'ed; null when a recorded
 * name is gone though the directory's stat data is unchanged: its recorded list was never true (a
 * backend that wrote another tree than it recorded), so the caller reads the directory instead.
 */
function keptChildren(c: IndexColumns, links: ChildLinks, abs: string, list: number): Array<[number, string, Stats]> | null {
  const kept: Array<[number, string, Stats]> = [];
  for (let k = links.firstChild[list]!; k >= 0; k = links.nextSibling[k]!) {
    const name = rowName(c, k);
    const st = lstatSync(`${abs}/${name}`, { throwIfNoEntry: false });
    if (!st) return null;
    kept.push([k, name, st]);
  }
  return kept;
}

/** Walk `input.root` against its index (see the top of this file). */
export function walkWithIndex(input: WalkInput): RawScan {
  const startedAtMs = Date.now();
  const index = input.index;
  const c = index?.cols ?? null;
  const links = c ? childLinks(c) : null;
  const status = c ? new Uint8Array(c.n) : null;
  const out: RawScan = { scanner: 'js', startedAtMs, status, touched: [], root: null!, entries: 0, files: 0, bytes: 0, dirsRead: 0 };
  let rootSt: Stats;
  try {
    rootSt = lstatSync(input.root);
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') throw new PdbError('E_SOURCE_MISSING', `${input.root} does not exist`, { cause: err });
    throw err;
  }
  if (!rootSt.isDirectory()) throw new PdbError('E_SOURCE_MISSING', `${input.root} is not a directory`);
  out.root = { ino: rootSt.ino, size: rootSt.size, mtimeMs: rootSt.mtimeMs, ctimeMs: rootSt.ctimeMs, mode: rootSt.mode };
  const r = index?.header.root;
  const rootKept = input.dirRule && !!r?.trusted && r.ino === rootSt.ino && r.mtimeMs === rootSt.mtimeMs && r.ctimeMs === rootSt.ctimeMs;

  const entry = (abs: string, rel: string, row: number, st: Stats) => {
    const kind = kindOf(st.mode, rel);
    out.entries++;
    if (kind === KIND_FILE) {
      out.files++;
      out.bytes += st.size;
    }
    const known = row >= 0 && c!.kind[row] === kind;
    let same =
      known && (c!.flags[row]! & F_TRUSTED) !== 0 && c!.ino[row] === st.ino && c!.mtime[row] === st.mtimeMs && c!.ctime[row] === st.ctimeMs;
    if (same && kind !== KIND_DIR) same = c!.size[row] === st.size && c!.mode[row] === st.mode;
    if (row >= 0) status![row] = same ? 1 : 2;
    if (!same) {
      const target = kind === KIND_LINK ? readTarget(abs, rel) : null;
      out.touched.push({
        path: rel,
        row,
        kind,
        ino: st.ino,
        size: st.size,
        mtimeMs: st.mtimeMs,
        ctimeMs: st.ctimeMs,
        mode: st.mode,
        target,
      });
    }
    if (kind === KIND_DIR) visit(abs, rel, known ? row : -1, same && input.dirRule);
  };

  // Synchronous on purpose: 20,000 lstat calls through promises cost ~3x the CPU of lstatSync,
  // and nothing else can run until the walk is done anyway.
  // `list`: whose recorded children this directory has (its row, c.n for the root, -1: none).
  function visit(abs: string, rel: string, list: number, keepNames: boolean): void {
    const kept = keepNames && list >= 0 ? keptChildren(c!, links!, abs, list) : null;
    if (kept) {
      for (const [k, name, st] of kept) entry(`${abs}/${name}`, rel ? `${rel}/${name}` : name, k, st);
      return;
    }
    out.dirsRead++;
    let recorded: Map<string, number> | null = null;
    if (list >= 0) {
      recorded = new Map();
      for (let k = links!.firstChild[list]!; k >= 0; k = links!.nextSibling[k]!) recorded.set(rowName(c!, k), k);
    }
    for (const name of readNames(abs, rel)) {
      const childRel = rel ? `${rel}/${name}` : name;
      if (input.excludeNames.has(name) || input.excludePaths.has(childRel)) continue;
      entry(`${abs}/${name}`, childRel, recorded?.get(name) ?? -1, lstatOrVanished(`${abs}/${name}`, childRel));
    }
  }
  visit(input.root, '', c ? c.n : -1, rootKept);
  return out;
}
