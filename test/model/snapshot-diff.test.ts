// diffSnapshotBytes: the changes merged from two Snapshots' canonical bytes are exactly those
// diffEntries gives for their entries, on random trees with every character JSON escapes (quotes,
// backslashes, braces, controls, non-ASCII) in names and targets; a document not in the canonical
// layout goes to the caller's fallback.
import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Digest } from '../../model/canonical-json.js';
import { canonicalSnapshot, createSnapshot, diffEntries, type Change, type Entry } from '../../model/snapshot.js';
import { diffSnapshotBytes } from '../../model/snapshot-diff.js';

const text = fc.string({ unit: 'binary', maxLength: 6 }).filter((x) => !x.includes('\0') && x.length > 0);
const special = fc.constantFrom('"', '\\', '{', '}', ',', ']', '\n', '\u0001', 'é', '\u{1F600}', 'a');
const name = fc.oneof(
  text,
  fc.array(special, { minLength: 1, maxLength: 4 }).map((xs) => xs.join('')),
);
const content = fc.record({ h: fc.constantFrom('1', '2'), size: fc.constantFrom(0, 7, 2 ** 40), exec: fc.boolean() });
const entry = (path: string): fc.Arbitrary<Entry> =>
  fc.oneof(
    fc.constant({ path, kind: 'dir' as const }),
    content.map(({ h, size, exec }) => ({ path, kind: 'file' as const, digest: `sha256:${h.repeat(64)}` as Digest, size, exec })),
    name.map((target) => ({ path, kind: 'symlink' as const, target })),
  );
/** A tree: unique paths, each with one of a few entries, so two trees share some and differ in others. */
const tree = fc.uniqueArray(name, { maxLength: 10 }).chain((paths) => fc.tuple(...paths.map(entry)));
const noFallback = (): Change[] => {
  throw new Error('a canonical document needs no fallback');
};
const bytes = (entries: Entry[], base: Digest | null) => canonicalSnapshot(createSnapshot(entries, ['x'], base)).bytes;

test('the merged changes are diffEntries of the entries, for any two trees', () => {
  fc.assert(
    fc.property(tree, tree, fc.boolean(), (a, b, based) => {
      const base = based ? (`sha256:${'c'.repeat(64)}` as Digest) : null;
      const whole = diffEntries(createSnapshot(a, []).entries, createSnapshot(b, []).entries);
      const merged = diffSnapshotBytes(bytes(a, base), bytes(b, null), noFallback);
      assert.equal(merged, whole);
    }),
    { seed: 38, numRuns: 500 },
  );
});

test('a tree against itself, an empty one and back', () => {
  const a: Entry[] = [
    { path: 'd', kind: 'dir' },
    { path: 'd/f"}', kind: 'file', digest: `sha256:${'1'.repeat(64)}` as Digest, size: 3, exec: false },
    { path: 'l', kind: 'symlink', target: '{"path":"x"}' },
  ];
  assert.equal(diffSnapshotBytes(bytes(a, null), bytes(a, null), noFallback), []);
  assert.equal(
    diffSnapshotBytes(bytes(a, null), bytes([], null), noFallback).map((c) => `${c.kind} ${c.path}`),
    ['delete d', 'delete d/f"}', 'delete l'],
  );
  assert.equal(diffSnapshotBytes(bytes([], null), bytes(a, null), noFallback), diffEntries([], a));
});

test('a document not in the canonical layout goes to the fallback', () => {
  const fallback = () => [{ path: 'from-fallback', kind: 'add' as const, before: null, after: null }];
  const spaced = Buffer.from('{ "base": null, "entries": [], "excludes": [], "version": 1 }');
  assert.is(diffSnapshotBytes(spaced, bytes([], null), fallback)[0]!.path, 'from-fallback');
  const cut = bytes([{ path: 'a', kind: 'dir' }], null).subarray(0, 30);
  assert.is(diffSnapshotBytes(bytes([], null), cut, fallback)[0]!.path, 'from-fallback');
  assert.is(diffSnapshotBytes(Buffer.from('not json'), bytes([], null), fallback)[0]!.path, 'from-fallback');
});

test.run();
