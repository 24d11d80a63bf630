// What may count as evidence, and how it is kept apart: receipts of schema version 1 and runs at a
// dirty or changing commit are shown but never gate evidence; every cell holds one fixture; tiny
// fixtures are judged by an absolute slack; environment cases count in no rate.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { analyzeReceipts } from '../../reports/analysis/analyze.js';
import { evaluateGate } from '../../reports/gate/gate.js';
import { type Policy } from '../../reports/gate/gate-policy.js';
import { validatePolicy } from '../../reports/gate/gate-policy.js';
import { renderMarkdown } from '../../reports/render/render.js';
import { legacyReceipt, syntheticReceipt, type SyntheticOptions } from '../helpers/synthetic-receipts.js';

function policy(over: Partial<Policy> = {}): Policy {
  return validatePolicy({
    kind: 'pdb-env-policy',
    policyVersion: 2,
    name: 'test-evidence',
    description: 'Test policy over synthetic receipts.',
    candidate: 'reflink',
    baseline: 'full-copy',
    workloads: ['fileops'],
    hosts: { os: ['linux'], minHosts: 1, minDistinctPlatforms: 1 },
    minBlocksPerWorkloadAndHost: 8,
    minFixtures: 1,
    excludeSyntheticReceipts: false,
    correctness: { maxMismatches: 0, maxMismatchUpper95: 0.5, maxFailureUpper95: 0.5 },
    clone: { requireObserved: false, requireTypedFailures: false, requireFallbackEvidence: false },
    fixtures: { ratio: ['big@1'], slack: ['tiny@1*'] },
    speedup: { phases: ['create'], maxRatioUpper95: 0.5, noSlowdownPhases: [] },
    slack: { phases: ['create'], maxSlowerMs: 50 },
    ...over,
  });
}

const run = (o: Partial<SyntheticOptions> & { runId: string }) => syntheticReceipt({ blocks: 11, ...o });

test('a schema version 1 receipt is read, shown and marked, never gate evidence', () => {
  const v2 = run({ runId: '20260101T000000Z-000001', fixtures: { fileops: 'big@1' } });
  const v1 = legacyReceipt(
    run({ runId: '20260102T000000Z-000002', fixtures: { fileops: 'big@1' }, startedAt: '2026-01-02T00:00:00.000Z' }),
    'abc1234',
  );
  const data = analyzeReceipts([v1]);
  assert.equal(
    data.receipts.map((r) => [r.schemaVersion, r.gateEvidence, r.commit]),
    [[1, false, 'abc1234']],
  );
  assert.match(data.receipts[0]!.gateEvidenceReason!, 'schema version 1');
  assert.ok(
    data.cells.some((c) => c.backend === 'reflink' && c.completed > 0),
    'its numbers are shown',
  );
  const gate = evaluateGate([v1, v2], policy());
  assert.equal(gate.ignoredReceipts, [{ runId: v1.runId, reason: `not gate evidence: ${data.receipts[0]!.gateEvidenceReason}` }]);
  const md = renderMarkdown({ data: analyzeReceipts([v1, v2]), gate, policy: policy() }).markdown;
  assert.match(md, '1 of 2 receipt(s) are not gate evidence');
  assert.match(md, 'schema version 1');
});

test('a run at a dirty commit, or whose code changed during it, is shown but refused as gate evidence', () => {
  const clean = run({ runId: '20260101T000000Z-00000a', fixtures: { fileops: 'big@1' } });
  const dirty = run({
    runId: '20260102T000000Z-00000b',
    fixtures: { fileops: 'big@1' },
    provenance: { commit: 'd'.repeat(40), dirty: true, changedDuringRun: false },
  });
  const moved = run({
    runId: '20260103T000000Z-00000c',
    fixtures: { fileops: 'big@1' },
    provenance: { commit: 'e'.repeat(40), dirty: false, changedDuringRun: true },
  });
  const gate = evaluateGate([clean, dirty, moved], policy());
  assert.equal(
    gate.ignoredReceipts.map((r) => r.runId),
    [dirty.runId, moved.runId],
  );
  assert.match(gate.ignoredReceipts[0]!.reason, 'dirty');
  assert.match(gate.ignoredReceipts[1]!.reason, 'changed during the run');
  assert.is(gate.verdict, 'PROMOTE', JSON.stringify(gate.findings.filter((f) => f.status !== 'met')));
  // Alone, the dirty run decides nothing, whatever its numbers say.
  assert.is(evaluateGate([dirty], policy()).verdict, 'HOLD');
});

test('every cell holds one fixture; blocks are counted per fixture, never pooled', () => {
  const big = run({ runId: '20260101T000000Z-0000b1', fixtures: { fileops: 'big@1' }, blocks: 6 });
  const small = run({
    runId: '20260102T000000Z-0000b2',
    fixtures: { fileops: 'small@1' },
    blocks: 6,
    startedAt: '2026-01-02T00:00:00.000Z',
  });
  const data = analyzeReceipts([big, small]);
  assert.equal(
    data.fixtures.map((f) => f.label),
    ['big@1', 'small@1'],
  );
  const create = data.comparisons.filter((c) => c.backend === 'reflink' && c.phase === 'create');
  assert.equal(
    create.map((c) => [c.fixture, c.blocks]),
    [
      ['big@1', 5],
      ['small@1', 5],
    ],
  );
  for (const c of data.cells) assert.ok(typeof c.fixture === 'string' && c.fixture.length > 0);
  // Together they would reach 8 paired blocks; apart, neither does.
  const gate = evaluateGate([big, small], policy({ fixtures: { ratio: ['big@1', 'small@1'], slack: [] } }));
  const blocks = gate.findings.filter((f) => f.criterion === 'blocks' && f.status === 'hold').map((f) => f.message);
  assert.is(blocks.length, 2, blocks.join('\n'));
  assert.ok(blocks.every((m) => / 5 of 8 paired/.test(m)));
});

test('two fixtures with one name (other parameters) get labels that tell them apart', () => {
  const a = run({ runId: '20260101T000000Z-0000c1', fixtures: { fileops: 'same@1' } });
  const b = run({ runId: '20260102T000000Z-0000c2', fixtures: { fileops: 'same@1' }, startedAt: '2026-01-02T00:00:00.000Z' });
  b.cases.forEach((c) => (c.fixture = { ...c.fixture, paramsDigest: `sha256:${'9'.repeat(64)}` }));
  const labels = analyzeReceipts([a, b]).fixtures.map((f) => f.label);
  assert.is(labels.length, 2);
  assert.ok(labels.every((l) => l.startsWith('same@1 p:')) && labels[0] !== labels[1], labels.join(' | '));
});

test('tiny fixtures get the absolute slack: within 50 ms is met, well over it is a reject, few blocks a hold', () => {
  const within = run({ runId: '20260101T000000Z-0000d1', fixtures: { fileops: 'tiny@1-x' }, createMs: { 'full-copy': 40, reflink: 60 } });
  const met = evaluateGate([within], policy());
  const slack = met.findings.filter((f) => f.criterion === 'slack');
  assert.is(slack.length, 1);
  assert.is(slack[0]!.status, 'met', slack[0]!.message);
  assert.not.ok(
    met.findings.some((f) => f.criterion === 'speedup' && f.status !== 'met'),
    'no ratio rule for a tiny fixture',
  );
  const over = run({ runId: '20260101T000000Z-0000d2', fixtures: { fileops: 'tiny@1-x' }, createMs: { 'full-copy': 40, reflink: 400 } });
  const rejected = evaluateGate([over], policy());
  assert.ok(rejected.findings.some((f) => f.criterion === 'slack' && f.status === 'reject' && /more than 50 ms slower/.test(f.message)));
  assert.is(rejected.verdict, 'REJECT');
  const few = run({
    runId: '20260101T000000Z-0000d3',
    fixtures: { fileops: 'tiny@1-x' },
    blocks: 4,
    createMs: { 'full-copy': 40, reflink: 400 },
  });
  assert.ok(evaluateGate([few], policy()).findings.some((f) => f.criterion === 'slack' && f.status === 'hold'));
  // A fixture neither list names is shown, not judged.
  const other = run({ runId: '20260101T000000Z-0000d4', fixtures: { fileops: 'other@1' } });
  assert.ok(evaluateGate([other], policy()).findings.some((f) => /not named by the policy's speed rules/.test(f.message)));
});

test('environment cases count in no rate and no statistic; they are counted apart', () => {
  const r = run({
    runId: '20260101T000000Z-0000e1',
    fixtures: { fileops: 'big@1' },
    mutate: (c) => {
      if (c.backend === 'reflink' && c.block >= 5) {
        c.outcome = 'environment';
        c.failure = { code: 'E_REGISTRY_UNREACHABLE', phase: 'step:edit', message: 'ENOTFOUND' };
        c.failures = [c.failure];
      }
    },
  });
  const data = analyzeReceipts([r]);
  const failure = data.rates.find((x) => x.backend === 'reflink' && x.workload === '*' && x.kind === 'failure')!.bound;
  assert.equal([failure.events, failure.trials], [0, 4]); // 5 attempted, one of them the warm-up
  const total = data.cells.find((c) => c.backend === 'reflink' && c.phase === 'total')!;
  assert.equal([total.completed, total.environment, total.failed], [4, 6, 0]);
  const answer = data.answers.find((a) => a.workload === 'fileops')!;
  assert.match(answer.backends.find((b) => b.backend === 'reflink')!.detail, '6 environment');
});

test('a schema version 2 receipt (its oracle trusted recorded signatures) is shown, never gate evidence', () => {
  const v3 = run({ runId: '20260101T000000Z-0000a3', fixtures: { fileops: 'big@1' } });
  const v2 = { ...run({ runId: '20260102T000000Z-0000a2', fixtures: { fileops: 'big@1' } }), schemaVersion: 2 as const };
  const gate = evaluateGate([v3, v2], policy());
  assert.ok(
    gate.ignoredReceipts.some((r) => r.runId === v2.runId && /schema version 2/.test(r.reason)),
    JSON.stringify(gate.ignoredReceipts),
  );
  assert.not.ok(gate.ignoredReceipts.some((r) => r.runId === v3.runId));
  const stale = run({
    runId: '20260103T000000Z-0000a4',
    fixtures: { fileops: 'big@1' },
    provenance: { commit: 'c'.repeat(40), dirty: false, changedDuringRun: false, staleBuild: true },
  });
  assert.ok(evaluateGate([stale], policy()).ignoredReceipts.some((r) => /older than its sources/.test(r.reason)));
});

test('correctness is judged per fixture over measured cases: four small fixtures are not one large sample, unless the policy pools them', () => {
  // Four fixtures of 11 blocks each (1 warm-up): 0 mismatches in 10 measured cases each, an upper bound of 25.9%.
  const runs = ['f1', 'f2', 'f3', 'f4'].map((f, i) => run({ runId: `2026010${i + 1}T000000Z-0000b${i}`, fixtures: { fileops: `${f}@1` } }));
  const limits = { maxMismatches: 0, maxMismatchUpper95: 0.1, maxFailureUpper95: 0.1 };
  const each = evaluateGate(runs, policy({ correctness: limits, fixtures: { ratio: ['f*'], slack: [] } }));
  const perFixture = each.findings.filter((f) => f.criterion === 'mismatch' && f.testbed !== null);
  assert.is(perFixture.length, 4, JSON.stringify(perFixture));
  assert.ok(
    perFixture.every((f) => f.status === 'hold' && /0 in 10;/.test(f.message)),
    JSON.stringify(perFixture),
  );
  assert.is(each.verdict, 'HOLD');
  const pooled = evaluateGate(runs, policy({ correctness: { ...limits, pool: ['f*'] }, fixtures: { ratio: ['f*'], slack: [] } }));
  const pool = pooled.findings.filter((f) => f.criterion === 'mismatch' && f.testbed !== null);
  assert.is(pool.length, 1);
  assert.match(pool[0]!.message, /pool \(f\*\).*0 in 40\)/);
  assert.is(pool[0]!.status, 'met');
});

test.run();
