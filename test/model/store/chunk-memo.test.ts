// The daemon's kept cuts (model/store/chunks.ts rememberCuts, native/chunks.c): a document cut
// from the one before it is cut exactly as it would be alone, its digest is the SHA-256 of all its
// bytes, and only what differs is hashed again; the store holds every chunk it names.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sha256Digest, type Digest } from '../../../model/canonical-json.js';
import { installChunked, nativeChunkList, rememberCuts } from '../../../model/store/chunks.js';
import { ObjectStore } from '../../../model/store/object-store.js';
import { nativeUnavailable } from '../../../model/scan/scanner.js';
import { skipPart, tempDir } from '../../helpers/index.js';

const why = nativeUnavailable();
if (why) skipPart('cuts kept by native/chunks.c', 'native-scan', why);
const t = tempDir();
test.after(() => t.cleanup());
rememberCuts(64 * 1024 * 1024);

// Path-heavy text, as a Snapshot's bytes are: records that share long prefixes.
function records(n: number, seed: number): Buffer {
  const parts: string[] = [];
  for (let i = 0; i < n; i++)
    parts.push(
      `{"digest":"sha256:${(((seed + i) * 2654435761) >>> 0).toString(16).padStart(64, '0')}","path":"pkg/${i % 97}/f${i}.js","size":${i * 7}}`,
    );
  return Buffer.from(parts.join(','));
}

/** `bytes` with each edit applied: at a fraction of the length, remove `cut` bytes and insert `put`. */
function edited(bytes: Buffer, edits: Array<{ at: number; cut: number; put: string }>): Buffer {
  let out = bytes;
  for (const e of [...edits].sort((a, b) => b.at - a.at)) {
    const at = Math.floor(e.at * out.length);
    out = Buffer.concat([out.subarray(0, at), Buffer.from(e.put), out.subarray(Math.min(out.length, at + e.cut))]);
  }
  return out;
}

/** The cut of a copy of `bytes` with no document to follow: what a process without kept cuts gives. */
const alone = (bytes: Uint8Array) => nativeChunkList(Buffer.from(bytes), null)!;

test('a document cut from a kept one is cut as it is alone, named by the SHA-256 of all its bytes', () => {
  if (why) return;
  const edit = fc.record({ at: fc.double({ min: 0, max: 1, noNaN: true }), cut: fc.nat(3000), put: fc.string({ maxLength: 300 }) });
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 9000 }), fc.nat(), fc.array(edit, { maxLength: 12 }), fc.boolean(), (n, seed, edits, chain) => {
      const before = records(n, seed);
      const first = nativeChunkList(before, null)!;
      const after = edited(before, edits);
      const cut = nativeChunkList(after, first.digest)!;
      const plain = alone(after);
      assert.is(cut.digest, sha256Digest(after));
      assert.is(cut.digest, plain.digest);
      assert.ok(cut.list.equals(plain.list), 'the same chunks as alone');
      assert.ok(cut.fresh <= plain.fresh);
      if (chain) {
        // A third from the second: the kept hash states of a document that was itself cut from a kept one.
        const third = edited(after, edits.slice(0, 2));
        const again = nativeChunkList(third, cut.digest)!;
        assert.is(again.digest, sha256Digest(third));
        assert.ok(again.list.equals(alone(third).list));
      }
    }),
    { numRuns: 150 },
  );
});

test('only the chunks around a small change are hashed again, and the hash restarts from the change', () => {
  if (why) return;
  const before = records(40_000, 1); // about 4 MB: many kept hash states
  const first = nativeChunkList(before, null)!;
  const after = edited(before, [{ at: 0.9, cut: 10, put: 'changed' }]);
  const cut = nativeChunkList(after, first.digest)!;
  const plain = alone(after);
  assert.ok(plain.fresh > 1000, `${plain.fresh} chunks alone`);
  assert.ok(cut.fresh <= 4, `${cut.fresh} chunks hashed again after a 7-byte change`);
  assert.is(cut.digest, sha256Digest(after));
  // Unrelated bytes of the same length share nothing: every chunk is hashed.
  const other = randomBytes(before.length);
  assert.is(nativeChunkList(other, first.digest)!.fresh, alone(other).fresh);
});

test('installed from a kept cut, every chunk is in the store, whatever the document before was stored as', async () => {
  if (why) return;
  const store = await ObjectStore.init(join(t.dir, 's'));
  const host = store as unknown as Parameters<typeof installChunked>[0];
  const a = records(20_000, 5);
  // The document before is stored whole (an older store): its kept cut's chunks are not in the store.
  const da = nativeChunkList(a, null)!.digest;
  host.installWhole(da, a, 'doc');
  const b = edited(a, [{ at: 0.5, cut: 3, put: 'x' }]);
  const db = nativeChunkList(b, da)!.digest;
  installChunked(host, db, b, da);
  assert.ok(store.getBytes(db).equals(b));
  const c = edited(b, [{ at: 0.2, cut: 0, put: 'y' }]);
  const dc = nativeChunkList(c, db)!.digest as Digest;
  installChunked(host, dc, c, db);
  assert.ok(store.getBytes(dc).equals(c));
  const v = await store.verifyAll();
  assert.equal(v.corrupt, []);
});

test.run();
