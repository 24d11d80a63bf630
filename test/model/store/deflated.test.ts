// Deflated chunks (model/store/deflated.ts): the chunks a following document adds are kept
// deflated apart from objects/sha256/, read back whole, and a damaged one (flipped, truncated,
// deleted) is named by verify and refused by every reader, typed.
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { canonicalBytes, type Digest } from '../../../model/canonical-json.js';
import { isPdbError, type PdbErrorCode } from '../../../model/errors.js';
import { listChunkRefs } from '../../../model/store/chunk-list.js';
import { decodeChunkList, readChunkedRecord } from '../../../model/store/chunks.js';
import { deflatedPath } from '../../../model/store/deflated.js';
import { ObjectStore } from '../../../model/store/object-store.js';
import { tempDir } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());

/** A Snapshot-like document of n entries, entry `changed` edited. */
function doc(n: number, changed = -1): unknown {
  return {
    kind: 'test-doc',
    entries: Array.from({ length: n }, (_, i) => ({ path: `pkg/${i % 40}/file${i}.ts`, size: i === changed ? 1 : i * 7, mode: 420 })),
  };
}

async function twoDocs(dir: string): Promise<{ store: ObjectStore; a: Digest; b: Digest; added: Digest[] }> {
  const store = await ObjectStore.init(join(t.dir, dir));
  const a = await store.putDocument(doc(2000));
  const b = await store.putDocument(doc(2000, 1000), a);
  const chunksOf = (d: Digest) =>
    decodeChunkList(store.getBytes((readChunkedRecord(store, d) as { list: Digest }).list))!.map((c) => c.digest);
  const before = new Set(chunksOf(a));
  return { store, a, b, added: chunksOf(b).filter((c) => !before.has(c)) };
}

test('the chunks a following document adds are kept deflated, its first document whole; both read back', async () => {
  const { store, a, b, added } = await twoDocs('s1');
  assert.ok(added.length >= 1 && added.length <= 4, `added ${added.length}`);
  for (const c of added) {
    assert.not.ok(existsSync(store.objectPath(c)), 'not whole in objects/sha256');
    const z = deflatedPath(store, c)!;
    assert.ok(existsSync(z) && readFileSync(z).length < 1024, 'deflated, smaller');
    assert.ok(store.hasPart(c));
    assert.not.ok(store.has(c), 'has() names objects a file may be materialized from: not a deflated chunk');
  }
  assert.ok(readdirSync(join(t.dir, 's1', 'objects', 'deflated')).length >= 1);
  assert.equal(store.getBytes(a), canonicalBytes(doc(2000)).bytes);
  assert.equal(store.getBytes(b), canonicalBytes(doc(2000, 1000)).bytes);
  store.assertStored(b);
  assert.equal((await store.verifyAll()).corrupt, []);
});

for (const damage of ['flip', 'truncate', 'delete'] as const) {
  test(`a deflated chunk ${damage}d: verify names it, reading and assertStored refuse it typed`, async () => {
    const { store, b, added } = await twoDocs(`s-${damage}`);
    const z = deflatedPath(store, added[0]!)!;
    chmodSync(z, 0o644);
    const bytes = readFileSync(z);
    if (damage === 'flip') bytes[bytes.length >> 1] ^= 0x40;
    if (damage === 'delete') rmSync(z);
    else writeFileSync(z, damage === 'truncate' ? bytes.subarray(0, bytes.length >> 1) : bytes);
    const refuses = (f: () => unknown, codes: PdbErrorCode[]) => {
      try {
        f();
        assert.unreachable('read a damaged chunk');
      } catch (err) {
        assert.ok(
          codes.some((c) => isPdbError(err, c)),
          String(err),
        );
      }
    };
    refuses(() => store.getBytes(b), ['E_OBJECT_CORRUPT']);
    refuses(() => store.assertStored(b), damage === 'delete' ? ['E_OBJECT_MISSING'] : ['E_OBJECT_CORRUPT']);
    const v = await store.verifyAll();
    if (damage === 'delete') assert.not.ok(store.hasPart(added[0]!));
    else assert.ok(v.corrupt.includes(added[0]!), JSON.stringify(v.corrupt));
  });
}

test('a chunk list is cut at its records, each piece decided by its own records', () => {
  const rec = (i: number) => {
    const b = Buffer.alloc(36);
    b.write(`${i}`.padStart(8, '0').repeat(8).slice(0, 64), 0, 32, 'hex');
    b.writeUInt32BE(i * 13 + 7, 28); // the boundary bytes
    return b;
  };
  const list = Buffer.concat(Array.from({ length: 400 }, (_, i) => rec(i)));
  const pieces = listChunkRefs(list);
  assert.ok(pieces.every((p) => p.size % 36 === 0 && p.size <= 64 * 36));
  assert.is(
    pieces.reduce((n, p) => n + p.size, 0),
    list.length,
  );
  // One record replaced (its boundary bytes kept): every other piece is the same.
  const edited = Buffer.from(list);
  edited[200 * 36] ^= 1;
  const again = listChunkRefs(edited);
  assert.is(again.length, pieces.length);
  assert.is(again.filter((p, i) => p.digest !== pieces[i]!.digest).length, 1);
});

test.run();
