// The tree index: what it stores, what it refuses to read, and git's racy-clean rule.
import { writeFileSync } from 'node:fs';
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
  serializeTreeIndex,
  statSignature,
  trustableSigs,
} from '../../../model/scan/tree-index.js';
import { tempDir } from '../../helpers/index.js';

const t = tempDir();
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
  assert.equal(back.sigs, ['', sig, '', '']);
  assert.equal({ ...back.header }, { ...index.header });
  assert.is(back.position('bin'), 2);
  assert.is(back.position('nope'), undefined);
  assert.is(back.kind(3), 'l');
  assert.is(back.target(3), '../elsewhere\twith tab');
});

test('an index cut short, padded, of another version or not an index is ignored, never trusted', () => {
  const text = serializeTreeIndex(createTreeIndex(fields, entries, new Map()));
  for (const bad of [
    text.slice(0, text.length - 2),
    text.slice(0, text.indexOf('\n') + 5),
    `${text}\0f`,
    text.replace('"version":1', '"version":2'),
    text.replace(hex('a'), 'abc'),
    '',
    'garbage',
    '{"kind":"pdb-env-tree-index","version":1,"excludes":[],"count":1}\nE',
  ])
    assert.is(parseTreeIndex(bad), null, JSON.stringify(bad.slice(-40)));
  const file = join(t.dir, 'idx');
  assert.is(readTreeIndex(file), null, 'absent');
  writeFileSync(file, text.slice(0, 100));
  assert.is(readTreeIndex(file), null, 'cut short by a crash');
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
  const kept = trustableSigs(
    new Map([
      ['old', sig(at - 500.5, at - 400.5)],
      ['racy', sig(at - 500.5, at - 20.5)],
    ]),
    at,
  );
  assert.equal([...kept.keys()], ['old']);
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
      const sigs = new Map(list.filter((e) => e.kind === 'file').map((e) => [e.path, `1:${e.path.length}:3:4:5`]));
      const back = parseTreeIndex(serializeTreeIndex(createTreeIndex(fields, list, sigs)))!;
      assert.equal(back.entries, list);
      assert.equal(
        back.sigs,
        list.map((e) => sigs.get(e.path) ?? ''),
      );
    }),
    { seed: 13, numRuns: 200 },
  );
});

test.run();
