// The oracle and the outcome classes, end to end on real temporary stores: every non-full-copy case
// is compared with its block's full-copy case; the hard-link farm (the negative control) is caught in
// the first block it runs in, by the oracle and by its own backend's sibling; a block whose full-copy
// case failed judges nothing; a registry failure is environment, unless the base was damaged too.
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runBench } from '../../harness/bench.js';
import type { CaseRecord, Receipt } from '../../harness/receipt/receipt-types.js';
import { buildSchedule } from '../../harness/plan/scheduler.js';
import { validateAgainst } from '../../model/schemas.js';
import { tempDir } from '../helpers/index.js';
import { base, failing, workloads } from '../helpers/bench-workloads.js';
import { readReceiptFile } from '../../harness/receipt/envelope.js';

const check = (c: CaseRecord, name: string) => c.checks.find((k) => k.name === name);

test('the hard-link farm is caught in the first block it runs in: by the oracle and by its own sibling', async () => {
  const t = tempDir();
  try {
    const plan = base({
      name: 'negative-control',
      backends: ['full-copy', 'hardlink-farm'],
      allowTestOnlyBackends: true,
      workloads: [{ name: 'two-agent', params: { nestedFiles: 4 } }],
      blocks: 1,
    });
    const { receipt, receiptPath } = await runBench({ plan, outDir: join(t.dir, 'out'), storeParent: t.dir, workloads });
    const onDisk = readReceiptFile(receiptPath).document as Receipt;
    assert.equal(validateAgainst('receipt', onDisk), []);
    const full = onDisk.cases.find((c) => c.backend === 'full-copy')!;
    const farm = onDisk.cases.find((c) => c.backend === 'hardlink-farm')!;
    assert.is(farm.block, 0, 'the only block');
    assert.is(full.outcome, 'ok', JSON.stringify(full.failures));
    // The oracle's own result is held to the precomputed expectation; it has no oracle check itself.
    assert.is(check(full, 'expected')?.passed, true);
    assert.is(check(full, 'oracle'), undefined);
    assert.is(check(full, 'sibling-unchanged')?.passed, true);

    const oracle = check(farm, 'oracle')!;
    assert.is(farm.checks[0]!.name, 'oracle', 'the oracle check comes first');
    assert.equal([oracle.evaluated, oracle.passed], [true, false]);
    assert.equal(oracle.reference, { backend: 'full-copy', caseId: full.id });
    assert.ok(oracle.mismatches! > 0 && oracle.paths.length > 0 && oracle.paths.every((p) => !p.startsWith('/')), JSON.stringify(oracle));
    assert.ok(oracle.counts && Object.values(oracle.counts).some((n) => n > 0));
    assert.ok(farm.oracleSnapshot, "the digest of full-copy's projected result");
    // Its sibling is a hard-link farm session too: the case's in-place writes reached it.
    const sibling = check(farm, 'sibling-unchanged')!;
    assert.equal([sibling.evaluated, sibling.passed], [true, false], JSON.stringify(sibling));
    assert.ok(sibling.paths.length > 0);
    // The scripted agents saw each other's writes and failed their step first: the case is failed,
    // and its tree is still judged (a step the backend broke is no excuse), so the oracle shows it too.
    assert.is(farm.outcome, 'failed');
    assert.is(farm.failure?.code, 'E_STEP_FAILED');
    // Every failure is kept, not only the first.
    const codes = farm.failures.map((f) => f.code);
    for (const code of ['E_STEP_FAILED', 'E_ORACLE_MISMATCH', 'E_SIBLING_CHANGED']) assert.ok(codes.includes(code), codes.join(', '));
    assert.equal([receipt.summary.oracleChecked, receipt.summary.oracleMismatches, receipt.summary.oracleNotEvaluated], [1, 1, 0]);
    assert.equal(farm.fixture, full.fixture);
    assert.is(farm.fixture.workload, 'two-agent');
    assert.ok(Date.parse(farm.startedAt) <= Date.parse(farm.finishedAt));
  } finally {
    t.cleanup();
  }
});

test('every farm case fails over two workloads and blocks; the projection is applied before the comparison', async () => {
  const t = tempDir();
  try {
    const plan = base({
      name: 'projected',
      backends: ['full-copy', 'hardlink-farm'],
      allowTestOnlyBackends: true,
      workloads: [{ name: 'test-projected' }, { name: 'fileops', params: { smallFiles: 40, largeFileBytes: 65536, newSmallFiles: 10 } }],
      blocks: 2,
    });
    const { receipt } = await runBench({ plan, outDir: join(t.dir, 'out'), storeParent: t.dir, workloads });
    const full = receipt.cases.filter((c) => c.backend === 'full-copy');
    const farm = receipt.cases.filter((c) => c.backend === 'hardlink-farm');
    assert.is(full.length, 4);
    for (const c of full) assert.is(c.outcome, 'ok', `${c.id}: ${JSON.stringify(c.failures)}`);
    for (const c of farm) {
      assert.ok(['mismatch', 'failed'].includes(c.outcome), `${c.id} ${c.workload}: ${c.outcome}`);
      assert.is(check(c, 'oracle')?.evaluated, true, `${c.id}: every farm case is compared with full-copy`);
      const caught = ['oracle', 'sibling-unchanged'].filter((n) => check(c, n)?.passed === false);
      assert.ok(caught.length > 0, `${c.id} ${c.workload}: caught by neither the oracle nor its sibling`);
    }
    // In each workload's first block the case's in-place writes reach the farm's sibling.
    for (const c of farm.filter((x) => x.block < 2)) assert.is(check(c, 'sibling-unchanged')?.passed, false, c.id);
    // The random stamp is outside the projection: full-copy against itself would pass; the farm's
    // appends through shared inodes reach the base, so later farm sessions start wrong.
    const projected = farm.filter((c) => c.workload === 'test-projected').map((c) => check(c, 'oracle')!);
    assert.ok(projected.every((k) => k.evaluated));
    assert.ok(
      projected.some((k) => !k.passed && k.counts?.content === 1 && k.paths.includes('src/a.txt')),
      JSON.stringify(projected),
    );
    assert.ok(farm.some((c) => check(c, 'base-unchanged')?.passed === false));
  } finally {
    t.cleanup();
  }
});

test("a block whose full-copy case failed judges nothing: the other case's oracle is not evaluated, and it is environment", async () => {
  const t = tempDir();
  try {
    const plan = base({
      name: 'no-oracle',
      backends: ['full-copy', 'hardlink-farm'],
      allowTestOnlyBackends: true,
      workloads: [{ name: 'test-fail-once' }],
    });
    const order = buildSchedule({ backends: plan.backends, workloads: ['test-fail-once'], blocks: 1, warmupBlocks: 0, seed: plan.seed })[0]!
      .order;
    Object.assign(failing, { runs: 0, at: order.indexOf('full-copy') + 1, code: 'E_STEP_FAILED' });
    const { receipt } = await runBench({ plan, outDir: join(t.dir, 'out'), storeParent: t.dir, workloads });
    const full = receipt.cases.find((c) => c.backend === 'full-copy')!;
    const farm = receipt.cases.find((c) => c.backend === 'hardlink-farm')!;
    assert.is(full.outcome, 'failed');
    assert.is(full.failure?.code, 'E_STEP_FAILED');
    // Its own expectation is still judged (its step failed on its own, not by the environment).
    assert.equal([check(full, 'expected')?.evaluated, check(full, 'expected')?.passed], [true, false]);
    const oracle = check(farm, 'oracle')!;
    assert.equal([oracle.evaluated, oracle.passed, oracle.mismatches], [false, false, null]);
    assert.equal(oracle.reference, { backend: 'full-copy', caseId: full.id });
    assert.match(oracle.detail ?? '', `full-copy case ${full.id} ended failed`);
    assert.is(check(farm, 'expected')?.passed, true, 'its own expectation still holds');
    assert.is(farm.outcome, 'environment');
    assert.is(farm.failure?.code, 'E_ORACLE_UNAVAILABLE');
    assert.equal([receipt.summary.oracleChecked, receipt.summary.oracleNotEvaluated, receipt.summary.environment], [0, 1, 1]);
  } finally {
    t.cleanup();
  }
});

test('a registry failure is environment, never a mismatch; with the base damaged as well, the case is failed', async () => {
  const t = tempDir();
  try {
    const plan = base({
      name: 'registry',
      backends: ['full-copy', 'hardlink-farm'],
      allowTestOnlyBackends: true,
      workloads: [{ name: 'test-registry' }],
    });
    const { receipt } = await runBench({ plan, outDir: join(t.dir, 'out'), storeParent: t.dir, workloads });
    for (const c of receipt.cases) {
      assert.is(c.outcome, 'environment', `${c.backend}: ${JSON.stringify(c.failures)}`);
      assert.is(c.failure?.code, 'E_REGISTRY_UNREACHABLE');
      assert.is(check(c, 'expected')?.evaluated, false, 'the edits an install never made are not a mismatch');
    }
    assert.is(
      check(
        receipt.cases.find((c) => c.backend === 'hardlink-farm')!,
        'oracle',
      )?.evaluated,
      false,
    );
    assert.equal([receipt.summary.environment, receipt.summary.mismatch, receipt.summary.oracleMismatches], [2, 0, 0]);

    const damaged = base({ name: 'registry-damaged', workloads: [{ name: 'test-registry', params: { touchBase: true } }] });
    const r2 = (await runBench({ plan: damaged, outDir: join(t.dir, 'out2'), storeParent: t.dir, workloads })).receipt;
    const c = r2.cases[0]!;
    assert.is(c.outcome, 'failed', 'an environment case with a failed base check is failed');
    assert.is(c.failure?.code, 'E_BASE_CHANGED');
    assert.equal(
      c.failures.map((f) => f.code),
      ['E_REGISTRY_UNREACHABLE', 'E_BASE_CHANGED'],
    );
  } finally {
    t.cleanup();
  }
});

test.run();
