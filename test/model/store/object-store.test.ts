import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { canonicalBytes, sha256Digest } from '../../../model/canonical-json.js';
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

/** A Snapshot-like document of `n` file entries, the `changed`th one with other bytes. */
function bigDoc(n: number, changed = -1) {
  const entries = Array.from({ length: n }, (_, i) => ({
    digest: sha256Digest(`file ${i}${i === changed ? ' changed' : ''}`),
    exec: false,
    kind: 'file',
    path: `src/dir${i % 37}/file-${i}.ts`,
    size: i,
  }));
  return { base: null, entries, excludes: [], version: 1 };
}

/** Total bytes of the files under `dir` (recursively). */
function treeBytes(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (e.isFile()) n += statSync(join(e.parentPath ?? (e as unknown as { path: string }).path, e.name)).size;
  return n;
}

test('a large document is stored as shared chunks: a one-entry change adds a few chunks, and both read back whole', async () => {
  const store = await ObjectStore.init(join(t.dir, 'c1'));
  const a = await store.putDocument(bigDoc(20_000));
  assert.not.ok(existsSync(store.objectPath(a)), 'not one object');
  assert.ok(existsSync(store.chunkedPath(a)) && store.has(a) && store.isChunked(a));
  const before = treeBytes(join(store.paths.root, 'objects'));
  const b = await store.putDocument(bigDoc(20_000, 10_000));
  const added = treeBytes(join(store.paths.root, 'objects')) - before;
  assert.ok(before > 2_000_000 && added < 64 * 1024, `a one-entry change added ${added} bytes to ${before}`);
  assert.equal(store.getDocument(a), bigDoc(20_000));
  assert.equal(store.getDocument(b), bigDoc(20_000, 10_000));
  assert.equal(canonicalBytes(store.getDocument(b)).digest, b);
  assert.ok(store.chunkParts(a).length > 100);
  assert.equal(await store.verifyAll(), { checked: (await store.verifyAll()).checked, corrupt: [] });
  assert.equal(readdirSync(store.paths.tmp), [], 'no temp file is left');
});

test('a chunk missing or damaged is E_OBJECT_CORRUPT naming the document; verify moves the damaged chunk aside and the next put repairs it', async () => {
  const store = await ObjectStore.init(join(t.dir, 'c2'));
  const doc = bigDoc(3000);
  const d = await store.putDocument(doc);
  const chunk = store.chunkParts(d).at(-1)!;
  const path = store.objectPath(chunk);
  const good = readFileSync(path);
  chmodSync(path, 0o644);
  writeFileSync(path, Buffer.concat([good.subarray(0, 10), Buffer.from('X'), good.subarray(11)]));
  const named = (err: unknown) => isPdbError(err, 'E_OBJECT_CORRUPT') && (err as Error).message.includes(d);
  assert.throws(() => store.getDocument(d), named);
  const v = await store.verifyAll({ quarantine: true });
  assert.equal(v.corrupt, [chunk], 'the chunk, not the document');
  assert.not.ok(store.has(chunk));
  assert.throws(
    () => store.getDocument(d),
    (err: unknown) => named(err) && /misses its chunk/.test((err as Error).message),
  );
  assert.is(await store.putDocument(doc), d);
  assert.equal(store.getDocument(d), doc);
  // The chunk list: one object, or (a list larger than LIST_THRESHOLD) a record naming its own list.
  const list = store.chunkParts(d)[0]!;
  rmSync(store.isChunked(list) ? store.chunkedPath(list) : store.objectPath(list));
  assert.throws(
    () => store.getDocument(d),
    (err: unknown) => named(err) && /chunk list/.test((err as Error).message),
  );
});

test('a document over the threshold that is one chunk is kept whole: no list that nothing reaches', async () => {
  const store = await ObjectStore.init(join(t.dir, 'c4'));
  const d = await store.putDocument({ text: 'a'.repeat(20_000) }); // no boundary in repeated bytes before the maximum
  assert.ok(existsSync(store.objectPath(d)) && !store.isChunked(d));
  assert.equal(readdirSync(join(store.paths.objects, '..')), ['sha256']);
  assert.is(store.getDocument<{ text: string }>(d).text.length, 20_000);
});

test('a large document stored whole (before chunks) stays whole and readable', async () => {
  const store = await ObjectStore.init(join(t.dir, 'c3'));
  const doc = bigDoc(3000);
  const { bytes, digest } = canonicalBytes(doc);
  assert.is(await store.putBytes(bytes), digest, 'as an older pdb-env installed it');
  assert.is(await store.putDocument(doc), digest);
  assert.ok(existsSync(store.objectPath(digest)) && !store.isChunked(digest));
  assert.equal(store.chunkParts(digest), []);
  assert.equal(store.getDocument(digest), doc);
});

test.run();
