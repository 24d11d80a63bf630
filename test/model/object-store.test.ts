import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isPdbError } from '../../model/errors.js';
import { ObjectStore } from '../../model/object-store.js';
import { tempDir } from '../helpers.js';

const t = tempDir();
test.after(() => t.cleanup());

test('objects are deduplicated, read-only and verified on read', async () => {
  const store = await ObjectStore.init(join(t.dir, 's'));
  const a = await store.putBytes(Buffer.from('hello'));
  const b = await store.putBytes(Buffer.from('hello'));
  assert.is(a, b);
  assert.is(store.getBytes(a).toString(), 'hello');
  const path = store.objectPath(a);
  assert.is((await import('node:fs')).statSync(path).mode & 0o777, 0o444);
  chmodSync(path, 0o644);
  const bytes = readFileSync(path);
  bytes[0] ^= 0xff;
  writeFileSync(path, bytes);
  try {
    store.getBytes(a);
    assert.unreachable();
  } catch (err) {
    assert.ok(isPdbError(err, 'E_OBJECT_CORRUPT'));
  }
  const { corrupt, checked } = await store.verifyAll();
  assert.equal(corrupt, [a]);
  assert.is(checked, 1);
});

test('documents round-trip under their canonical digest', async () => {
  const store = await ObjectStore.init(join(t.dir, 's2'));
  const digest = await store.putDocument({ b: 2, a: 1 });
  assert.equal(store.getDocument(digest), { a: 1, b: 2 });
  assert.is(readFileSync(store.objectPath(digest), 'utf8'), '{"a":1,"b":2}');
});

test('opening a directory that is not a store is E_STORE_INVALID', () => {
  try {
    ObjectStore.open(t.dir);
    assert.unreachable();
  } catch (err) {
    assert.ok(isPdbError(err, 'E_STORE_INVALID'));
  }
});

test.run();
