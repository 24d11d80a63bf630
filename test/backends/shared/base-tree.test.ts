// A materialized base is verified when it is built (every byte hashed as it is copied) and marked;
// an unmarked base found in place is hashed once before use. Run with the test-only hard-link farm,
// which uses the shared tree base on any filesystem.
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { baseDir } from '../../../backends/shared/base-tree.js';
import type { Digest } from '../../../model/canonical-json.js';
import { isPdbError } from '../../../model/errors.js';
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

test.run();
