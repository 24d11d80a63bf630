// A checkpoint's walk from what a backend can say changed since the base (an overlay's upper
// directory): the rows of the tree index that are not lstat'ed again, as the daemon's watch
// (watch.ts) gives them. The argument (docs/store.md, "A walk that follows the change"):
// - the base is immutable, so a path with nothing recorded by the backend at it, whose parent has
//   nothing recorded either, is the base's entry at that path now and at any earlier time the index
//   was recorded (a path leaves the record only by being deleted, and then it is gone, which the
//   lstat of the child of its nearest recorded ancestor finds);
// - every changed path is lstat'ed, and so is every row whose parent is one (a recorded directory
//   may have lost, gained or hidden children: an opaque directory, a whiteout's parent), except,
//   below a recorded directory that merges the base's directory at the same path (a copy-up, not
//   opaque: what it lost is a whiteout and what it gained is in the record), a row whose index
//   entry is the base's (not among the index's changes since the base): such a child, not recorded
//   itself, is the base's entry now, and the index says that already. A row that is among those
//   changes is lstat'ed (it may have been the upper dir's and deleted since, taking its record with it);
// - below a directory whose contents come from elsewhere in the base (a renamed directory: its
//   target can change from one checkpoint to the next) nothing is vouched for.
import { KIND_DIR, childLinks, rowName } from './index-columns.js';
import type { TreeIndex } from './tree-index.js';

const [RECORDED, SUBTREE, MERGED, NOT_BASE] = [1, 2, 4, 8];

/** What a scan leaves out (scan.ts's exclusion): bare names at any depth, exact relative paths. */
export interface LeftOut {
  names: ReadonlySet<string>;
  paths: ReadonlySet<string>;
}

/** What a backend says can differ from the base, or why it cannot say. */
export type ChangedPaths =
  | {
      /** Relative paths with something recorded at them (the root, '', need not be listed: it always counts). */
      paths: string[];
      /** Directories whose whole subtree is walked (contents from elsewhere in the base). */
      subtrees: string[];
      /**
       * Recorded directories that merge the base's directory at the same path (an overlay's
       * copied-up directory, neither opaque nor renamed): their children not recorded are the base's.
       */
      merged?: string[];
      reason: null;
    }
  | { paths: null; subtrees: null; merged?: null; reason: string };

/**
 * The rows of `index` whose stat data is the recorded one (1), given what can have changed; null:
 * the root's whole subtree is to be walked. Rows come parent first (tree-index.ts), so one pass
 * over the parent column carries "below a subtree" down.
 *
 * A changed path is found by its parent's row and its name among that row's children (the
 * children of a directory looked up are read once, into a map), and a path under one not in the
 * index is not looked for: 20,000 new files cost a map lookup each, not a binary search of the
 * index that builds a row's path at every probe (which made an overlay checkpoint of a turn that
 * wrote many files slower than a full-copy one).
 */
export function vouchedByChanged(
  index: TreeIndex,
  changed: Exclude<ChangedPaths, { paths: null }>,
  /** The paths whose index entry is not the base's (its Changeset's); null: unknown, and `merged` is not used. */
  sinceBase: Iterable<string> | null = null,
): Uint8Array | null {
  const c = index.cols;
  if (changed.subtrees.includes('')) return null;
  const links = childLinks(c);
  const kids = new Map<number, Map<string, number>>(); // row (c.n: the top level) -> name -> row
  const childrenOf = (r: number): Map<string, number> => {
    let m = kids.get(r);
    if (!m) {
      m = new Map();
      for (let k = links.firstChild[r]!; k >= 0; k = links.nextSibling[k]!) m.set(rowName(c, k), k);
      kids.set(r, m);
    }
    return m;
  };
  const rows = new Map<string, number>(); // a path looked up -> its row, -1: not in the index
  const rowOf = (path: string): number => {
    let r = rows.get(path);
    if (r !== undefined) return r;
    const slash = path.lastIndexOf('/');
    const parent = slash < 0 ? c.n : rowOf(path.slice(0, slash));
    r = parent < 0 || (parent < c.n && c.kind[parent] !== KIND_DIR) ? -1 : (childrenOf(parent).get(path.slice(slash + 1)) ?? -1);
    rows.set(path, r);
    return r;
  };
  // 1: recorded at; 2: a subtree walked whole; 4: a merged directory; 8: not the base's entry in the index
  const marked = new Uint8Array(c.n);
  const mark = (paths: Iterable<string>, bit: number) => {
    for (const p of paths) {
      const r = p === '' ? -1 : rowOf(p);
      if (r >= 0) marked[r] |= bit;
    }
  };
  mark(changed.paths, RECORDED);
  mark(changed.subtrees, SUBTREE);
  if (sinceBase) {
    mark(changed.merged ?? [], MERGED);
    mark(sinceBase, NOT_BASE);
  }
  const vouch = new Uint8Array(c.n);
  for (let i = 0; i < c.n; i++) {
    const p = c.parent[i]!;
    if (p >= 0 && marked[p]! & SUBTREE) marked[i] |= SUBTREE;
    const m = marked[i]!;
    // A row of the root has a recorded parent: the root is the backend's own (an overlay's upper dir).
    // A row without recorded stat data (mode 0: a base's index may hold none for a symlink) is lstat'ed.
    if (p < 0 || m & (RECORDED | SUBTREE) || c.mode[i] === 0) continue;
    const mp = marked[p]!;
    vouch[i] = (mp & RECORDED) === 0 || (mp & MERGED && (m & NOT_BASE) === 0) ? 1 : 0;
  }
  return vouch;
}
