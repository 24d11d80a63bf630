import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { canonicalJson, sha256Digest } from '../../model/canonical-json.js';
import {
  assertContractPath,
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

test.run();
