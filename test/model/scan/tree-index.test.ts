// The tree index: what it stores, what it refuses to read, and git's racy-clean rule.
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Digest } from '../../../model/canonical-json.js';
import type { Entry } from '../../../model/snapshot.js';
import {
  COARSE_RACY_WINDOW_MS,
  RACY_WINDOW_MS,
  createTreeIndex,
  isTrustable,
  parseTreeIndex,
  racyWindowMs,
  readTreeIndex,
  rememberVerifiedIndexes,
  serializeTreeIndex,
  statSignature,
  type TreeIndex,
} from '../../../model/scan/tree-index.js';
import { tempDir } from '../../helpers/index.js';

const t = tempDir();
const sigsOf = (index: TreeIndex) => Array.from({ length: index.count }, (_, i) => index.sig(i));
test.after(() => t.cleanup());

const hex = (c: string) => c.repeat(64);
const entries: Entry[] = [
  { path: 'a dir', kind: 'dir' },
  { path: 'a dir/f\ttab\nnewline.txt', kind: 'file', digest: `sha256:${hex('a')}` as Digest, size: 12, exec: false },
  { path: 'bin', kind: 'file', digest: `sha256:${hex('b')}` as Digest, size: 0, exec: true },
  { path: 'link', kind: 'symlink', target: '../elsewhere\twith tab' },
];
const fields = {
  snapshot: `sha256:${hex('c')}` as Digest,
  changeset: null,
  base: null,
  excludes: ['node_modules'],
  recordedAtMs: 1_700_000_000_000,
  generation: 'g1',
  source: '/src',
};

test('an index round-trips entries, signatures and header (names with tabs and newlines too)', () => {
  const sig = statSignature({ ino: 7, size: 12, mtimeMs: 1.5, ctimeMs: 2.25, mode: 0o100644 });
  const index = createTreeIndex(fields, entries, new Map([[entries[1]!.path, sig]]));
  const back = parseTreeIndex(serializeTreeIndex(index))!;
  assert.ok(back);
  assert.equal(back.entries, entries);
  assert.equal(sigsOf(back), ['', sig, '', '']);
  assert.equal({ ...back.header }, { ...index.header });
  assert.is(back.position('bin'), 2);
  assert.is(back.position('nope'), undefined);
  assert.is(back.kind(3), 'l');
  assert.is(back.target(3), '../elsewhere\twith tab');
});

test('an index cut short, padded, damaged in any byte, of another version or not an index is ignored, never trusted', () => {
  const sig = statSignature({ ino: 7, size: 12, mtimeMs: 1.5, ctimeMs: 2.25, mode: 0o100644 });
  const bytes = serializeTreeIndex(createTreeIndex(fields, entries, new Map([[entries[1]!.path, sig]])));
  assert.ok(parseTreeIndex(bytes));
  const bad: Buffer[] = [
    bytes.subarray(0, bytes.length - 2),
    bytes.subarray(0, 60),
    Buffer.concat([bytes, Buffer.from([0])]),
    Buffer.alloc(0),
  ];
  bad.push(Buffer.from('garbage'), Buffer.from(bytes.toString('latin1').replace('"version":2', '"version":3'), 'latin1'));
  // Every single byte flipped: the checksum (or the magic, or the layout) refuses it.
  for (let i = 0; i < bytes.length; i++) {
    const b = Buffer.from(bytes);
    b[i] ^= 0x10;
    bad.push(b);
  }
  for (const [k, b] of bad.entries()) assert.is(parseTreeIndex(b), null, `case ${k}`);
  const file = join(t.dir, 'idx');
  assert.is(readTreeIndex(file), null, 'absent');
  writeFileSync(file, bytes.subarray(0, 100));
  assert.is(readTreeIndex(file), null, 'cut short by a crash');
});

test('an index of version 1 (pdb-env before) is still read: its files trusted, no directory signature', () => {
  const v1 = [
    '{"kind":"pdb-env-tree-index","version":1,"snapshot":null,"changeset":null,"base":null,"excludes":[],"recordedAtMs":5,"generation":"","source":null,"count":3}',
    ['d', 'a dir', 'f', 'a dir/x', hex('a'), '3', '0', '9:3:1.5:2.5:33188', 'l', 'ln', 'x', 'E'].join('\0'),
  ].join('\n');
  const index = parseTreeIndex(v1)!;
  assert.ok(index);
  assert.equal(index.entries, [
    { path: 'a dir', kind: 'dir' },
    { path: 'a dir/x', kind: 'file', digest: `sha256:${hex('a')}`, size: 3, exec: false },
    { path: 'ln', kind: 'symlink', target: 'x' },
  ]);
  assert.equal(sigsOf(index), ['', '9:3:1.5:2.5:33188', '']);
  assert.is(index.header.root, null);
  assert.is(index.header.extraExcludes, null, 'directories do not keep their names until a scan records them');
  for (const bad of [
    v1.slice(0, v1.length - 2),
    v1.replace(hex('a'), 'abc'),
    '{"kind":"pdb-env-tree-index","version":1,"excludes":[],"count":1}\nE',
  ])
    assert.is(parseTreeIndex(bad), null);
});

test("git's racy-clean rule: a signature is trusted only when mtime and ctime are safely older than its recording", () => {
  const at = 10_000;
  assert.ok(isTrustable(at - RACY_WINDOW_MS - 1, at - RACY_WINDOW_MS - 1, at, RACY_WINDOW_MS));
  assert.not.ok(isTrustable(at - RACY_WINDOW_MS, 0, at, RACY_WINDOW_MS), 'mtime inside the window');
  assert.not.ok(isTrustable(0, at - 1, at, RACY_WINDOW_MS), 'ctime inside the window (a restored mtime does not help)');
  assert.not.ok(isTrustable(at + 5, 0, at, RACY_WINDOW_MS), 'changed after the recording');
  // Whole-second timestamps (FAT, old ext) widen the window.
  assert.is(racyWindowMs([1000, 2000, 5000]), COARSE_RACY_WINDOW_MS);
  assert.is(racyWindowMs([1000, 2000.5]), RACY_WINDOW_MS);
  const sig = (m: number, c: number) => statSignature({ ino: 1, size: 1, mtimeMs: m, ctimeMs: c, mode: 0o100644 });
  const file = (path: string): Entry => ({ path, kind: 'file', digest: `sha256:${hex('d')}` as Digest, size: 1, exec: false });
  const kept = createTreeIndex(
    { ...fields, recordedAtMs: at },
    [file('old'), file('racy')],
    new Map([
      ['old', sig(at - 500.5, at - 400.5)],
      ['racy', sig(at - 500.5, at - 20.5)],
    ]),
  );
  assert.equal(sigsOf(kept), [sig(at - 500.5, at - 400.5), '']);
});

test('serialize then parse is the identity on random trees', () => {
  const name = fc.stringMatching(/^[^\0/]{1,8}$/);
  const entry: fc.Arbitrary<Entry> = fc.oneof(
    name.map((path) => ({ path, kind: 'dir' as const })),
    fc.tuple(name, fc.stringMatching(/^[0-9a-f]{64}$/), fc.nat(), fc.boolean()).map(([path, h, size, exec]) => ({
      path,
      kind: 'file' as const,
      digest: `sha256:${h}` as Digest,
      size,
      exec,
    })),
    fc.tuple(name, fc.stringMatching(/^[^\0]{1,12}$/)).map(([path, target]) => ({ path, kind: 'symlink' as const, target })),
  );
  fc.assert(
    fc.property(fc.uniqueArray(entry, { selector: (e) => e.path, maxLength: 20 }), (list) => {
      const sigs = new Map(
        list.filter((e) => e.kind === 'file').map((e) => [e.path, `${e.path.length}:${e.kind === 'file' ? e.size : 0}:3:4:5`]),
      );
      const back = parseTreeIndex(serializeTreeIndex(createTreeIndex(fields, list, sigs)))!;
      assert.equal(back.entries, list);
      assert.equal(
        sigsOf(back),
        list.map((e) => sigs.get(e.path) ?? ''),
      );
    }),
    { seed: 13, numRuns: 200 },
  );
});

// Last: it turns remembering on for this process (as the daemon does).
test('remembered checksums (the daemon): an index damaged in place is still refused, however soon after a read', async () => {
  rememberVerifiedIndexes();
  const sig = statSignature({ ino: 7, size: 12, mtimeMs: 1.5, ctimeMs: 2.25, mode: 0o100644 });
  const bytes = serializeTreeIndex(createTreeIndex(fields, entries, new Map([[entries[1]!.path, sig]])));
  const damaged = Buffer.from(bytes);
  damaged[damaged.length - 5] ^= 0x10; // the same size: only the bytes differ
  const file = join(t.dir, 'remembered');
  for (const settle of [0, RACY_WINDOW_MS + 50]) {
    writeFileSync(file, bytes);
    await sleep(settle);
    assert.equal(readTreeIndex(file)?.entries, entries);
    assert.equal(readTreeIndex(file)?.entries, entries, 'read again');
    // In place (the same inode), at once: within the timestamps' granularity when not settled.
    writeFileSync(file, damaged);
    assert.is(readTreeIndex(file), null, `damaged after a read ${settle} ms after its write`);
    // Again, and this time first read once the damage has settled too.
    writeFileSync(file, bytes);
    await sleep(settle);
    assert.equal(readTreeIndex(file)?.entries, entries);
    writeFileSync(file, damaged);
    await sleep(RACY_WINDOW_MS + 50);
    assert.is(readTreeIndex(file), null, `damaged after a read ${settle} ms after its write, read when settled`);
  }
});

test.run();
