// The harness's own peak RSS per phase: VmHWM parsed as the kernel prints it, each phase's peak
// kept (the largest of its runs), and the lifetime peak honest after resets (resetting VmHWM
// lowers what getrusage reports, so the probe must keep what it read before each reset).
import { existsSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHarnessMemoryLog, createHeapSettler, createRssProbe, readVmHwm, type RssProbe } from '../../../harness/case/memory.js';
import { skipPart } from '../../helpers/index.js';

setFlagsFromString('--expose-gc');
/** The test's own full collection, so it starts without the garbage made before it. */
const gc = runInNewContext('gc') as () => void;
const heapBytes = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
};

test('the heap settler collects before a phase only once the garbage passes its slack, then measures from what is live', () => {
  let heap = 100;
  let collections = 0;
  const settler = createHeapSettler(
    50,
    () => {
      collections++;
      heap -= 60; // what the collection freed; 70 stays live
    },
    () => heap,
  );
  assert.is(settler.settle(), false, 'nothing made yet');
  heap += 40;
  assert.is(settler.settle(), false, 'under the slack');
  heap += 30;
  assert.is(settler.settle(), true, 'past the slack');
  assert.equal([collections, heap], [1, 110]);
  // What the collection left is the new baseline: no second collection for it.
  assert.is(settler.settle(), false);
  heap += 49;
  assert.is(settler.settle(), false);
  heap += 1;
  assert.is(settler.settle(), true);
});

test('with the real collection, the garbage of a finished phase is gone before the next starts', () => {
  gc();
  const settler = createHeapSettler(32 * 2 ** 20);
  let garbage: unknown[] | null = [];
  for (let i = 0; i < 400_000; i++) garbage.push({ path: `dir/${i}/file.js`, size: i });
  garbage = null;
  const before = heapBytes();
  assert.ok(settler.settle(), 'the garbage passed the slack');
  assert.ok(before - heapBytes() > 16 * 2 ** 20, `collected ${((before - heapBytes()) / 2 ** 20).toFixed(0)} MiB`);
});

test('VmHWM is read in bytes from /proc/self/status text; anything else is not measured', () => {
  assert.is(
    readVmHwm(() => 'Name:\tnode\nVmPeak:\t  999 kB\nVmHWM:\t  2048 kB\nVmRSS:\t 1024 kB\n'),
    2048 * 1024,
  );
  assert.is(
    readVmHwm(() => 'Name:\tnode\n'),
    null,
  );
  assert.is(
    readVmHwm(() => {
      throw new Error('ENOENT');
    }),
    null,
  );
});

test('each run-level phase keeps the largest peak of its runs and how often it ran', async () => {
  const peaks = [100, 300, 200];
  let resets = 0;
  const fake: RssProbe = { method: 'vmhwm-reset', reset: () => void resets++, peak: () => peaks.shift() ?? null, lifetimePeak: () => 400 };
  const log = createHarnessMemoryLog(fake);
  assert.is(await log.measure('siblings', async () => 'made'), 'made');
  await log.measure('siblings', async () => undefined);
  await log.measure('oracle', async () => undefined).catch(() => undefined);
  await log
    .measure('prepare', async () => {
      throw new Error('failed phases are measured too');
    })
    .catch(() => undefined);
  assert.is(resets, 4);
  assert.equal(log.record(), {
    method: 'vmhwm-reset',
    processMaxRssBytes: 400,
    phases: [
      { name: 'siblings', count: 2, peakRssBytes: 300 },
      { name: 'oracle', count: 1, peakRssBytes: 200 },
      { name: 'prepare', count: 1, peakRssBytes: null },
    ],
  });
});

test('on Linux a phase that allocates shows it, and the lifetime peak survives the resets', async () => {
  if (!existsSync('/proc/self/clear_refs')) return skipPart('VmHWM reset', 'procfs', 'no /proc/self/clear_refs on this OS');
  const probe = createRssProbe();
  assert.is(probe.method, 'vmhwm-reset');
  const log = createHarnessMemoryLog(probe);
  let held: Buffer | null = null;
  await log.measure('quiet', async () => undefined);
  await log.measure('allocates', async () => {
    held = Buffer.alloc(160 * 1024 * 1024, 1); // filled, so every page is resident
  });
  probe.reset(); // a later phase's reset must not lose the peak above
  const r = log.record();
  const quiet = r.phases.find((p) => p.name === 'quiet')!.peakRssBytes!;
  const allocates = r.phases.find((p) => p.name === 'allocates')!.peakRssBytes!;
  assert.ok(allocates - quiet > 120 * 1024 * 1024, `quiet ${quiet}, allocating ${allocates}`);
  assert.ok(r.processMaxRssBytes >= allocates, `lifetime ${r.processMaxRssBytes} >= ${allocates}`);
  assert.ok(held !== null);
});

test.run();
