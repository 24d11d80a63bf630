// The outcome rules, one by one, on hand-made case records: every failure is kept, one decides.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { classifyCase, notJudgedReason } from '../../../harness/case/outcome.js';
import type { CaseRecord, CheckRecord, FailureRecord } from '../../../harness/receipt/receipt-types.js';
import { agentWorkload } from '../../../workloads/agent/agent.js';

const D = `sha256:${'0'.repeat(64)}` as const;

function check(name: string, passed: boolean, evaluated = true): CheckRecord {
  return {
    name,
    passed,
    evaluated,
    mismatches: passed ? 0 : 2,
    counts: null,
    paths: passed ? [] : ['a.txt'],
    reference: null,
    detail: null,
  };
}

function record(checks: CheckRecord[], metrics: CaseRecord['metrics'] = {}): CaseRecord {
  return {
    id: 'b0-p1',
    block: 0,
    position: 1,
    warmup: false,
    backend: 'reflink',
    workload: 'w',
    startedAt: '2026-01-01T00:00:00.000Z',
    finishedAt: '2026-01-01T00:00:01.000Z',
    fixture: { name: 'w@1', workload: 'w', version: '1', paramsDigest: D, baseSnapshot: D },
    outcome: 'ok',
    failure: null,
    failures: [],
    phases: [],
    checks,
    diskBytes: null,
    cloneObserved: null,
    resultSnapshot: null,
    oracleSnapshot: null,
    wallMs: 1,
    overheadMs: 0,
    metrics,
  };
}

const fail = (code: string, phase = 'step:x'): FailureRecord => ({ code, phase, message: code });
const ok = [
  check('oracle', true),
  check('expected', true),
  check('base-unchanged', true),
  check('sibling-unchanged', true),
  check('cleanup', true),
];

test('ok: no failure, every check passed', () => {
  assert.equal(classifyCase(record(ok), [], null), { outcome: 'ok', failure: null, failures: [] });
});

test('mismatch: only the oracle (and what follows from it) failed; every failed check is kept', () => {
  const r = classifyCase(record([check('oracle', false), check('expected', false), ...ok.slice(2)]), [], null);
  assert.is(r.outcome, 'mismatch');
  assert.is(r.failure?.code, 'E_ORACLE_MISMATCH');
  assert.equal(
    r.failures.map((f) => f.code),
    ['E_ORACLE_MISMATCH', 'E_EXPECTED_MISMATCH'],
  );
  assert.match(r.failure!.message, 'a.txt');
});

test('failed: a phase failure decides, and a failed oracle is kept beside it; integrity checks alone fail too', () => {
  const r = classifyCase(record([check('oracle', false), ...ok.slice(1)]), [fail('E_STEP_FAILED')], null);
  assert.equal([r.outcome, r.failure?.code], ['failed', 'E_STEP_FAILED']);
  assert.equal(
    r.failures.map((f) => f.code),
    ['E_STEP_FAILED', 'E_ORACLE_MISMATCH'],
  );
  const integrity = classifyCase(record([...ok.slice(0, 3), check('sibling-unchanged', false), check('cleanup', false)]), [], null);
  assert.equal([integrity.outcome, integrity.failure?.code], ['failed', 'E_SIBLING_CHANGED']);
  assert.equal(
    integrity.failures.map((f) => f.code),
    ['E_SIBLING_CHANGED', 'E_CLEANUP_INCOMPLETE'],
  );
  const workloadCheck = classifyCase(record([...ok, check('installed-set', false)]), [], null);
  assert.equal([workloadCheck.outcome, workloadCheck.failure?.code], ['failed', 'E_CHECK_FAILED']);
});

test('timeout beats the rest; every other failure stays listed', () => {
  const r = classifyCase(record([check('cleanup', false)]), [fail('E_STEP_FAILED'), fail('E_TIMEOUT')], null);
  assert.equal([r.outcome, r.failure?.code], ['timeout', 'E_TIMEOUT']);
  assert.is(r.failures.length, 3);
});

test('environment: a registry failure, never a mismatch; unless a base, sibling or cleanup check failed', () => {
  const notJudged = [check('oracle', false, false), check('expected', false, false), ...ok.slice(2)];
  const env = classifyCase(record(notJudged), [fail('E_REGISTRY_UNREACHABLE', 'step:install')], null);
  assert.equal([env.outcome, env.failure?.code], ['environment', 'E_REGISTRY_UNREACHABLE']);
  assert.equal(env.failures.length, 1, 'checks that were not evaluated are not failures');
  for (const integrity of ['base-unchanged', 'sibling-unchanged', 'cleanup']) {
    const checks = notJudged.map((c) => (c.name === integrity ? check(integrity, false) : c));
    const r = classifyCase(record(checks), [fail('E_REGISTRY_UNREACHABLE')], null);
    assert.is(r.outcome, 'failed', `${integrity} failed`);
    assert.is(r.failure?.code, r.failures[1]!.code);
  }
  assert.is(
    notJudgedReason([fail('E_REGISTRY_UNREACHABLE')], {}, null),
    'not judged: the case was stopped by the environment (E_REGISTRY_UNREACHABLE)',
  );
  assert.is(notJudgedReason([fail('E_STEP_FAILED')], {}, null), null);
  assert.is(notJudgedReason([], {}, null), null);
});

test("unavailable and environment from the workload's own rule (agents); a failed cleanup still makes it failed", () => {
  const m = (code: string) => ({ agentAOutcome: code, agentAFilesTouched: false, agentBOutcome: 'ok', agentBFilesTouched: true });
  const notInstalled = classifyCase(record(ok.slice(2), m('E_AGENT_NOT_INSTALLED')), [fail('E_AGENT_NOT_INSTALLED')], agentWorkload);
  assert.is(notInstalled.outcome, 'unavailable');
  const auth = classifyCase(record(ok.slice(2), m('E_AGENT_AUTH')), [fail('E_AGENT_AUTH')], agentWorkload);
  assert.is(auth.outcome, 'environment');
  const leftover = classifyCase(
    record([check('base-unchanged', true), check('cleanup', false)], m('E_AGENT_NOT_INSTALLED')),
    [fail('E_AGENT_NOT_INSTALLED')],
    agentWorkload,
  );
  assert.equal([leftover.outcome, leftover.failure?.code], ['failed', 'E_CLEANUP_INCOMPLETE']);
});

test("environment: an otherwise clean case whose block's full-copy case failed (no oracle to judge it by)", () => {
  const r = classifyCase(record([check('oracle', false, false), ...ok.slice(1)]), [], null);
  assert.equal([r.outcome, r.failure?.code], ['environment', 'E_ORACLE_UNAVAILABLE']);
  assert.equal(r.failures, [], 'nothing failed');
});

test('a new session that already differs from its base is a mismatch, even when a step then failed for want of the files', () => {
  const checks = [check('created-tree', false), check('oracle', false), ...ok.slice(1)];
  const r = classifyCase(record(checks), [fail('E_STEP_FAILED', 'step:lint')], null);
  assert.equal([r.outcome, r.failure?.code, r.failure?.phase], ['mismatch', 'E_TREE_NOT_REPRODUCED', 'create']);
  assert.equal(
    r.failures.map((f) => f.code),
    ['E_STEP_FAILED', 'E_TREE_NOT_REPRODUCED', 'E_ORACLE_MISMATCH'],
    'every failure is kept',
  );
  assert.is(classifyCase(record(checks), [fail('E_TIMEOUT')], null).outcome, 'timeout', 'a timeout is still a timeout');
  assert.is(classifyCase(record([check('created-tree', true), ...ok]), [fail('E_STEP_FAILED')], null).outcome, 'failed');
});

test.run();
