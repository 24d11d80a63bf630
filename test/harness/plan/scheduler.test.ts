import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createRandom, shuffled } from '../../../harness/plan/prng.js';
import { buildSchedule } from '../../../harness/plan/scheduler.js';

const BACKENDS = ['full-copy', 'reflink', 'btrfs-snapshot', 'overlay', 'apfs-clone', 'git-worktree', 'agentfs'];
const input = (seed: number) => ({ backends: BACKENDS, workloads: ['fileops', 'two-agent'], blocks: 5, warmupBlocks: 1, seed });

test('the schedule is a reproducible function of the seed', () => {
  const a = buildSchedule(input(42));
  const b = buildSchedule(input(42));
  assert.equal(a, b);
  const c = buildSchedule(input(43));
  assert.not.equal(
    a.map((x) => x.order),
    c.map((x) => x.order),
    'another seed gives another order',
  );
});

test('every block is a permutation of the backends; rounds hold one block per workload; warm-up first', () => {
  const s = buildSchedule(input(7));
  assert.is(s.length, (5 + 1) * 2);
  for (const [i, block] of s.entries()) {
    assert.is(block.index, i);
    assert.equal([...block.order].sort(), [...BACKENDS].sort());
    assert.is(block.warmup, i < 2);
    assert.equal(
      block.cases.map((c) => c.id),
      block.order.map((_, p) => `b${i}-p${p}`),
    );
  }
  for (let r = 0; r < 6; r++) assert.equal([s[2 * r]!.workload, s[2 * r + 1]!.workload].sort(), ['fileops', 'two-agent']);
});

test('orders vary across blocks (the shuffle is not a fixed permutation)', () => {
  const s = buildSchedule(input(2026));
  assert.ok(new Set(s.map((b) => b.order.join(','))).size > 3);
});

test('a pinned seed keeps its order across versions (replay guarantee): golden orders committed here', () => {
  // If these change, receipts written before the change no longer replay from their seed: change
  // the generator only deliberately, and say so. Recorded from the sfc32/splitmix32 stream of
  // harness/plan/prng.ts; each line is one block (workload, warm-up, backend order).
  const golden = [
    ['two-agent', true, 'overlay apfs-clone btrfs-snapshot agentfs full-copy git-worktree reflink'],
    ['fileops', true, 'btrfs-snapshot reflink git-worktree full-copy overlay apfs-clone agentfs'],
    ['two-agent', false, 'overlay full-copy apfs-clone reflink agentfs btrfs-snapshot git-worktree'],
    ['fileops', false, 'apfs-clone overlay btrfs-snapshot full-copy agentfs reflink git-worktree'],
    ['two-agent', false, 'btrfs-snapshot full-copy agentfs git-worktree apfs-clone reflink overlay'],
    ['fileops', false, 'apfs-clone reflink full-copy overlay git-worktree agentfs btrfs-snapshot'],
  ];
  const s = buildSchedule({ backends: BACKENDS, workloads: ['fileops', 'two-agent'], blocks: 2, warmupBlocks: 1, seed: 20261130 });
  assert.equal(
    s.map((b) => [b.workload, b.warmup, b.order.join(' ')]),
    golden,
  );
  assert.equal(
    buildSchedule({ backends: ['a', 'b', 'c', 'd'], workloads: ['w'], blocks: 3, warmupBlocks: 0, seed: 1 }).map((b) => b.order.join('')),
    ['bcad', 'bcda', 'dbca'],
  );
  const r = createRandom(123456789);
  assert.equal(
    Array.from({ length: 5 }, () => r.int(1000)),
    [110, 853, 121, 179, 606],
  );
});

test('shuffle is roughly uniform over the positions', () => {
  const r = createRandom(99);
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < 20_000; i++) counts[shuffled([0, 1, 2, 3], r).indexOf(0)]!++;
  for (const c of counts) assert.ok(Math.abs(c - 5000) < 400, `position count ${c} is far from 5000`);
});

test('bad seeds are refused', () => {
  assert.throws(() => createRandom(-1));
  assert.throws(() => createRandom(1.5));
  assert.throws(() => createRandom(2 ** 32));
});

test.run();
