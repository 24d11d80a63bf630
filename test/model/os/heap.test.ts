// model/os/heap.ts: the full collection a first import of a large tree makes once its walk is
// garbage (issue 38: the first create --from of 268,753 entries stayed above 300 MB RSS without it).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { boundHeapGrowth, collectAbove, fullCollection, heapBytes } from '../../../model/os/heap.js';

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

// A live set, and garbage of the same size made and dropped over and over (as the harness's scans
// are): the heap's peak, in MiB, in a process of its own (the flag is the process's for good).
const churn = (bound: boolean) =>
  Number(
    execFileSync(process.execPath, [
      '--input-type=module',
      '-e',
      `import { boundHeapGrowth } from ${JSON.stringify(new URL('../../../model/os/heap.js', import.meta.url).href)};
      if (${bound}) boundHeapGrowth(30);
      const live = Array.from({ length: 300000 }, (_, n) => ({ path: 'node_modules/p' + n + '/index.js', n }));
      let peak = 0;
      for (let r = 0; r < 12; r++) {
        let junk = Array.from({ length: 300000 }, (_, n) => ({ path: 'node_modules/q' + n + '/lib/x.js', size: n * 1.5 }));
        peak = Math.max(peak, process.memoryUsage().heapUsed);
        junk = null;
      }
      process.stdout.write(String(live.length && peak / 2 ** 20));`,
    ]).toString(),
  );

test('boundHeapGrowth keeps the garbage between full collections near the live set', () => {
  assert.ok(boundHeapGrowth(30));
  const free = churn(false);
  const bounded = churn(true);
  // Measured: about 260-300 MiB on V8's own schedule, 130 MiB bounded (a live set of about 60).
  assert.ok(bounded < free * 0.7, `peak heap ${bounded.toFixed(0)} MiB bounded, ${free.toFixed(0)} MiB on V8's own schedule`);
});

test.run();
