// model/os/heap.ts: the full collection a first import of a large tree makes once its walk is
// garbage (issue 38: the first create --from of 268,753 entries stayed above 300 MB RSS without it).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { collectAbove, fullCollection, heapBytes } from '../../../model/os/heap.js';

test('a full collection can be had at run time, without --expose-gc', () => {
  assert.type(fullCollection(), 'function');
});

test('collectAbove collects the garbage a dropped tree of objects left, once the heap holds more than the bound', () => {
  let junk: Array<{ path: string; n: number }> | null = Array.from({ length: 400_000 }, (_, n) => ({
    path: `node_modules/p${n}/index.js`,
    n,
  }));
  assert.is(junk.length, 400_000);
  junk = null;
  const before = process.memoryUsage().heapUsed;
  collectAbove(Number.MAX_SAFE_INTEGER); // never above: no collection asked for
  collectAbove(0);
  const after = process.memoryUsage().heapUsed;
  assert.ok(after < before - 16 * 1024 * 1024, `heap ${before} -> ${after}: the garbage was not collected`);
  assert.ok(heapBytes() >= process.memoryUsage().heapUsed);
});

test.run();
