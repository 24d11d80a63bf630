// overlay create from a verified, marked base reads only the marker: never the Snapshot's manifest.
// Without the marker (an older pdb-env, a crash before it was written) the base is checked against
// the manifest once and marked again.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { verifiedMark, type BaseMarker } from '../../backends/shared/base-tree.js';
import type { Digest } from '../../model/canonical-json.js';
import { SessionService } from '../../sessions/service.js';
import { isRoot, skipTest, tempDir, writeTree } from '../helpers/index.js';

const t = tempDir();
const made: Array<{ svc: SessionService; name: string }> = [];
test.after(async () => {
  for (const { svc, name } of made) await svc.discard(name, { force: true }); // unmounts
  t.cleanup();
});

/** Count what reads a Snapshot document out of the store. */
function countManifestReads(svc: SessionService, digest: Digest): { reads: number } {
  const seen = { reads: 0 };
  const original = svc.store.getDocument.bind(svc.store);
  svc.store.getDocument = ((d: Digest, ...rest: unknown[]) => {
    if (d === digest) seen.reads++;
    return (original as (...a: unknown[]) => unknown)(d, ...rest);
  }) as typeof svc.store.getDocument;
  return seen;
}

test('overlay create --base with a marked base reads the marker only; without the marker it verifies and marks again', async () => {
  if (!isRoot()) return skipTest('overlay marker path', 'root', 'mounting an overlay needs root');
  const src = join(t.dir, 'src');
  writeTree(src, { 'a.txt': 'alpha\n', lib: { 'b.txt': 'bravo\n', 'c.txt': 'charlie\n' } });
  const svc = await SessionService.open(join(t.dir, 'store'), { create: true });
  const probe = await svc.probe('overlay', src);
  if (!probe.available) return skipTest('overlay marker path', 'overlay', probe.detail);
  const first = await svc.create('o1', { from: src, backend: 'overlay' });
  made.push({ svc, name: 'o1' });
  const mark = verifiedMark(svc.backendContext(src), first.base, 'tree');
  assert.ok(existsSync(mark), 'the base is marked once built and verified');
  const marker = JSON.parse(readFileSync(mark, 'utf8')) as BaseMarker;
  assert.equal([marker.digest, marker.files, marker.entries], [first.base, 3, 4]);

  const spy = countManifestReads(svc, first.base);
  const fast = await svc.create('o2', { base: first.base, backend: 'overlay' });
  made.push({ svc, name: 'o2' });
  assert.is(spy.reads, 0, 'the manifest was not read');
  assert.is(fast.files, 3, 'the files count comes from the marker');
  assert.is(readFileSync(join(fast.root, 'lib', 'b.txt'), 'utf8'), 'bravo\n');
  writeFileSync(join(fast.root, 'new.txt'), 'new\n');
  assert.is((await svc.checkpoint('o2')).changes, 1);

  rmSync(mark);
  const slow = await svc.create('o3', { base: first.base, backend: 'overlay' });
  made.push({ svc, name: 'o3' });
  assert.ok(spy.reads > 0, 'without a marker the manifest is read and the base checked');
  assert.ok(existsSync(mark), 'and marked again');
  assert.is(slow.files, 3);
});

test.run();
