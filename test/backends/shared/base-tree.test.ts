// A materialized base is verified when it is built (every byte hashed as it is copied) and marked;
// an unmarked base found in place is hashed once before use. Run with the test-only hard-link farm,
// which uses the shared tree base on any filesystem.
import { chmodSync, existsSync, lstatSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { baseDir, baseIndexFile, materializeTreeBase, readBaseMarker } from '../../../backends/shared/base-tree.js';
import type { Digest } from '../../../model/canonical-json.js';
import { isPdbError } from '../../../model/errors.js';
import { createTreeIndex, readTreeIndex, serializeTreeIndex, statSignature } from '../../../model/scan/tree-index.js';
import { materializeTree } from '../../../model/store/materialize.js';
import { SessionService } from '../../../sessions/service.js';
import { tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());

const opts = (src: string) => ({ from: src, backend: 'hardlink-farm', allowTestOnly: true });

function flip(file: string): void {
  chmodSync(file, 0o644);
  const b = readFileSync(file);
  b[0] ^= 1;
  writeFileSync(file, b);
}

async function expectCorrupt(p: Promise<unknown>, path: string): Promise<void> {
  try {
    await p;
    assert.unreachable('expected E_OBJECT_CORRUPT');
  } catch (err) {
    assert.ok(isPdbError(err, 'E_OBJECT_CORRUPT'), String(err));
    assert.is((err as { path?: string }).path, path);
  }
}

test('a base is built from verified bytes and marked; a corrupt object fails the build and leaves no base', async () => {
  const src = join(t.dir, 'src');
  writeTree(src, { 'a.txt': 'alpha\n', lib: { 'b.txt': 'beta\n' } });
  const svc = await SessionService.open(join(t.dir, 'store'), { create: true });
  const first = await svc.importSource(src);
  const b = first.snapshot.entries.find((e) => e.path === 'lib/b.txt')!;
  assert.ok(b.kind === 'file');
  flip(svc.store.objectPath(b.digest));
  await expectCorrupt(svc.create('h0', { ...opts(src), base: first.digest }), 'lib/b.txt');
  const ctx = svc.backendContext(src);
  assert.not.ok(existsSync(baseDir(ctx, first.digest, 'hardlink-farm')), 'no base from bad bytes');
  assert.equal(readdirSync(svc.store.paths.tmp), [], 'the temp build is gone');
  // The re-import repairs the object; the base is built and marked.
  const s = await svc.create('h1', opts(src));
  assert.is(s.base, first.digest);
  const mark = join(svc.store.paths.bases, '.verified', `${first.digest.slice(7)}.hardlink-farm`);
  assert.ok(existsSync(mark));
  // An unmarked base (an older pdb-env, or a crash before the mark) is hashed once before use.
  rmSync(mark);
  const inBase = join(baseDir(ctx, first.digest as Digest, 'hardlink-farm'), 'a.txt');
  flip(inBase);
  await expectCorrupt(svc.create('h2', opts(src)), 'a.txt');
  flip(inBase);
  await svc.create('h3', opts(src));
  assert.ok(existsSync(mark), 'marked once verified');
});

test('an import’s Snapshot is copied, indexed and marked from its rows: no entry is built, the index is createTreeIndex’s', async () => {
  const src = join(t.dir, 'rows-src');
  writeTree(src, { 'a.txt': 'alpha\n', 'q"x': 'quote\n', lib: { 'b.sh': '#!/bin/sh\n', deep: { 'c.txt': 'c\n' } } });
  chmodSync(join(src, 'lib', 'b.sh'), 0o755);
  symlinkSync('lib/b.sh', join(src, 'link'));
  const svc = await SessionService.open(join(t.dir, 'rows-store'), { create: true });
  const imported = await svc.importSource(src);
  const entries = (await svc.importSource(src)).snapshot.entries; // another import's: this one's stay unbuilt
  const snapshot = imported.snapshot;
  Object.defineProperty(snapshot, 'entries', {
    get: () => assert.unreachable('the entries of the Snapshot were built'),
  });
  const copied = await materializeTree(svc.store, snapshot, join(t.dir, 'rows-copy'));
  assert.is(copied.files, 4);
  assert.is(readFileSync(join(t.dir, 'rows-copy', 'lib', 'deep', 'c.txt'), 'utf8'), 'c\n');
  const ctx = svc.backendContext(src);
  const dir = await materializeTreeBase(ctx, snapshot, imported.digest);
  const marker = readBaseMarker(ctx, imported.digest, 'tree');
  assert.ok(marker && marker !== 'legacy');
  assert.equal([marker.files, marker.bytes, marker.entries], [4, 24, entries.length]);
  // The index, against what the base holds (lstat now) and the entries through createTreeIndex.
  const index = readTreeIndex(baseIndexFile(ctx, imported.digest, 'tree'))!;
  assert.equal(index.entries, entries);
  // Files as copied and directories are recorded; a symlink is read by the next scan.
  const recorded = entries.filter((e) => e.kind !== 'symlink');
  const sigs = new Map(recorded.map((e) => [e.path, statSignature(lstatSync(join(dir, e.path)))]));
  for (let i = 0; i < index.count; i++) if (index.kind(i) !== 'd') assert.is(index.sig(i), sigs.get(index.path(i)) ?? '', index.path(i));
  const { snapshot: digest, base, excludes, recordedAtMs, generation, root } = index.header;
  const expected = createTreeIndex(
    { snapshot: digest, changeset: null, base, excludes, recordedAtMs, generation, source: null },
    entries,
    sigs,
  );
  expected.header.root = root;
  assert.ok(serializeTreeIndex(expected).equals(readFileSync(baseIndexFile(ctx, imported.digest, 'tree'))), 'not createTreeIndex’s bytes');
});

test.run();
