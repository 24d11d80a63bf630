import { chmodSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isPdbError, type PdbError } from '../../../model/errors.js';
import { FsPool } from '../../../model/scan/fs-pool.js';
import { materializeTree } from '../../../model/store/materialize.js';
import { ObjectStore } from '../../../model/store/object-store.js';
import { scanTree } from '../../../model/scan/scan.js';
import { createSnapshot } from '../../../model/snapshot.js';
import { tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir();
const pool = new FsPool(2);
test.after(async () => {
  await pool.close();
  t.cleanup();
});

let n = 0;
async function setup(files = 4) {
  const dir = join(t.dir, `case${n++}`);
  const spec: Record<string, string> = { 'tool.sh': '#!/bin/sh\n' };
  for (let i = 0; i < files; i++) spec[`f${i}.txt`] = `file ${i}\n`;
  writeTree(join(dir, 'src'), { ...spec, sub: { 'deep.txt': 'deep\n' } });
  chmodSync(join(dir, 'src', 'tool.sh'), 0o755);
  const store = await ObjectStore.init(join(dir, 'store'));
  const scan = await scanTree(join(dir, 'src'), { excludes: [], store });
  return { dir, store, snapshot: createSnapshot(scan.entries, []) };
}

function flip(store: ObjectStore, digest: string): void {
  const file = store.objectPath(digest as never);
  chmodSync(file, 0o644);
  const bytes = readFileSync(file);
  bytes[0] ^= 1;
  writeFileSync(file, bytes);
}

async function failure(p: Promise<unknown>): Promise<PdbError> {
  try {
    await p;
  } catch (err) {
    assert.ok(isPdbError(err), String(err));
    return err as PdbError;
  }
  return assert.unreachable('expected a failure') as never;
}

for (const [label, files] of [
  ['on the calling thread', 4],
  ['in worker threads', 120],
] as const) {
  test(`a tree is copied byte for byte with exec bits (${label})`, async () => {
    const { dir, store, snapshot } = await setup(files);
    const r = await materializeTree(store, snapshot, join(dir, 'out'), pool);
    assert.is(r.files, files + 2);
    assert.is(readFileSync(join(dir, 'out', 'sub', 'deep.txt'), 'utf8'), 'deep\n');
    assert.is(statSync(join(dir, 'out', 'tool.sh')).mode & 0o111, 0o111);
  });

  test(`a corrupt object fails the copy with E_OBJECT_CORRUPT naming the path, and goes to the quarantine (${label})`, async () => {
    const { dir, store, snapshot } = await setup(files);
    const entry = snapshot.entries.find((e) => e.path === 'sub/deep.txt')!;
    assert.ok(entry.kind === 'file');
    flip(store, entry.digest);
    const err = await failure(materializeTree(store, snapshot, join(dir, 'out'), pool));
    assert.is(err.code, 'E_OBJECT_CORRUPT');
    assert.is(err.path, 'sub/deep.txt');
    assert.match(err.message, new RegExp(`sub/deep\\.txt \\(${entry.digest}\\) is corrupt`));
    assert.match(err.hint!, /create NAME --from DIR/);
    assert.not.ok(existsSync(store.objectPath(entry.digest)), 'moved out of the objects');
    assert.equal(await store.quarantinedObjects(), [entry.digest]);
  });

  test(`a missing object fails the copy with E_OBJECT_MISSING naming the path (${label})`, async () => {
    const { dir, store, snapshot } = await setup(files);
    const entry = snapshot.entries.find((e) => e.path === 'f1.txt')!;
    assert.ok(entry.kind === 'file');
    rmSync(store.objectPath(entry.digest));
    const err = await failure(materializeTree(store, snapshot, join(dir, 'out'), pool));
    assert.is(err.code, 'E_OBJECT_MISSING');
    assert.is(err.path, 'f1.txt');
    assert.not.ok(existsSync(store.paths.quarantine), 'nothing to quarantine');
  });
}

test('a batch whose task cannot be made fails the map, not the process; the pool goes on', async () => {
  // 200 items in batches of 8: most wait in the queue, and their tasks are made when a worker is free.
  const { dir } = await setup(1);
  const items = Array.from({ length: 200 }, (_, i) => join(dir, 'src', i === 150 ? 'missing-marker' : 'f0.txt'));
  let made = 0;
  const err = await pool
    .map(
      items,
      (batch) => {
        made++;
        if (batch.some((p) => p.endsWith('missing-marker'))) throw new Error('this batch cannot be made');
        return { op: 'hash', paths: batch };
      },
      { batchSize: 8 },
    )
    .then(
      () => null,
      (e: unknown) => e as Error,
    );
  assert.ok(err, 'the map succeeded');
  assert.match(err.message, /cannot be made/);
  assert.ok(made > 1, 'tasks were made');
  const again = await pool.map(items.slice(0, 100), (batch) => ({ op: 'hash', paths: batch }), { batchSize: 8 });
  assert.is(again.length, 100, 'the pool still works');
});

test.run();
