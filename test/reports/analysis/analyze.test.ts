import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { analyzeReceipts } from '../../../reports/analysis/analyze.js';
import { TOTAL_PHASE } from '../../../reports/analysis/report-data.js';
import { syntheticReceipt } from '../../helpers/synthetic-receipts.js';

const hostA = () =>
  syntheticReceipt({
    runId: '20260101T000000Z-00000a',
    hostId: 'a'.repeat(64),
    cpuModel: 'CPU A',
    storeFs: 'btrfs',
    blocks: 10,
    seed: 1,
    startedAt: '2026-01-01T00:00:00.000Z',
  });
const hostB = () =>
  syntheticReceipt({
    runId: '20260102T000000Z-00000b',
    hostId: 'b'.repeat(64),
    cpuModel: 'CPU B',
    storeFs: 'btrfs',
    blocks: 7,
    seed: 2,
    startedAt: '2026-01-02T00:00:00.000Z',
    createMs: { 'full-copy': 900, reflink: 300 },
  });

test('a receipt set from two hosts stays two testbeds; no cell mixes them', () => {
  const data = analyzeReceipts([hostA(), hostB()]);
  assert.is(data.testbeds.length, 2);
  assert.equal(
    data.testbeds.map((t) => [t.id, t.cpuModel, t.hostId]),
    [
      ['T1', 'CPU A', 'a'.repeat(12)],
      ['T2', 'CPU B', 'b'.repeat(12)],
    ],
  );
  const create = (tb: string, backend: string) =>
    data.cells.find((c) => c.testbed === tb && c.backend === backend && c.phase === 'create')!;
  // 10 blocks on A (1 warm-up), 7 on B (1 warm-up): each testbed keeps its own sample.
  assert.is(create('T1', 'reflink').completed, 9);
  assert.is(create('T2', 'reflink').completed, 6);
  assert.is(create('T1', 'reflink').planned, 10);
  // Host B is 3x slower for reflink; pooling would put the median between them.
  assert.ok(create('T1', 'reflink').summary.max! < 120 && create('T2', 'reflink').summary.min! > 200);
  const ratios = data.comparisons.filter((c) => c.phase === 'create');
  assert.equal(
    ratios.map((c) => [c.testbed, c.blocks]),
    [
      ['T1', 9],
      ['T2', 6],
    ],
  );
  assert.ok(Math.abs(ratios[0]!.medianRatio! - 0.2) < 0.05 && Math.abs(ratios[1]!.medianRatio! - 1 / 3) < 0.07);
  // Rates are per testbed too, over the measured cases (warm-ups out).
  assert.equal(
    data.rates.filter((r) => r.workload === '*' && r.backend === 'reflink' && r.kind === 'failure').map((r) => [r.testbed, r.bound.trials]),
    [
      ['T1', 9],
      ['T2', 6],
    ],
  );
});

test('one host with two store filesystems is two testbeds', () => {
  const btrfs = hostA();
  const xfs = syntheticReceipt({
    runId: '20260103T000000Z-00000c',
    hostId: 'a'.repeat(64),
    cpuModel: 'CPU A',
    storeFs: 'xfs',
    blocks: 6,
    startedAt: '2026-01-03T00:00:00.000Z',
  });
  const data = analyzeReceipts([xfs, btrfs]);
  assert.equal(
    data.testbeds.map((t) => [t.id, t.storeFs]),
    [
      ['T1', 'btrfs'],
      ['T2', 'xfs'],
    ],
  );
});

test('receipts of one testbed are combined, and the result does not depend on argument order', () => {
  const a1 = hostA();
  const a2 = syntheticReceipt({
    runId: '20260105T000000Z-0000a2',
    hostId: 'a'.repeat(64),
    cpuModel: 'CPU A',
    storeFs: 'btrfs',
    blocks: 5,
    seed: 9,
    startedAt: '2026-01-05T00:00:00.000Z',
  });
  const one = analyzeReceipts([a1, a2, hostB()]);
  const two = analyzeReceipts([hostB(), a2, a1]);
  assert.equal(one, two);
  assert.is(one.testbeds.length, 2);
  assert.is(one.testbeds[0]!.receipts, 2);
  // Blocks with the same index in two runs are different blocks: 9 + 4 measured pairs.
  assert.is(one.comparisons.find((c) => c.testbed === 'T1' && c.phase === 'create')!.blocks, 13);
});

test('warm-up blocks are counted and kept for charts, never in statistics', () => {
  const data = analyzeReceipts([hostA()]);
  const cell = data.cells.find((c) => c.testbed === 'T1' && c.backend === 'full-copy' && c.phase === 'create')!;
  assert.is(cell.warmup, 1);
  assert.is(cell.warmupValuesMs.length, 1);
  assert.is(cell.summary.n, 9);
  // The synthetic warm-up create is 2.5x slower; it must not be the max of the measured sample.
  assert.ok(cell.warmupValuesMs[0]! > cell.summary.max!);
});

test('failures, mismatches and clone fallbacks are counted with bounds; phases after a failure are "not reached"', () => {
  const r = syntheticReceipt({
    runId: '20260101T000000Z-0000f1',
    blocks: 10,
    mutate: (c) => {
      if (c.backend !== 'reflink') return;
      if (c.block === 3) {
        c.outcome = 'failed';
        c.failure = { code: 'E_STEP_FAILED', phase: 'checkpoint', message: 'synthetic failure' };
        c.phases = c.phases.filter((p) => p.name !== 'discard');
        c.phases.find((p) => p.name === 'checkpoint')!.outcome = 'failed';
      }
      if (c.block === 5) {
        c.checks[0] = {
          ...c.checks[0]!,
          passed: false,
          mismatches: 1,
          counts: { content: 1, mode: 0, symlink: 0, missing: 0, extra: 0, kind: 0 },
          paths: ['src/a.txt'],
        };
        c.outcome = 'mismatch';
      }
      if (c.block === 6) c.cloneObserved = false;
    },
  });
  const data = analyzeReceipts([r]);
  const rate = (kind: string) => data.rates.find((x) => x.backend === 'reflink' && x.workload === '*' && x.kind === kind)!.bound;
  // Nine measured blocks (block 0 is the warm-up, in no rate).
  assert.equal([rate('failure').events, rate('failure').trials], [1, 9]);
  assert.equal([rate('mismatch').events, rate('mismatch').trials], [1, 9]);
  assert.equal([rate('fallback').events, rate('fallback').trials], [1, 9]);
  assert.is(rate('failure').method, 'clopper-pearson');
  assert.ok(rate('failure').upper95! > 0.1 && rate('failure').upper95! < 0.5);
  // full-copy is not a clone backend: it has no fallback row.
  assert.not.ok(data.rates.some((x) => x.backend === 'full-copy' && x.kind === 'fallback'));
  const cell = (phase: string) => data.cells.find((c) => c.backend === 'reflink' && c.phase === phase)!;
  assert.is(cell('checkpoint').failed, 1);
  assert.is(cell('discard').notReached, 1);
  assert.is(cell(TOTAL_PHASE).failed, 1);
  assert.is(cell(TOTAL_PHASE).mismatch, 1);
  assert.is(cell('create').completed, 9);
});

test('planned slots come from the block orders: an unavailable backend is planned and counted, never dropped', () => {
  const r = syntheticReceipt({
    runId: '20260101T000000Z-0000u1',
    storeFs: 'ext4',
    backends: ['full-copy'],
    blocks: 4,
    unavailable: [{ name: 'reflink', reason: 'E_CLONE_UNSUPPORTED' }],
  });
  // An interrupted run: the last block's full-copy case is missing.
  r.cases = r.cases.filter((c) => c.block !== 3);
  const data = analyzeReceipts([r]);
  const reflink = data.cells.filter((c) => c.backend === 'reflink');
  assert.equal(
    reflink.map((c) => [c.phase, c.planned, c.warmup, c.unavailable, c.completed]),
    [[TOTAL_PHASE, 4, 1, 4, 0]],
  );
  const full = data.cells.find((c) => c.backend === 'full-copy' && c.phase === TOTAL_PHASE)!;
  assert.equal([full.planned, full.completed, full.notRun, full.unavailable], [4, 2, 1, 0]);
  assert.equal(data.testbeds[0]!.unavailable, [{ backend: 'reflink', reason: 'E_CLONE_UNSUPPORTED' }]);
});

test('diagnostics: slow first block, drift and outliers are reported, and no value is dropped', () => {
  const slowFirst = syntheticReceipt({
    runId: '20260101T000000Z-0000d1',
    blocks: 12,
    noise: 0.02,
    mutate: (c) => {
      if (c.block === 1) c.phases[0]!.durationMs *= 4;
    },
  });
  const d1 = analyzeReceipts([slowFirst]);
  assert.ok(d1.diagnostics.some((d) => d.kind === 'slow-first-block' && d.phase === 'create' && d.backend === 'reflink'));
  assert.ok(d1.diagnostics.some((d) => d.kind === 'outlier' && d.phase === 'create'));
  assert.is(d1.cells.find((c) => c.backend === 'reflink' && c.phase === 'create')!.summary.n, 11);

  const drifting = syntheticReceipt({
    runId: '20260101T000000Z-0000d2',
    blocks: 16,
    noise: 0.01,
    mutate: (c) => {
      c.phases[0]!.durationMs *= 1 + c.block * 0.1;
    },
  });
  const d2 = analyzeReceipts([drifting]);
  const drift = d2.diagnostics.filter((d) => d.kind === 'drift' && d.phase === 'create');
  assert.is(drift.length, 2, 'both backends drift');
  assert.match(drift[0]!.message, /rise/);
  assert.not.ok(analyzeReceipts([hostA()]).diagnostics.some((d) => d.kind === 'drift' && d.phase === 'create'));

  const few = analyzeReceipts([syntheticReceipt({ runId: '20260101T000000Z-0000d3', blocks: 4 })]);
  assert.ok(few.diagnostics.some((d) => d.kind === 'too-few-samples' && /no 95% interval/.test(d.message)));
  assert.ok(few.diagnostics.some((d) => d.kind === 'too-few-samples' && /sign-flip test cannot reach/.test(d.message)));
});

test('paired comparison: significant speed-up is "faster", equal speed is "~"', () => {
  const same = syntheticReceipt({ runId: '20260101T000000Z-0000e1', blocks: 12, createMs: { 'full-copy': 300, reflink: 300 } });
  const data = analyzeReceipts([same]);
  const create = data.comparisons.find((c) => c.phase === 'create')!;
  assert.is(create.verdict, '~');
  assert.ok(create.ci!.lower < 1 && create.ci!.upper > 1);
  const fast = analyzeReceipts([hostA()]).comparisons.find((c) => c.phase === 'create')!;
  assert.is(fast.verdict, 'faster');
  assert.ok(fast.permutation!.p > 0 && fast.permutation!.p < 0.05);
  assert.ok(fast.ci!.upper < 1);
});

test.run();
