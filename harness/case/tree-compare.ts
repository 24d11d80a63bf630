// Tree comparisons for the checks, in one merge pass over two entry lists sorted as the contract
// sorts them (by the UTF-8 bytes of the path): no map of every path is built. Either side may be a
// stream (a kept tree read back in pieces, a scan's columns turned into entries one row at a time),
// so comparing two 250,000-entry trees holds neither whole: only the current entry of each side and
// the first differing paths.
import type { IndexColumns } from '../../model/scan/index-columns.js';
import { KIND_DIR, rowEntry } from '../../model/scan/index-columns.js';
import { rowPathIn } from '../../model/scan/materialized-index.js';
import { comparePaths, sortEntries, type Entry, type MismatchCounts } from '../../model/snapshot.js';

export interface TreeDifference {
  /** Entries that differ (missing, extra, or changed). */
  mismatches: number;
  counts: MismatchCounts;
  /** The first differing relative paths, in contract order. */
  paths: string[];
}

/** Whether a list is in contract order (checked in one pass, so an unsorted list is sorted once, never assumed). */
function isSorted(entries: readonly Entry[]): boolean {
  for (let i = 1; i < entries.length; i++) if (comparePaths(entries[i - 1]!.path, entries[i]!.path) > 0) return false;
  return true;
}

/** How `actual` differs from `expected` at one path present in both; null when it does not. */
function changeKind(expected: Entry, actual: Entry, contents: boolean): keyof MismatchCounts | null {
  if (expected.kind !== actual.kind) return 'kind';
  if (expected.kind === 'file' && actual.kind === 'file') {
    if ((contents && expected.digest !== actual.digest) || expected.size !== actual.size) return 'content';
    return expected.exec === actual.exec ? null : 'mode';
  }
  if (expected.kind === 'symlink' && actual.kind === 'symlink') return expected.target === actual.target ? null : 'symlink';
  return null;
}

/**
 * A scan's rows as entries, one at a time in row order (contract order): only the directories'
 * paths are kept (a child's path is its parent's and its name), never an array of every entry.
 */
export function* columnEntries(c: IndexColumns): Generator<Entry> {
  const dirs = new Array<string | undefined>(c.n);
  for (let i = 0; i < c.n; i++) {
    const path = rowPathIn(c, dirs, i);
    if (c.kind[i] === KIND_DIR) dirs[i] = path;
    yield rowEntry(c, i, path);
  }
}

/**
 * The entries of `tree` in contract order: an array is checked in one pass and sorted once when it
 * is not; any other iterable is a stream that must already be in order, and one out of order is a
 * fault of its writer (thrown, never compared as if sorted).
 */
function* inOrder(tree: Iterable<Entry>): Generator<Entry> {
  if (Array.isArray(tree)) {
    yield* isSorted(tree) ? tree : sortEntries([...tree]);
    return;
  }
  let last: string | null = null;
  for (const e of tree) {
    if (last !== null && comparePaths(last, e.path) >= 0)
      throw new Error(`a streamed tree is not in contract order: "${e.path}" after "${last}"`);
    last = e.path;
    yield e;
  }
}

/**
 * Compare two trees entry by entry: counts by kind, and the first `maxPaths` differing paths. With
 * `contents: false` files are compared by size and exec bit only (a tree walked without hashing).
 * Each side is an array (sorted here if it is not) or a stream in contract order, read once.
 */
export function compareTrees(
  expected: Iterable<Entry>,
  actual: Iterable<Entry>,
  maxPaths: number,
  options: { contents?: boolean } = {},
): TreeDifference {
  const contents = options.contents ?? true;
  const a = inOrder(expected);
  const b = inOrder(actual);
  const counts: MismatchCounts = { content: 0, mode: 0, symlink: 0, missing: 0, extra: 0, kind: 0 };
  const paths: string[] = [];
  const note = (kind: keyof MismatchCounts, path: string) => {
    counts[kind]++;
    if (paths.length < maxPaths) paths.push(path);
  };
  let x = a.next();
  let y = b.next();
  while (!x.done || !y.done) {
    const order = x.done ? 1 : y.done ? -1 : comparePaths(x.value.path, y.value.path);
    if (order < 0) {
      note('missing', x.value!.path);
      x = a.next();
    } else if (order > 0) {
      note('extra', y.value!.path);
      y = b.next();
    } else {
      const kind = changeKind(x.value!, y.value!, contents);
      if (kind) note(kind, x.value!.path);
      x = a.next();
      y = b.next();
    }
  }
  const mismatches = counts.content + counts.mode + counts.symlink + counts.missing + counts.extra + counts.kind;
  return { mismatches, counts, paths };
}

/** Whether two trees are equal under the contract (one pass that makes nothing per entry, stops at the first difference). */
export function sameTree(a: readonly Entry[], b: readonly Entry[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.path !== y.path || changeKind(x, y, true) !== null) return compareTrees(a, b, 0).mismatches === 0;
  }
  return true;
}

/**
 * `entries`, or `reference` itself when the two are equal: a scan that found the base unchanged
 * keeps no copy of its own, so the base's manifest is held once however many locations repeat it.
 */
export function internTree(entries: Entry[], reference: Entry[]): Entry[] {
  return sameTree(entries, reference) ? reference : entries;
}
