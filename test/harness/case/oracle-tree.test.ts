// The oracle's kept trees: written where no step runs (the run's oracle directory, not the case's
// scratch folder), in contract order, and read back only as written, so a tree changed before its
// block ends is refused; the projected digest made while writing is the canonical one; and comparing
// two kept trees streams both, so the block's end holds neither whole.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { projectedDigest } from '../../../harness/case/case-checks.js';
import { keepOracleTree, type OracleTree } from '../../../harness/case/oracle-tree.js';
import { compareTrees } from '../../../harness/case/tree-compare.js';
import type { Digest } from '../../../model/canonical-json.js';
import { isPdbError } from '../../../model/errors.js';
import type { Entry } from '../../../model/snapshot.js';
import { tempDir } from '../../helpers/index.js';

const t = tempDir('pdb-oracle-tree-');
test.after(() => t.cleanup());

const BASE = { digest: `sha256:${'b'.repeat(64)}` as Digest, excludes: ['z', 'node_modules'] };
const digestOf = (n: number) => `sha256:${n.toString(16).padStart(64, '0')}` as Digest;
const treeOf = (entries: Entry[]): OracleTree => ({
  entries,
  files: entries.filter((e) => e.kind === 'file').length,
  filesHashed: 1,
  scope: ['source'],
  projection: { volatile: [], dropped: [] },
});
const small: Entry[] = [
  { path: 'a', kind: 'file', digest: digestOf(10), size: 1, exec: false },
  { path: 'd', kind: 'dir' },
  { path: 'd/l', kind: 'symlink', target: '../a' },
  { path: 'd/\u00e9 "q"', kind: 'file', digest: digestOf(11), size: 2, exec: true },
];

test('a kept tree reads back as written, from the directory it was given, with the canonical projected digest', () => {
  const kept = keepOracleTree(t.dir, 'b0-p1', treeOf(small), BASE);
  assert.equal(readdirSync(t.dir), ['b0-p1.jsonl']);
  const back = kept.read();
  assert.equal([...back.entries()], small);
  assert.equal([back.files, back.filesHashed, back.scope], [2, 1, ['source']]);
  assert.is(kept.projectedSnapshot, projectedDigest(small, BASE));
  // Read twice (once per case of the block compared with the reference): the same entries.
  assert.equal([...back.entries()], small);
});

test('a tree out of contract order is kept sorted, so it can be compared as a stream', () => {
  const kept = keepOracleTree(t.dir, 'b0-p3', treeOf([...small].reverse()), BASE);
  assert.equal([...kept.read().entries()], small);
  assert.is(kept.projectedSnapshot, projectedDigest(small, BASE));
});

test('a kept tree changed before it is read back is refused (E_SOURCE_CHANGED), never judged', () => {
  for (const [id, edit] of [
    ['b0-p2', (text: string) => text.replace('"size":1', '"size":3')],
    ['b0-p4', (text: string) => text.slice(0, -1)],
    ['b0-p5', (text: string) => `${text}{"kind":"dir","path":"zz"}\n`],
    ['b0-p6', (text: string) => text.replace('{"kind":"dir"', '{"kind":"dir"]')],
  ] as const) {
    const kept = keepOracleTree(t.dir, id, treeOf(small), BASE);
    const file = join(t.dir, `${id}.jsonl`);
    writeFileSync(file, edit(readFileSync(file, 'utf8')));
    try {
      compareTrees(small, kept.read().entries(), 10);
      assert.unreachable(`${id}: an edited tree was compared`);
    } catch (err) {
      assert.ok(isPdbError(err, 'E_SOURCE_CHANGED'), `${id}: ${String(err)}`);
    }
  }
});

// A tree of this many files, parsed, is over 10 MB of entry objects in the heap.
const N = 100_000;
const bigTree = (changed: number): Entry[] => {
  const out: Entry[] = [];
  for (let i = 0; i < N; i++) {
    const path = `pkg-${String(Math.floor(i / 100)).padStart(4, '0')}/f-${String(i).padStart(6, '0')}.js`;
    out.push({ path, kind: 'file', digest: digestOf(i === changed ? i + 1 : i), size: 100 + (i % 7), exec: false });
  }
  return out;
};

test('two kept 100,000-entry trees are compared holding neither whole: the heap grows by far less than one tree', () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const heap = () => (gc(), process.memoryUsage().heapUsed);
  let ref: ReturnType<typeof keepOracleTree> | null = keepOracleTree(t.dir, 'big-ref', treeOf(bigTree(-1)), BASE);
  const other = keepOracleTree(t.dir, 'big-case', treeOf(bigTree(4242)), BASE);
  const refTree = ref.read();
  ref = null;
  // One tree as the block's end would hold it were it read back whole: its parsed entries.
  const oneTree = (() => {
    const h0 = heap();
    const held = [...other.read().entries()];
    return held.length > 0 ? heap() - h0 : 0;
  })();
  const start = heap();
  let peak = start;
  // Sample the heap (after a collection) every few thousand entries as the comparison reads them.
  function* sampled(entries: Iterable<Entry>): Generator<Entry> {
    let i = 0;
    for (const e of entries) {
      if (++i % 5000 === 0) peak = Math.max(peak, heap());
      yield e;
    }
  }
  const d = compareTrees(sampled(refTree.entries()), sampled(other.read().entries()), 10);
  assert.equal([d.mismatches, d.counts.content, d.paths], [1, 1, ['pkg-0042/f-004242.js']]);
  const grew = peak - start;
  assert.ok(oneTree > 10e6, `one tree is ${(oneTree / 1e6).toFixed(1)} MB of heap`);
  assert.ok(
    grew < oneTree / 5,
    `the comparison grew the heap by ${(grew / 1e6).toFixed(1)} MB; one tree is ${(oneTree / 1e6).toFixed(1)} MB`,
  );
});

test.run();
