import { chmodSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isPdbError } from '../../../model/errors.js';
import { ObjectStore } from '../../../model/store/object-store.js';
import { tempDir } from '../../helpers/index.js';

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

test('a corrupt document is quarantined and replaced by the next put of its bytes (the repair of a re-import)', async () => {
  const store = await ObjectStore.init(join(t.dir, 's3'));
  const digest = await store.putDocument({ a: 1 });
  const path = store.objectPath(digest);
  chmodSync(path, 0o644);
  writeFileSync(path, '{"a":2}');
  assert.throws(
    () => store.getDocument(digest),
    (err: unknown) => isPdbError(err, 'E_OBJECT_CORRUPT'),
  );
  assert.is(await store.putDocument({ a: 1 }), digest);
  assert.equal(store.getDocument(digest), { a: 1 });
  assert.equal(await store.quarantinedObjects(), [digest]);
  assert.is(
    readFileSync(join(store.paths.quarantine, 'objects', readdirSync(join(store.paths.quarantine, 'objects'))[0]!), 'utf8'),
    '{"a":2}',
  );
});

test('verifyAll with quarantine moves corrupt objects aside; a document that is not JSON is E_USAGE naming what was expected', async () => {
  const store = await ObjectStore.init(join(t.dir, 's4'));
  const good = await store.putBytes(Buffer.from('good'));
  const bad = await store.putBytes(Buffer.from('bad'));
  chmodSync(store.objectPath(bad), 0o644);
  writeFileSync(store.objectPath(bad), 'bAd');
  assert.equal(await store.verifyAll({ quarantine: true }), { checked: 2, corrupt: [bad] });
  assert.not.ok(store.has(bad));
  assert.equal(await store.verifyAll(), { checked: 1, corrupt: [] });
  assert.throws(
    () => store.getDocument(good, 'Snapshot'),
    (err: unknown) => isPdbError(err, 'E_USAGE') && /is not a Snapshot/.test((err as Error).message),
  );
  assert.equal(readdirSync(store.paths.tmp), [], 'no temp file is left');
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
