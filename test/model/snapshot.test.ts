import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { canonicalJson, sha256Digest, type Digest } from '../../model/canonical-json.js';
import { deepFreeze, keepDocument } from '../../model/store/kept-documents.js';
import {
  assertContractPath,
  canonicalSnapshot,
  changeOf,
  comparePaths,
  countMismatches,
  createSnapshot,
  diffEntries,
  diffThroughBase,
  snapshotDigest,
  sortEntries,
  withSnapshotBase,
  type Entry,
} from '../../model/snapshot.js';

const d = (s: string) => sha256Digest(s);

test('canonical JSON sorts keys and drops whitespace', () => {
  assert.is(canonicalJson({ b: 1, a: [true, null, 'x'], c: { z: 1, y: 2 } }), '{"a":[true,null,"x"],"b":1,"c":{"y":2,"z":1}}');
});

test('canonical JSON of documents frozen through (kept-documents.ts) is the same text, and a half-frozen one is never kept stale', () => {
  fc.assert(
    fc.property(fc.jsonValue(), (v) => {
      const text = canonicalJson(v);
      const frozen = deepFreeze(structuredClone(v));
      assert.is(canonicalJson(frozen), text);
      assert.is(canonicalJson(frozen), text, 'again, from what was kept');
      assert.is(canonicalJson({ wrapped: frozen, n: 1 }), canonicalJson({ wrapped: v, n: 1 }));
    }),
    { seed: 38, numRuns: 300 },
  );
  // Frozen outside, mutable inside: its text follows what it holds.
  const inner = { a: 1 };
  const outer = Object.freeze({ inner });
  assert.is(canonicalJson(outer), '{"inner":{"a":1}}');
  inner.a = 2;
  assert.is(canonicalJson(outer), '{"inner":{"a":2}}');
  // A kept document is frozen through: it cannot be changed under the text kept of it.
  const doc = keepDocument(d('kept'), { changes: [{ path: 'a', before: null }] });
  assert.ok(Object.isFrozen(doc.changes[0]));
  assert.throws(() => ((doc.changes[0] as { path: string }).path = 'b'));
});

test('paths sort by UTF-8 bytes, not UTF-16 units', () => {
  // U+FF5E (3 UTF-8 bytes, 0xEF...) sorts before U+1F600 (4 bytes, 0xF0...) by bytes, but after it by UTF-16 units.
  assert.ok(comparePaths('\uFF5E', '\u{1F600}') < 0);
  assert.ok('\uFF5E' > '\u{1F600}');
  assert.ok(comparePaths('a-b', 'a/b') < 0);
});

test('comparePaths orders any two strings as their UTF-8 bytes do, surrogates and lone surrogates included', () => {
  const unit = fc.constantFrom(
    'a',
    'b',
    '/',
    '-',
    '\u00e9',
    '\u07ff',
    '\ud7ff',
    '\ue000',
    '\uff5e',
    '\uffff',
    '\u{1F600}',
    '\u{10FFFF}',
    '\ud800',
    '\udc00',
  );
  const path = fc.array(unit, { maxLength: 6 }).map((u) => u.join(''));
  fc.assert(
    fc.property(path, path, (a, b) => {
      assert.is(
        Math.sign(comparePaths(a, b)),
        Math.sign(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))),
        `${JSON.stringify([a, b])}`,
      );
    }),
    { numRuns: 3000 },
  );
});

test('sortEntries orders paths by their UTF-8 bytes, leaves its input as it was, and keeps the objects', () => {
  const unit = fc.constantFrom('a', 'b', '/', '-', '\u00e9', '\ud7ff', '\ue000', '\uff5e', '\u{1F600}', '\u{10FFFF}');
  const path = fc.array(unit, { minLength: 1, maxLength: 6 }).map((u) => u.join(''));
  fc.assert(
    fc.property(fc.uniqueArray(path), (paths) => {
      const entries = paths.map((p) => ({ path: p }));
      const sorted = sortEntries(entries);
      assert.equal(
        entries.map((e) => e.path),
        paths,
      );
      const bytes = [...paths].sort((a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
      assert.equal(
        sorted.map((e) => e.path),
        bytes,
      );
      assert.ok(sorted.every((e) => entries.includes(e)));
    }),
    { numRuns: 500 },
  );
});

test('snapshot digest does not depend on entry order', () => {
  const entries: Entry[] = [
    { path: 'b', kind: 'file', digest: d('1'), size: 1, exec: false },
    { path: 'a', kind: 'dir' },
    { path: 'a/l', kind: 'symlink', target: '../b' },
  ];
  const one = snapshotDigest(createSnapshot(entries, ['node_modules']));
  const two = snapshotDigest(createSnapshot([...entries].reverse(), ['node_modules']));
  assert.is(one, two);
  assert.match(one, /^sha256:[0-9a-f]{64}$/);
  assert.is.not(one, snapshotDigest(createSnapshot(entries, [])), 'excludes are part of the identity');
});

test('diff classifies add, delete, modify, mode and retype', () => {
  const before: Entry[] = [
    { path: 'm', kind: 'file', digest: d('1'), size: 1, exec: false },
    { path: 'x', kind: 'file', digest: d('2'), size: 1, exec: false },
    { path: 'r', kind: 'file', digest: d('3'), size: 1, exec: false },
    { path: 'gone', kind: 'dir' },
    { path: 'l', kind: 'symlink', target: 'a' },
  ];
  const after: Entry[] = [
    { path: 'm', kind: 'file', digest: d('9'), size: 1, exec: false },
    { path: 'x', kind: 'file', digest: d('2'), size: 1, exec: true },
    { path: 'r', kind: 'symlink', target: 'm' },
    { path: 'new', kind: 'dir' },
    { path: 'l', kind: 'symlink', target: 'b' },
  ];
  const changes = diffEntries(before, after).map((c) => `${c.kind}:${c.path}`);
  assert.equal(changes, ['delete:gone', 'modify:l', 'modify:m', 'add:new', 'retype:r', 'mode:x']);
  assert.equal(countMismatches(before, after), { content: 1, mode: 1, symlink: 1, missing: 1, extra: 1, kind: 1 });
});

test('contract paths refuse absolute, empty, dot and dot-dot components', () => {
  for (const bad of ['', '/a', 'a//b', './a', 'a/..', 'a\0b'])
    assert.throws(() => assertContractPath(bad), /E_BAD_PATH|component|relative/);
  assertContractPath('a/b.c/d');
});

test('a Snapshot written directly has exactly the canonical JSON bytes (any names, targets, sizes, bases)', () => {
  const text = fc.string({ unit: 'binary', maxLength: 10 }).filter((x) => !x.includes('\0') && x.length > 0);
  const entry: fc.Arbitrary<Entry> = fc.oneof(
    text.map((path) => ({ path, kind: 'dir' as const })),
    fc.tuple(text, fc.stringMatching(/^[0-9a-f]{64}$/), fc.maxSafeNat(), fc.boolean()).map(([path, h, size, exec]) => ({
      path,
      kind: 'file' as const,
      digest: `sha256:${h}` as Digest,
      size,
      exec,
    })),
    fc.tuple(text, text).map(([path, target]) => ({ path, kind: 'symlink' as const, target })),
  );
  fc.assert(
    fc.property(
      fc.array(entry, { maxLength: 12 }),
      fc.array(text, { maxLength: 3 }),
      fc.option(fc.stringMatching(/^[0-9a-f]{64}$/)),
      (entries, excludes, base) => {
        const s = createSnapshot(entries, excludes, base === null ? null : (`sha256:${base}` as Digest));
        const direct = canonicalSnapshot(s);
        assert.is(direct.bytes.toString('utf8'), canonicalJson(s));
        assert.is(direct.digest, sha256Digest(canonicalJson(s)));
      },
    ),
    { seed: 13, numRuns: 300 },
  );
});

test('withSnapshotBase gives the canonical bytes of the same Snapshot on another base (any entries, bases)', () => {
  const hex = fc.stringMatching(/^[0-9a-f]{64}$/).map((h) => `sha256:${h}` as Digest);
  const entry: fc.Arbitrary<Entry> = fc.oneof(
    fc.string({ minLength: 1, maxLength: 6 }).map((path): Entry => ({ path, kind: 'dir' })),
    fc
      .tuple(fc.string({ minLength: 1, maxLength: 6 }), hex, fc.nat(), fc.boolean())
      .map(([path, digest, size, exec]): Entry => ({ path, kind: 'file', digest, size, exec })),
  );
  fc.assert(
    fc.property(
      fc.uniqueArray(entry, { selector: (e) => e.path, maxLength: 8 }),
      fc.array(fc.string({ maxLength: 4 }), { maxLength: 2 }),
      fc.option(hex),
      fc.option(hex),
      (entries, excludes, from, to) => {
        const bytes = canonicalSnapshot(createSnapshot(entries, excludes, from)).bytes;
        assert.equal(withSnapshotBase(bytes, to), canonicalSnapshot(createSnapshot(entries, excludes, to)));
      },
    ),
  );
  assert.throws(() => withSnapshotBase(Buffer.from('{"entries":[]}'), null), /canonical bytes of a Snapshot/);
});

test('changeOf classifies one path as diffEntries does', () => {
  const f = (digest: string, exec = false): Entry => ({ path: 'p', kind: 'file', digest: d(digest), size: 1, exec });
  assert.is(changeOf('p', null, null), null);
  assert.is(changeOf('p', f('1'), f('1')), null);
  assert.is(changeOf('p', null, f('1'))?.kind, 'add');
  assert.is(changeOf('p', f('1'), null)?.kind, 'delete');
  assert.is(changeOf('p', f('1'), f('2'))?.kind, 'modify');
  assert.is(changeOf('p', f('1'), f('1', true))?.kind, 'mode');
  assert.is(changeOf('p', f('1'), { path: 'p', kind: 'dir' })?.kind, 'retype');
  assert.equal(changeOf('p', f('1'), f('2')), diffEntries([f('1')], [f('2')])[0]);
});

test('the diff of two checkpoints through their Changesets equals the diff of their whole trees (random trees, random change sequences)', () => {
  // Few names and few contents, so paths collide across steps and changes undo each other.
  const names = ['a', 'b', 'c', 'a/x', 'a/y', 'b/z', '\uFF5E', '\u{1F600}'];
  const entryAt = (path: string): fc.Arbitrary<Entry> =>
    fc.oneof(
      fc.constant<Entry>({ path, kind: 'dir' }),
      fc
        .tuple(fc.constantFrom('1', '2', '3'), fc.boolean())
        .map(([c, exec]): Entry => ({ path, kind: 'file', digest: d(c), size: Number(c), exec })),
      fc.constantFrom('t', 'u').map((target): Entry => ({ path, kind: 'symlink', target })),
    );
  /** A tree: each name absent or some entry. */
  const tree = fc.tuple(...names.map((n) => fc.option(entryAt(n), { freq: 3 }))).map((es) => es.filter((e): e is Entry => e !== null));
  /** One step: some names set to another entry or removed. */
  const step = fc.array(fc.tuple(fc.constantFrom(...names), fc.boolean(), fc.integer()), {
    maxLength: 4,
  });
  fc.assert(
    fc.property(
      tree,
      fc.array(step, { maxLength: 6 }),
      fc.array(fc.tuple(fc.nat(), fc.nat()), { minLength: 1, maxLength: 5 }),
      fc.integer(),
      (base, steps, pairs, seed) => {
        const trees: Entry[][] = [base];
        let rnd = seed;
        for (const s of steps) {
          const now = new Map(trees.at(-1)!.map((e) => [e.path, e]));
          for (const [path, remove, n] of s) {
            rnd = (rnd * 31 + n) | 0;
            if (remove) now.delete(path);
            else {
              const kinds: Entry[] = [
                { path, kind: 'dir' },
                { path, kind: 'file', digest: d(String(rnd & 3)), size: rnd & 3, exec: (rnd & 4) !== 0 },
                { path, kind: 'symlink', target: (rnd & 8) !== 0 ? 't' : 'u' },
              ];
              now.set(path, kinds[Math.abs(rnd) % 3]!);
            }
          }
          trees.push([...now.values()]);
        }
        // Every checkpoint's Changeset is against the base; the base's own is empty.
        const changesets = trees.map((t) => diffEntries(base, t));
        for (const [i, j] of pairs) {
          const [x, y] = [i % trees.length, j % trees.length];
          assert.equal(diffThroughBase(changesets[x]!, changesets[y]!), diffEntries(trees[x]!, trees[y]!), `checkpoint ${x} to ${y}`);
        }
      },
    ),
    { numRuns: 500 },
  );
});

test.run();
