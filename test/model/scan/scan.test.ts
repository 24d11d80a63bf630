import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isPdbError } from '../../../model/errors.js';
import { ObjectStore } from '../../../model/store/object-store.js';
import { readSourceConfig, scanTree, walkEntries } from '../../../model/scan/scan.js';
import { createTreeIndex } from '../../../model/scan/tree-index.js';
import { FsPool } from '../../../model/scan/fs-pool.js';
import { createSnapshot, snapshotDigest } from '../../../model/snapshot.js';
import { tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());

test('scan records dirs, files, symlinks and exec bits; never follows symlinks', async () => {
  const src = join(t.dir, 'src1');
  writeTree(src, { 'a.txt': 'hello', bin: { 'run.sh': { content: '#!/bin/sh\n', exec: true } }, link: { link: '/etc/passwd' }, empty: {} });
  const { entries } = await scanTree(src, { excludes: [] });
  assert.equal(
    entries.map((e) => `${e.kind}:${e.path}`),
    ['file:a.txt', 'dir:bin', 'file:bin/run.sh', 'dir:empty', 'symlink:link'],
  );
  const run = entries.find((e) => e.path === 'bin/run.sh');
  assert.ok(run && run.kind === 'file' && run.exec);
  const link = entries.find((e) => e.path === 'link');
  assert.ok(link && link.kind === 'symlink' && link.target === '/etc/passwd');
});

test('administrative roots and pdb-env.json excludes are left out; excludes change the identity', async () => {
  const src = join(t.dir, 'src2');
  writeTree(src, {
    '.git': { HEAD: 'x' },
    '.pdb': { x: 'y' },
    node_modules: { p: 'x' },
    sub: { node_modules: { q: 'y' }, keep: 'k' },
    'pdb-env.json': '{"excludes":["node_modules"]}',
  });
  const { excludes } = await readSourceConfig(src);
  assert.equal(excludes, ['node_modules']);
  const { entries } = await scanTree(src, { excludes });
  assert.equal(
    entries.map((e) => e.path),
    ['pdb-env.json', 'sub', 'sub/keep'],
  );
});

test("walkEntries gives the scan's entries in contract order, one at a time, with no file hashed", async () => {
  const src = join(t.dir, 'src-walk');
  writeTree(src, {
    'a.txt': 'hello',
    'a-b': { x: 'xx' },
    a: { '\u00e9t\u00e9': 'e', '\u{1F600}': 'smile', z: { content: '#!/bin/sh\n', exec: true } },
    link: { link: 'a.txt' },
    node_modules: { p: 'x' },
    keep: { store: { obj: 'o' }, k: 'k' },
    empty: {},
  });
  const options = { excludes: ['node_modules'], excludeAbsolute: [join(src, 'keep/store')] };
  const scanned = (await scanTree(src, options)).entries.map((e) => (e.kind === 'file' ? { ...e, digest: 'sha256:' } : e));
  const walk = walkEntries(src, options);
  assert.not.ok(Array.isArray(walk));
  const walked = [...walk];
  assert.equal(walked, scanned);
  assert.equal(
    walked.map((e) => e.path),
    ['a', 'a-b', 'a-b/x', 'a.txt', 'a/z', 'a/\u00e9t\u00e9', 'a/\u{1F600}', 'empty', 'keep', 'keep/k', 'link'],
  );
});

test('a bad pdb-env.json is a typed error', async () => {
  const src = join(t.dir, 'src3');
  writeTree(src, { 'pdb-env.json': '{"excludes":["../up"]}' });
  try {
    await readSourceConfig(src);
    assert.unreachable();
  } catch (err) {
    assert.ok(isPdbError(err, 'E_CONFIG_INVALID'), String(err));
  }
});

test('a fifo is E_UNSUPPORTED_ENTRY naming the relative path', async () => {
  const src = join(t.dir, 'src4');
  writeTree(src, { d: { ok: 'x' } });
  execFileSync('mkfifo', [join(src, 'd', 'pipe')]);
  try {
    await scanTree(src, { excludes: [] });
    assert.unreachable();
  } catch (err) {
    assert.ok(isPdbError(err, 'E_UNSUPPORTED_ENTRY'), String(err));
    assert.is((err as { path?: string }).path, 'd/pipe');
  }
});

test('a non-UTF-8 name is E_NON_UTF8_NAME', async () => {
  const src = join(t.dir, 'src5');
  mkdirSync(src);
  writeFileSync(Buffer.concat([Buffer.from(`${src}/bad-`), Buffer.from([0xff, 0xfe])]), 'x');
  try {
    await scanTree(src, { excludes: [] });
    assert.unreachable();
  } catch (err) {
    assert.ok(isPdbError(err, 'E_NON_UTF8_NAME'), String(err));
  }
});

test('install mode puts every byte in the store once, and the stat cache is trusted next time', async () => {
  const src = join(t.dir, 'src6');
  const files: Record<string, string> = {};
  for (let i = 0; i < 120; i++) files[`f${i}`] = `content ${i % 60}`; // 60 distinct contents
  writeTree(src, { many: files, big: 'x'.repeat(3 << 20) });
  const store = await ObjectStore.init(join(t.dir, 'store6'));
  const first = await scanTree(src, { excludes: [], store });
  assert.is(first.objectsInstalled, 61, 'deduplicated');
  for (const e of first.entries) if (e.kind === 'file') assert.ok(store.has(e.digest));
  // An index that records other signatures for every file: nothing may be trusted.
  const index = createTreeIndex(
    { snapshot: null, changeset: null, base: null, excludes: [], recordedAtMs: Date.now() + 60_000, generation: '', source: null },
    first.entries,
    new Map(first.entries.filter((e) => e.kind === 'file').map((e) => [e.path, 'forced'])),
  );
  const second = await scanTree(src, { excludes: [], store, trust: index });
  assert.is(second.filesTrusted, 0, 'a stat signature that does not match is never trusted');
  assert.is(snapshotDigest(createSnapshot(second.entries, [])), snapshotDigest(createSnapshot(first.entries, [])));
  assert.equal(second.changedPaths, []);
});

test('filesHashed counts the digests the reader returned: every file here, and a worker answering without one is refused', async () => {
  const src = join(t.dir, 'src7');
  writeTree(src, { a: '1', sub: { b: '2', c: '3' }, link: { link: 'a' } });
  const scan = await scanTree(src, { excludes: [] });
  assert.is(scan.filesHashed, 3);
  assert.ok(scan.wasHashed('sub/b') && !scan.wasHashed('link'));
  // A pool that answers without reading: the count must not come from what was asked.
  const lazy = {
    each: async (items: unknown[], _make: unknown, onResult: (i: number, r: unknown) => void) =>
      items.forEach((_, i) => onResult(i, { digest: undefined, size: 1 })),
  } as unknown as FsPool;
  try {
    await scanTree(src, { excludes: [], pool: lazy });
    assert.unreachable('a file without a digest counted as hashed');
  } catch (err) {
    assert.ok(isPdbError(err, 'E_SOURCE_CHANGED'), String(err));
    assert.match((err as Error).message, 'was not hashed');
  }
});

test("the pool's workers run with a small young generation (a large import's RSS), and still hash", async () => {
  const { dir, cleanup } = tempDir();
  const files = Array.from({ length: 64 }, (_, i) => join(dir, `f${i}`));
  files.forEach((f, i) => writeFileSync(f, `file ${i}\n`));
  const pool = new FsPool(2);
  const sizes: number[] = [];
  try {
    await pool.each(
      files,
      (batch) => ({ op: 'hash', paths: batch }),
      (_, r) => sizes.push(r!.size),
      { inlineBelow: 1, batchSize: 8 },
    );
    const workers = (pool as unknown as { workers: { resourceLimits?: { maxYoungGenerationSizeMb: number } }[] }).workers;
    assert.is(workers.length, 2);
    for (const w of workers)
      assert.ok(w.resourceLimits!.maxYoungGenerationSizeMb <= 8, `young generation ${w.resourceLimits!.maxYoungGenerationSizeMb} MB`);
  } finally {
    await pool.close();
    cleanup();
  }
  assert.is(sizes.length, 64);
});

test.run();
