import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BACKEND_NAMES } from '../../../backends/table.js';
import type { Receipt } from '../../../harness/receipt/receipt-types.js';
import { isPdbError } from '../../../model/errors.js';
import { analyzeReceipts } from '../../../reports/analysis/analyze.js';
import { evaluateGate } from '../../../reports/gate/gate.js';
import { type Policy } from '../../../reports/gate/gate-policy.js';
import { policySchema, validatePolicy } from '../../../reports/gate/gate-policy.js';
import { REPO_ROOT } from '../../helpers/index.js';
import { syntheticReceipt, type SyntheticOptions } from '../../helpers/synthetic-receipts.js';

/** A test policy that admits synthetic receipts (the shipped ones never do). */
function testPolicy(overrides: Partial<Policy> = {}): Policy {
  return validatePolicy({
    kind: 'pdb-env-policy',
    policyVersion: 2,
    name: 'test-reflink',
    description: 'Test policy over synthetic receipts.',
    candidate: 'reflink',
    baseline: 'full-copy',
    workloads: ['fileops'],
    hosts: { os: ['linux'], storeFs: ['btrfs', 'xfs'], minHosts: 2, minDistinctPlatforms: 2 },
    minBlocksPerWorkloadAndHost: 8,
    minFixtures: 1,
    excludeSyntheticReceipts: false,
    alpha: 0.05,
    correctness: { maxMismatches: 0, maxMismatchUpper95: 0.5, maxFailureUpper95: 0.5 },
    clone: { requireObserved: true, requireTypedFailures: true, requireFallbackEvidence: true },
    fixtures: { ratio: ['fileops-small@1'], slack: ['tiny@1*'] },
    speedup: { phases: ['create'], maxRatioUpper95: 0.5, noSlowdownPhases: ['total'] },
    slack: { phases: ['create', 'checkpoint'], maxSlowerMs: 50 },
    ...overrides,
  });
}

function twoHosts(a: Partial<SyntheticOptions> = {}, b: Partial<SyntheticOptions> = {}): Receipt[] {
  return [
    syntheticReceipt({
      runId: '20260101T000000Z-00000a',
      hostId: 'a'.repeat(64),
      cpuModel: 'CPU A',
      storeFs: 'btrfs',
      blocks: 10,
      seed: 1,
      startedAt: '2026-01-01T00:00:00.000Z',
      ...a,
    }),
    syntheticReceipt({
      runId: '20260102T000000Z-00000b',
      hostId: 'b'.repeat(64),
      cpuModel: 'CPU B',
      kernel: '6.8.0-synthetic',
      storeFs: 'xfs',
      blocks: 10,
      seed: 2,
      startedAt: '2026-01-02T00:00:00.000Z',
      ...b,
    }),
  ];
}

/** A receipt from an ext4 store where reflink failed closed with a typed probe reason. */
function ext4Probe(): Receipt {
  return syntheticReceipt({
    runId: '20260103T000000Z-00000c',
    hostId: 'c'.repeat(64),
    storeFs: 'ext4',
    backends: ['full-copy'],
    blocks: 2,
    startedAt: '2026-01-03T00:00:00.000Z',
    unavailable: [{ name: 'reflink', reason: 'E_CLONE_UNSUPPORTED' }],
  });
}

test('PROMOTE: two hosts on distinct platforms, enough blocks, clones observed, typed fallback seen, 5x faster', () => {
  const gate = evaluateGate([...twoHosts(), ext4Probe()], testPolicy());
  assert.is(
    gate.verdict,
    'PROMOTE',
    JSON.stringify(
      gate.findings.filter((f) => f.status !== 'met'),
      null,
      1,
    ),
  );
  assert.equal(gate.countedTestbeds, ['T1', 'T2']);
  assert.ok(gate.findings.every((f) => f.status === 'met'));
  for (const c of [
    'hosts',
    'blocks',
    'fixtures',
    'mismatch',
    'failure',
    'clone-observed',
    'typed-failure',
    'fallback-evidence',
    'speedup',
    'slowdown',
  ]) {
    assert.ok(
      gate.findings.some((f) => f.criterion === c),
      `criterion ${c} is listed`,
    );
  }
  // The ext4 testbed is listed as not counting, with the typed reason.
  assert.ok(gate.findings.some((f) => f.testbed === 'T3' && /outside the policy/.test(f.message)));
});

test('HOLD: one host, too few blocks and no fallback evidence; each missing item is named', () => {
  const [a] = twoHosts({ blocks: 5 });
  const gate = evaluateGate([a!], testPolicy());
  assert.is(gate.verdict, 'HOLD');
  const holds = gate.findings.filter((f) => f.status === 'hold');
  assert.ok(
    holds.some((f) => f.criterion === 'blocks' && /T1 workload fileops fixture fileops-small@1: 4 of 8/.test(f.message)),
    'blocks named',
  );
  assert.ok(
    holds.some((f) => f.criterion === 'hosts' && /0 of 2 distinct host/.test(f.message)),
    'hosts named',
  );
  assert.ok(
    holds.some((f) => f.criterion === 'fallback-evidence'),
    'fallback evidence named',
  );
  assert.not.ok(gate.findings.some((f) => f.status === 'reject'));
});

test('HOLD: a workload the policy requires has no receipts', () => {
  const gate = evaluateGate([...twoHosts(), ext4Probe()], testPolicy({ workloads: ['fileops', 'npm'] }));
  assert.is(gate.verdict, 'HOLD');
  assert.ok(gate.findings.some((f) => f.status === 'hold' && /workload npm: 0 of 8.*no fixture the policy judges/.test(f.message)));
});

test('REJECT: an oracle mismatch, every reason listed', () => {
  const counts = { content: 1, mode: 0, symlink: 0, missing: 0, extra: 0, kind: 0 };
  const receipts = twoHosts({
    mutate: (c) => {
      if (c.backend === 'reflink' && c.block === 4) {
        c.checks[0] = { ...c.checks[0]!, passed: false, mismatches: 1, counts, paths: ['src/a.txt'], detail: 'content differs' };
        c.outcome = 'mismatch';
      }
    },
  });
  const gate = evaluateGate([...receipts, ext4Probe()], testPolicy());
  assert.is(gate.verdict, 'REJECT');
  const rejects = gate.findings.filter((f) => f.status === 'reject');
  assert.equal(
    rejects.map((f) => f.criterion),
    ['mismatch'],
  );
  assert.match(rejects[0]!.message, /1 oracle mismatch/);
});

test('REJECT: a completed clone case that did not observe a clone (silent copy) and an untyped failure', () => {
  const receipts = twoHosts(
    {
      mutate: (c) => {
        if (c.backend === 'reflink' && c.block === 2) c.cloneObserved = false;
      },
    },
    {
      mutate: (c) => {
        if (c.backend === 'reflink' && c.block === 3) {
          c.outcome = 'failed';
          c.failure = { code: 'something broke', phase: 'create', message: 'untyped' };
        }
      },
    },
  );
  const gate = evaluateGate([...receipts, ext4Probe()], testPolicy());
  assert.is(gate.verdict, 'REJECT');
  const rejects = gate.findings
    .filter((f) => f.status === 'reject')
    .map((f) => f.criterion)
    .sort();
  assert.equal(rejects, ['clone-observed', 'typed-failure']);
});

test('REJECT: a workload significantly slower than full-copy (regression)', () => {
  const slow = { 'full-copy': 300, reflink: 900 };
  const gate = evaluateGate([...twoHosts({ createMs: slow }, { createMs: slow }), ext4Probe()], testPolicy());
  assert.is(gate.verdict, 'REJECT');
  assert.ok(gate.findings.some((f) => f.criterion === 'slowdown' && f.status === 'reject' && /significantly slower/.test(f.message)));
  assert.ok(gate.findings.some((f) => f.criterion === 'speedup' && f.status === 'reject'));
});

test('HOLD, not REJECT: a slow-looking candidate with fewer blocks than the policy needs', () => {
  const slow = { 'full-copy': 300, reflink: 900 };
  const gate = evaluateGate([...twoHosts({ blocks: 4, createMs: slow }, { blocks: 4, createMs: slow }), ext4Probe()], testPolicy());
  assert.is(gate.verdict, 'HOLD');
  const speed = gate.findings.filter((f) => f.criterion === 'speedup');
  assert.is(speed.length, 2);
  assert.ok(
    speed.every((f) => f.status === 'hold' && /from 3 of 8 blocks/.test(f.message)),
    JSON.stringify(speed),
  );
});

test('reusing the report analysis gives the same verdict and findings as recomputing it', () => {
  const receipts = [...twoHosts(), ext4Probe()];
  const policy = testPolicy();
  const analysis = analyzeReceipts(receipts, { baseline: policy.baseline, alpha: policy.alpha });
  assert.equal(evaluateGate(receipts, policy, { analysis }), evaluateGate(receipts, policy));
});

test('shipped policies never count synthetic receipts', () => {
  const policy = validatePolicy(JSON.parse(readFileSync(join(REPO_ROOT, 'policies', 'reflink-linux.json'), 'utf8')));
  const gate = evaluateGate([...twoHosts(), ext4Probe()], policy);
  assert.is(gate.verdict, 'HOLD');
  assert.is(gate.ignoredReceipts.length, 3);
  assert.equal(gate.countedTestbeds, []);
});

test('shipped policies validate; the schema rejects unknown fields and malformed backend names; its enum is the backend registry', () => {
  // signers.json beside them is the trusted signers document, not a policy.
  const files = readdirSync(join(REPO_ROOT, 'policies')).filter((f) => f.endsWith('.json') && f !== 'signers.json');
  assert.equal(files.sort(), ['apfs-clone-macos.json', 'btrfs-snapshot-linux.json', 'overlay-linux.json', 'reflink-linux.json']);
  for (const f of files) {
    const p = validatePolicy(JSON.parse(readFileSync(join(REPO_ROOT, 'policies', f), 'utf8')), f);
    assert.is(`${p.name}.json`, f);
  }
  const good = JSON.parse(readFileSync(join(REPO_ROOT, 'policies', 'reflink-linux.json'), 'utf8'));
  for (const bad of [
    { ...good, extra: 1 },
    { ...good, candidate: 'ZFS clone' },
    { ...good, speedup: { ...good.speedup, phases: ['Not A Phase'] } },
    { ...good, minFixtures: 0 },
  ]) {
    try {
      validatePolicy(bad);
      assert.unreachable('invalid policy accepted');
    } catch (err) {
      assert.ok(isPdbError(err, 'E_POLICY_INVALID'), String(err));
    }
  }
  // A user's own backend (from a module) is named as its module declares it.
  assert.is(validatePolicy({ ...good, candidate: 'zfs-clone' }).candidate, 'zfs-clone');
  const schema = policySchema() as { $defs: { backend: { anyOf: [{ enum: string[] }, unknown] } } };
  assert.equal(schema.$defs.backend.anyOf[0].enum, [...BACKEND_NAMES]);
});

test.run();
