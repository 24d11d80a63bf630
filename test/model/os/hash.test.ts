// model/os/hash.ts: SHA-256 by the native addon (where built) gives node:crypto's digest for any
// bytes, in any split into parts; random names are the length asked and do not repeat; the source
// key is the hash of the real path.
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { nodeCrypto, randomHex, sha256, sha256Hex, sourceKey } from '../../../model/os/hash.js';
import { loadNativeAddon } from '../../../model/os/native.js';
import { skipPart, tempDir } from '../../helpers/index.js';

const reference = (parts: Uint8Array[]) => {
  const h = nodeCrypto().createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest('hex');
};

test('sha256 of parts is the digest of their concatenation, as node:crypto gives it', () => {
  const addon = loadNativeAddon().addon as { sha256?: unknown } | null;
  if (typeof addon?.sha256 !== 'function') skipPart('sha256 through the addon', 'native-scan', 'the native addon is not built');
  fc.assert(
    fc.property(fc.array(fc.uint8Array({ maxLength: 70_000 }), { maxLength: 5 }), (parts) => {
      assert.is(sha256(...parts).toString('hex'), reference(parts));
    }),
    { numRuns: 60 },
  );
  assert.is(sha256Hex(''), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  assert.is(sha256Hex('é', 'x'), reference([Buffer.from('éx', 'utf8')]), 'a string is its UTF-8 bytes');
  if (typeof addon?.sha256 === 'function') {
    const call = addon.sha256 as (parts: unknown) => unknown;
    assert.throws(() => call(['not bytes']), /array of byte arrays/);
    assert.throws(() => call('nope'), /array of byte arrays/);
  }
});

test('randomHex: the length asked, and no repeats', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const r = randomHex(8);
    assert.match(r, /^[0-9a-f]{16}$/);
    seen.add(r);
  }
  assert.is(seen.size, 200);
  assert.is(randomHex(3).length, 6);
});

test('sourceKey hashes the real path: a symlink to a directory has its key', () => {
  const t = tempDir('pdb-hash-');
  try {
    const dir = join(t.dir, 'src');
    mkdirSync(dir);
    symlinkSync(dir, join(t.dir, 'link'));
    assert.is(sourceKey(join(t.dir, 'link')), sourceKey(dir));
    assert.is(sourceKey(dir).length, 16);
    assert.is(sourceKey(dir, 12), sourceKey(dir).slice(0, 12));
    assert.is.not(sourceKey(dir), sourceKey(t.dir));
  } finally {
    t.cleanup();
  }
});

test.run();
