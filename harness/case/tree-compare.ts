// Tree comparisons for the checks, in one merge pass over two entry lists sorted as the contract
// sorts them (by the UTF-8 bytes of the path): no map of every path is built, so comparing two
// 50,000-entry trees holds nothing beyond the two lists and the first differing paths.
import { comparePaths, entryKey, sortEntries, type Entry, type MismatchCounts } from '../../model/snapshot.js';

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

function inOrder(entries: readonly Entry[]): readonly Entry[] {
  return isSorted(entries) ? entries : sortEntries([...entries]);
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
 * Compare two trees entry by entry: counts by kind, and the first `maxPaths` differing paths. With
 * `contents: false` files are compared by size and exec bit only (a tree walked without hashing).
 */
export function compareTrees(
  expected: readonly Entry[],
  actual: readonly Entry[],
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
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const order = i >= a.length ? 1 : j >= b.length ? -1 : comparePaths(a[i]!.path, b[j]!.path);
    if (order < 0) note('missing', a[i++]!.path);
    else if (order > 0) note('extra', b[j++]!.path);
    else {
      const kind = changeKind(a[i]!, b[j]!, contents);
      if (kind) note(kind, a[i]!.path);
      i++;
      j++;
    }
  }
  const mismatches = counts.content + counts.mode + counts.symlink + counts.missing + counts.extra + counts.kind;
  return { mismatches, counts, paths };
}

/** Whether two trees are equal under the contract (one pass, stops at the first difference). */
export function sameTree(a: readonly Entry[], b: readonly Entry[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.path !== y.path || entryKey(x) !== entryKey(y)) return compareTrees(a, b, 0).mismatches === 0;
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
