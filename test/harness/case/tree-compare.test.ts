// The harness's one-pass tree comparison must say exactly what the model's diff says (counts by kind
// and the first paths in contract order) for any two trees, including paths whose UTF-8 order
// differs from JavaScript's string order; and equal trees are interned, never held twice.
import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Digest } from '../../../model/canonical-json.js';
import { countMismatches, diffEntries, sortEntries, type Entry } from '../../../model/snapshot.js';
import { columnEntries, compareTrees, internTree, sameTree } from '../../../harness/case/tree-compare.js';
import { scanTree } from '../../../model/scan/scan.js';
import { tempDir, writeTree } from '../../helpers/index.js';

const d = (n: number) => `sha256:${String(n).padStart(64, '0')}` as Digest;
// "\u{1F600}" sorts after "\uFFFD" in UTF-8 but before it in UTF-16: contract order is by bytes.
const NAMES = ['a', 'a/b', 'a/b/c', 'b', 'B', 'a-b', '\uFFFD', '\u{1F600}', 'z/\u00e9'];
const entryArb: fc.Arbitrary<Entry> = fc.oneof(
  fc.record({ path: fc.constantFrom(...NAMES), kind: fc.constant('dir' as const) }),
  fc.record({
    path: fc.constantFrom(...NAMES),
    kind: fc.constant('file' as const),
    digest: fc.integer({ min: 0, max: 2 }).map(d),
    size: fc.integer({ min: 0, max: 2 }),
    exec: fc.boolean(),
  }),
  fc.record({ path: fc.constantFrom(...NAMES), kind: fc.constant('symlink' as const), target: fc.constantFrom('x', 'y') }),
);
const treeArb = fc.uniqueArray(entryArb, { selector: (e) => e.path }).map((es) => sortEntries(es));

test('compareTrees agrees with the model diff on counts and on the first paths, sorted or not', () => {
  fc.assert(
    fc.property(treeArb, treeArb, fc.boolean(), (a, b, shuffle) => {
      const diff = diffEntries(a, b);
      const got = compareTrees(shuffle ? [...a].reverse() : a, b, 3);
      assert.equal(got.counts, countMismatches(a, b));
      assert.is(got.mismatches, diff.length);
      assert.equal(
        got.paths,
        diff.slice(0, 3).map((c) => c.path),
      );
      assert.is(sameTree(a, b), diff.length === 0);
    }),
    { numRuns: 300 },
  );
});

test('without contents, files are compared by size and exec bit only', () => {
  const file = (digest: number, size: number, exec = false): Entry => ({ path: 'f', kind: 'file', digest: d(digest), size, exec });
  assert.is(compareTrees([file(1, 1)], [file(2, 1)], 5, { contents: false }).mismatches, 0);
  assert.is(compareTrees([file(1, 1)], [file(2, 1)], 5).counts.content, 1);
  assert.is(compareTrees([file(1, 1)], [file(1, 2)], 5, { contents: false }).counts.content, 1);
  assert.is(compareTrees([file(1, 1)], [file(1, 1, true)], 5, { contents: false }).counts.mode, 1);
});

test("a scan's columns stream as the same entries its entry list holds, in contract order", async () => {
  const t = tempDir();
  try {
    writeTree(t.dir, {
      a: { 'b.js': 'x', 'c d': { e: 'y', l: { link: '../b.js' } } },
      'a-b': { f: { content: 'z', exec: true } },
      '\u00e9': { g: '' },
      '\u{1F600}': 'face',
      z: {},
    });
    const scan = await scanTree(t.dir, { excludes: [] });
    const streamed = [...columnEntries(scan.columns())];
    assert.equal(streamed, scan.entries);
    assert.equal(streamed, sortEntries([...streamed]));
    assert.is(compareTrees(scan.entries, columnEntries(scan.columns()), 5).mismatches, 0);
  } finally {
    t.cleanup();
  }
});

test('a stream out of contract order is a fault of its writer: thrown, never compared as if sorted', () => {
  function* unsorted(): Generator<Entry> {
    yield { path: 'b', kind: 'dir' };
    yield { path: 'a', kind: 'dir' };
  }
  assert.throws(() => compareTrees([], unsorted(), 5), /not in contract order/);
});

test('an equal scan is interned: the reference itself is kept, not a second copy', () => {
  const base: Entry[] = [
    { path: 'a', kind: 'dir' },
    { path: 'a/f', kind: 'file', digest: d(1), size: 1, exec: false },
  ];
  const same = base.map((e) => ({ ...e }));
  assert.is(internTree(same, base), base);
  const changed = [...same.slice(0, 1), { ...same[1]!, size: 2 } as Entry];
  assert.is(internTree(changed, base), changed);
});

test.run();
