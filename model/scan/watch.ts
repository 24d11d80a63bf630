// The daemon's watch of session roots (git's fsmonitor, in the daemon itself): inotify on every
// directory of a root, read at each checkpoint's request, so the walk lstats only the entries of
// directories something happened in; every other row's stat data is the index's (the walk's phase
// A takes it from there, native/walk.c). The kernel queues an event before the call that caused it
// returns, and a client sends its request after its own writes, so the read sees every change made
// before it. Vouched for is only what no event can miss:
// - a row whose index this daemon wrote itself, after a walk that began with the watch in place;
// - a file with a single link (one with others can change through a path outside every watch: a
//   pnpm store's hard links), so every file the last walk saw with other links is lstat'ed again;
// - nothing after a lost event (queue overflow), a directory moved (its watches' paths are stale),
//   the root moved, deleted, unmounted or replaced, a watch that could not be added, or an index
//   another process wrote: the next walk is whole, and the watch is set up again before it.
// A write through a shared mapping makes no event itself, but the mapping holds the file open for
// writing, and its last release (munmap, or the process's exit) queues IN_CLOSE_WRITE: a
// checkpoint after the writer is done sees it. docs/store.md has the rest of the argument; the
// randomized comparison with a full walk is test/sessions/lifecycle/checkpoint-watch.test.ts.
import { closeSync, lstatSync } from 'node:fs';
import { loadNativeAddon } from '../os/native.js';
import { KIND_DIR, rowPath } from './index-columns.js';
import type { RawScan } from './tree-walk.js';
import type { TreeIndex } from './tree-index.js';

interface WatchAddon {
  watchOpen(): number;
  watchAdd(fd: number, path: string): number;
  watchRead(fd: number): Buffer | number;
}

const IN_MOVED_FROM = 0x40;
const IN_MOVED_TO = 0x80;
const IN_DELETE_SELF = 0x400;
const IN_MOVE_SELF = 0x800;
const IN_UNMOUNT = 0x2000;
const IN_Q_OVERFLOW = 0x4000;
const IN_IGNORED = 0x8000;
const IN_ISDIR = 0x40000000;

interface RootWatch {
  fd: number;
  root: string;
  rootId: string;
  /** Watch descriptor to the directory's path relative to the root ('' for the root). */
  dirs: Map<number, string>;
  /** Path to the watch descriptor of the directory last watched there. */
  watched: Map<string, number>;
  /** Directories something happened in since the last walk. */
  dirty: Set<string>;
  /** Why the next walk is whole (null: it need not be). */
  broken: string | null;
  /** The index this daemon recorded last (keyOf), null before it recorded one. */
  key: string | null;
  /** Files the last walk saw with other links. */
  linked: Set<string>;
}

let addon: WatchAddon | null = null;
const watches = new Map<string, RootWatch>();
/** Walks vouched for by a watch, and walks of everything (tests read them: a watch that never vouches proves nothing). */
export const watchCounts = { vouched: 0, whole: 0 };

/** Watch the roots of the sessions this process checkpoints (the daemon turns it on; Linux with the native addon only). */
export function watchSessionRoots(): boolean {
  const a = loadNativeAddon().addon as Partial<WatchAddon> | null;
  if (
    process.platform !== 'linux' ||
    typeof a?.watchOpen !== 'function' ||
    typeof a.watchAdd !== 'function' ||
    typeof a.watchRead !== 'function'
  )
    return false;
  addon = a as WatchAddon;
  return true;
}

/** What names an index as recorded: its Snapshot, Changeset, the time its walk began and its rows. */
export function keyOf(h: { snapshot: string | null; changeset: string | null; recordedAtMs: number }, rows: number): string {
  return `${h.snapshot} ${h.changeset} ${h.recordedAtMs} ${rows}`;
}

const rootIdOf = (root: string): string | null => {
  try {
    const st = lstatSync(root, { bigint: true });
    return st.isDirectory() ? `${st.dev}:${st.ino}` : null;
  } catch {
    return null;
  }
};

function close(w: RootWatch): void {
  try {
    closeSync(w.fd);
  } catch {
    // gone already
  }
}

/** A new watch of every directory of `index` under `root` (null when one cannot be added: the limit of watches, say). */
function arm(a: WatchAddon, root: string, index: TreeIndex): RootWatch | null {
  const rootId = rootIdOf(root);
  const fd = a.watchOpen();
  if (fd < 0 || rootId === null) return null;
  const w: RootWatch = {
    fd,
    root,
    rootId,
    dirs: new Map(),
    watched: new Map(),
    dirty: new Set(),
    broken: null,
    key: null,
    linked: new Set(),
  };
  const c = index.cols;
  // A directory gone since the index (or no directory now) is not watched: the walk this one comes
  // before finds it gone, or finds it new and watchRecorded watches it.
  const ok = add(a, w, '') && c.kind.every((k, i) => k !== KIND_DIR || add(a, w, rowPath(c, i), true));
  if (!ok) close(w);
  return ok ? w : null;
}

const ENOENT = 2;
const ENOTDIR = 20;

/**
 * Watch the directory now at `rel`. inotify answers the watch descriptor it already has for that
 * directory, or a new one for a directory made since under the same name; the old one then stands
 * for a directory that is no longer there (see drain).
 */
function add(a: WatchAddon, w: RootWatch, rel: string, goneIsFine = false): boolean {
  const wd = a.watchAdd(w.fd, rel === '' ? w.root : `${w.root}/${rel}`);
  if (wd < 0) return goneIsFine && (wd === -ENOENT || wd === -ENOTDIR);
  const old = w.watched.get(rel);
  if (old !== undefined && old !== wd) w.dirs.delete(old);
  w.dirs.set(wd, rel);
  w.watched.set(rel, wd);
  return true;
}

/** Read every queued event into `w.dirty` (or `w.broken`). */
function drain(a: WatchAddon, w: RootWatch): void {
  const buf = a.watchRead(w.fd);
  if (typeof buf === 'number') {
    w.broken = `the watch could not be read (errno ${-buf})`;
    return;
  }
  for (let o = 0; o + 16 <= buf.length;) {
    const wd = buf.readInt32LE(o);
    const mask = buf.readUInt32LE(o + 4);
    const len = buf.readUInt32LE(o + 12);
    o += 16 + len;
    if (mask & IN_Q_OVERFLOW) w.broken = 'events were lost';
    const dir = w.dirs.get(wd);
    if (dir === undefined) continue;
    if (mask & IN_IGNORED) {
      // Its directory is gone or was unmounted: one of the same name made since is another, unwatched
      // while it was made, so what it holds is lstat'ed (dirty) until a walk watches it again.
      w.dirs.delete(wd);
      if (w.watched.get(dir) === wd) w.watched.delete(dir);
      w.dirty.add(dir);
      if (dir === '') w.broken = 'the root is gone';
      continue;
    }
    if (mask & (IN_MOVE_SELF | IN_UNMOUNT) || (mask & IN_DELETE_SELF && dir === ''))
      w.broken = `${dir || 'the root'} was moved or unmounted`;
    // A directory moved: the watches below it now have other paths.
    if (mask & IN_ISDIR && mask & (IN_MOVED_FROM | IN_MOVED_TO)) w.broken = `a directory in ${dir || 'the root'} was moved`;
    w.dirty.add(dir);
  }
}

/**
 * Before a checkpoint's walk of `root` against `index`: the rows whose stat data is as the index
 * recorded (1), or null: walk everything. The watch is set up (again) here when it must be, so
 * that it is in place before the walk it will vouch for the next time.
 */
export function vouchedRows(session: string, root: string, index: TreeIndex | null): Uint8Array | null {
  const a = addon;
  if (!a || !index) return null;
  let w = watches.get(session);
  if (w) drain(a, w);
  if (!w || w.broken !== null || w.root !== root || rootIdOf(root) !== w.rootId) {
    if (w) close(w);
    watches.delete(session);
    const fresh = arm(a, root, index);
    if (fresh) keep(session, fresh);
    watchCounts.whole++;
    return null;
  }
  keep(session, w);
  const dirty = w.dirty;
  w.dirty = new Set();
  const v = w.key !== null && w.key === keyOf(index.header, index.cols.n) ? vouch(index, dirty, w.linked) : null;
  // Until this checkpoint records its index (watchRecorded), the events read now are nowhere but in
  // this walk: a checkpoint that fails before it leaves the next one a walk of everything.
  w.key = null;
  if (v) watchCounts.vouched++;
  else watchCounts.whole++;
  return v;
}

/** At most this many roots are watched (a descriptor and a watch per directory each); the one checkpointed longest ago goes first. */
const MAX_ROOTS = 64;

function keep(session: string, w: RootWatch): void {
  watches.delete(session);
  watches.set(session, w);
  for (const [k, old] of watches) {
    if (watches.size <= MAX_ROOTS) break;
    close(old);
    watches.delete(k);
  }
}

/** Every row but those of the dirty directories (and they themselves) and the files with other links; null: a dirty directory the index does not hold. */
function vouch(index: TreeIndex, dirty: Set<string>, linked: Set<string>): Uint8Array | null {
  const c = index.cols;
  const vouch = new Uint8Array(c.n).fill(1);
  const dirtyRows = new Set<number>();
  for (const d of dirty) {
    if (d === '') dirtyRows.add(-1);
    else {
      const r = index.position(d);
      if (r === undefined) return null; // a directory the index does not hold: walk it all
      dirtyRows.add(r);
      vouch[r] = 0;
    }
  }
  if (dirtyRows.size) for (let i = 0; i < c.n; i++) if (dirtyRows.has(c.parent[i]!)) vouch[i] = 0;
  for (const p of linked) {
    const r = index.position(p);
    if (r !== undefined) vouch[r] = 0;
  }
  return vouch;
}

/**
 * After a checkpoint recorded the index `key` from a walk of the root: what it saw with other
 * links, and a watch on each directory it found new (dirty until the next walk reads it: it was
 * not watched while this one did).
 */
export function watchRecorded(session: string, key: string, raw: Pick<RawScan, 'touched' | 'linked'>): void {
  const a = addon;
  const w = a ? watches.get(session) : undefined;
  if (!a || !w) return;
  if (raw.linked === null || raw.linked === undefined) {
    w.broken = 'the walk did not say which files have other links';
    return;
  }
  // Every directory the walk saw changed is watched again, not only those without a watch: one
  // removed while something under it is still open (a descriptor on a file in it pins it) is not
  // gone to inotify, so no IN_IGNORED says so, and one made since under its name would be unwatched.
  for (const t of raw.touched)
    if (t.kind === KIND_DIR) {
      const had = w.watched.get(t.path);
      if (!add(a, w, t.path)) w.broken = `a watch could not be added to ${t.path}`;
      else if (had !== w.watched.get(t.path)) w.dirty.add(t.path);
    }
  w.linked = new Set(raw.linked);
  w.key = key;
}

/** Stop watching every root (tests; the daemon's exit closes them anyway). */
export function unwatchAll(): void {
  for (const w of watches.values()) close(w);
  watches.clear();
}
