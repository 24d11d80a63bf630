import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sha256Digest } from '../../../model/canonical-json.js';
import {
  CHUNK_MAX,
  CHUNK_MIN,
  chunkEnds,
  chunkRefs,
  chunksNotIn,
  decodeChunkList,
  decodeChunkedRecord,
  encodeChunkList,
  encodeChunkedRecord,
  nativeChunkList,
} from '../../../model/store/chunks.js';
import { nativeUnavailable } from '../../../model/scan/scanner.js';
import { skipPart } from '../../helpers/index.js';

const why = nativeUnavailable();
if (why) skipPart('chunks cut by native/snapshot.c', 'native-scan', why);

test('chunks cover the bytes in order, each between the minimum and the maximum but the last', () => {
  const bytes = randomBytes(1 << 20);
  const ends = chunkEnds(bytes);
  assert.is(ends[ends.length - 1], bytes.length);
  let at = 0;
  for (const [i, end] of ends.entries()) {
    assert.ok(end - at <= CHUNK_MAX);
    if (i < ends.length - 1) assert.ok(end - at > CHUNK_MIN);
    at = end;
  }
  assert.ok(ends.length > 250 && ends.length < 1000, `about 2 KiB a chunk on random bytes (${ends.length} chunks in 1 MiB)`);
  assert.equal(chunkEnds(new Uint8Array(0)), []);
});

test('an edit in the middle changes the chunks around it only: the others are the same bytes', () => {
  const a = randomBytes(1 << 20);
  const b = Buffer.concat([a.subarray(0, 500_000), Buffer.from('an inserted line\n'), a.subarray(500_010)]);
  const pieces = (x: Buffer) => {
    let at = 0;
    return new Set(chunkEnds(x).map((end) => sha256Digest(x.subarray(at, (at = end)))));
  };
  const pa = pieces(a);
  const pb = pieces(b);
  const fresh = [...pb].filter((d) => !pa.has(d));
  assert.ok(fresh.length >= 1 && fresh.length <= 3, `${fresh.length} new chunks of ${pb.size}`);
});

// A Changeset's text: records sorted by path, long shared path prefixes, random digests. One more
// record inserted must cost the chunks around it, not a run of chunks after it (receipt
// bench-rhythm-20261203T121309Z-66de8d: one 211-byte file added 17 new chunks, 74 KB, of the
// session's cumulative Changeset, because the normalized cut resynchronized slowly on such text).
test('one record inserted into sorted, path-heavy text costs a few chunks, not a run of them', () => {
  const record = (i: number) => {
    const pkg = ['@babel+core@7.29.16', 'date-fns@4.1.0', 'typescript@5.9.3', 'react-dom@19.2.0'][i % 4]!;
    const path = `node_modules/.pnpm/${pkg}/node_modules/${pkg.split('@')[0]!.replace('+', '/')}/lib/part-${String(i).padStart(5, '0')}.js`;
    const d = (s: string) => sha256Digest(`${s} ${i}`);
    return `{"after":{"digest":"${d('a')}","exec":false,"kind":"file","path":"${path}","size":${1000 + i}},"before":{"digest":"${d('b')}","exec":false,"kind":"file","path":"${path}","size":${990 + i}},"kind":"modify","path":"${path}"}`;
  };
  const doc = (ids: number[]) => Buffer.from(`{"base":"${sha256Digest('base')}","changes":[${ids.map(record).join(',')}]}`);
  const pieces = (x: Buffer) => {
    let at = 0;
    return chunkEnds(x).map((end) => sha256Digest(x.subarray(at, (at = end))));
  };
  let worst = 0;
  for (let seed = 0; seed < 24; seed++) {
    const ids = Array.from({ length: 400 }, (_, i) => i * 2);
    const before = new Set(pieces(doc(ids)));
    ids.splice(seed * 16 + 3, 0, seed * 32 + 7);
    const after = doc(ids);
    let at = 0;
    let fresh = 0;
    for (const end of chunkEnds(after)) {
      if (!before.has(sha256Digest(after.subarray(at, end)))) fresh += end - at;
      at = end;
    }
    worst = Math.max(worst, fresh);
  }
  // A quarter of the rhythm goal's 64 KiB allowance for a 1-file checkpoint.
  assert.ok(worst <= 16 * 1024, `an inserted record rewrote ${worst} bytes of chunks (at most 16 KiB)`);
});

test('chunk lists and records round-trip; anything else is not one', () => {
  const refs = [
    { digest: sha256Digest('a'), size: 1 },
    { digest: sha256Digest('b'), size: 65536 },
  ];
  assert.equal(decodeChunkList(encodeChunkList(refs)), refs);
  assert.is(decodeChunkList(Buffer.from('{"a":1}')), null);
  assert.equal(decodeChunkedRecord(encodeChunkedRecord(refs[0]!.digest, 12)), { list: refs[0]!.digest, size: 12 });
  assert.is(decodeChunkedRecord('pdb-env-chunked 1 sha256:00 1\n'), null);
});

test('chunks found through a similar document’s chunks are the chunks a plain scan cuts', () => {
  const text = (seed: number) =>
    Buffer.from(
      Array.from({ length: 6000 }, (_, i) => `{"digest":"${sha256Digest(`${seed === i % 500 ? 'x' : ''}${i}`)}","path":"p/${i}"}`).join(
        ',',
      ),
    );
  const a = randomBytes(400_000);
  const edits: Array<[Buffer, Buffer]> = [
    [a, Buffer.concat([a.subarray(0, 1000), Buffer.from('x'), a.subarray(1000, 200_000), a.subarray(200_300)])],
    [a, Buffer.concat([Buffer.from('head'), a, Buffer.from('tail')])],
    [a, a.subarray(0, 399_000)],
    [a, randomBytes(100_000)],
    [text(-1), text(7)],
    [text(-1), Buffer.concat([text(-1).subarray(0, 90_000), text(3).subarray(95_000)])],
  ];
  for (const [before, after] of edits) {
    const like = chunkRefs(before);
    let at = 0;
    const plain = chunkEnds(before).map((end) => {
      const ref = { digest: sha256Digest(before.subarray(at, end)), size: end - at };
      at = end;
      return ref;
    });
    assert.equal(like, plain);
    assert.equal(chunkRefs(after, like), chunkRefs(after));
  }
});

test('the addon cuts and hashes as chunkEnds and sha256 do, and names the whole document by its digest', () => {
  if (why) return;
  const ascii = (n: number) => {
    const b = randomBytes(n);
    for (let i = 0; i < n; i++) b[i] = 32 + (b[i]! % 64);
    return b;
  };
  for (const bytes of [
    new Uint8Array(0),
    randomBytes(1),
    randomBytes(CHUNK_MIN),
    randomBytes(CHUNK_MIN + 1),
    randomBytes(CHUNK_MAX * 3),
    ascii(700_000),
    Buffer.alloc(300_000),
  ]) {
    const cut = nativeChunkList(bytes);
    assert.ok(cut, 'the addon has SHA-256 here');
    assert.is(cut!.digest, sha256Digest(bytes));
    let at = 0;
    const expected = chunkEnds(bytes).map((end) => {
      const ref = { digest: sha256Digest(bytes.subarray(at, end)), size: end - at };
      at = end;
      return ref;
    });
    assert.equal(bytes.length ? decodeChunkList(cut!.list) : [], expected, `${bytes.length} bytes`);
    if (bytes.length) assert.ok(cut!.list.equals(encodeChunkList(expected)));
  }
});

test('chunksNotIn: the chunks of a list another does not name, where each begins, as decoding both lists gives (digests sharing their first bytes too)', () => {
  // Digests from a small pool, some equal in their first 6 bytes (so in the 4 compared first) but not after (the byte compare decides).
  const pool = Array.from({ length: 12 }, (_, i) => {
    const d = randomBytes(32);
    if (i % 3 === 1) d.fill(7, 0, 6);
    return `sha256:${d.toString('hex')}`;
  });
  const refs = fc.array(fc.record({ d: fc.nat(pool.length - 1), size: fc.integer({ min: 1, max: 5000 }) }), { maxLength: 40 });
  fc.assert(
    fc.property(refs, fc.option(refs, { nil: null }), (now, before) => {
      const list = encodeChunkList(now.map((r) => ({ digest: pool[r.d]! as `sha256:${string}`, size: r.size })));
      const other = before && encodeChunkList(before.map((r) => ({ digest: pool[r.d]! as `sha256:${string}`, size: r.size })));
      const known = new Set((other ? (decodeChunkList(other) ?? []) : []).map((c) => c.digest));
      const want: Array<{ at: number; size: number; digest: string }> = [];
      let at = 0;
      for (const c of decodeChunkList(list) ?? []) {
        if (!known.has(c.digest)) want.push({ at, size: c.size, digest: c.digest });
        at += c.size;
      }
      assert.equal(chunksNotIn(list, other), want);
    }),
    { numRuns: 300 },
  );
});

test.run();
