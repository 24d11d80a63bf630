import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { canonicalJson, sha256Digest, type Digest } from '../../model/canonical-json.js';
import {
  assertContractPath,
  canonicalSnapshot,
  changeOf,
  comparePaths,
  countMismatches,
  createSnapshot,
  diffEntries,
  snapshotDigest,
  type Entry,
} from '../../model/snapshot.js';

const d = (s: string) => sha256Digest(s);

test('canonical JSON sorts keys and drops whitespace', () => {
  assert.is(canonicalJson({ b: 1, a: [true, null, 'x'], c: { z: 1, y: 2 } }), '{"a":[true,null,"x"],"b":1,"c":{"y":2,"z":1}}');
});

test('paths sort by UTF-8 bytes, not UTF-16 units', () => {
  // U+FF5E (3 UTF-8 bytes, 0xEF...) sorts before U+1F600 (4 bytes, 0xF0...) by bytes, but after it by UTF-16 units.
  assert.ok(comparePaths('\uFF5E', '\u{1F600}') < 0);
  assert.ok('\uFF5E' > '\u{1F600}');
  assert.ok(comparePaths('a-b', 'a/b') < 0);
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

test.run();
