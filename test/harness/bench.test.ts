// End-to-end harness runs on real temporary stores: a case killed by its timeout is recorded (and
// its processes are gone), --resume skips finished cases, an aborted signal stops the run, and bad
// plans (one without full-copy among them) fail before any filesystem work. The oracle and the
// negative control are in block-oracle.test.ts.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BenchInterrupted, runBench } from '../../harness/bench.js';
import type { Plan } from '../../harness/plan/plan.js';
import { PdbError } from '../../model/errors.js';
import { tempDir } from '../helpers/index.js';
import { abortable, base, counter, isAlive, workloads } from '../helpers/bench-workloads.js';

test('a case killed by its timeout is recorded, not lost, and its processes are gone', async () => {
  const t = tempDir();
  try {
    const pidFile = join(t.dir, 'sleep.pid');
    const plan = base({ name: 'timeout', workloads: [{ name: 'test-sleep', params: { pidFile } }], caseTimeoutMs: 1500 });
    const t0 = performance.now();
    const { receipt, receiptPath } = await runBench({ plan, outDir: join(t.dir, 'out'), storeParent: t.dir, workloads, graceMs: 10_000 });
    assert.ok(performance.now() - t0 < 25_000, 'the run did not wait for the 30 s sleep');
    assert.ok(existsSync(receiptPath));
    assert.is(receipt.cases.length, 1);
    const c = receipt.cases[0]!;
    assert.is(c.outcome, 'timeout');
    assert.is(c.failure?.code, 'E_TIMEOUT');
    assert.is(c.failure?.phase, 'step:sleep');
    assert.ok(c.phases.some((p) => p.name === 'step:sleep' && p.outcome === 'timeout'));
    assert.ok(
      c.checks.some((k) => k.name === 'cleanup' && k.passed),
      'the session was discarded after the timeout',
    );
    assert.is(receipt.summary.timeout, 1);
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    assert.ok(pid > 0);
    assert.not.ok(isAlive(pid), `sleep (pid ${pid}) was killed`);
  } finally {
    t.cleanup();
  }
});

test('--resume continues an interrupted run without repeating finished cases', async () => {
  const t = tempDir();
  try {
    const outDir = join(t.dir, 'out');
    const plan = base({ name: 'resume', workloads: [{ name: 'test-count' }], blocks: 4 });
    counter.counted = 0;
    let runId = '';
    await runBench({ plan, outDir, storeParent: t.dir, workloads, stopAfterCases: 2 }).then(
      () => assert.unreachable('the run must stop after 2 cases'),
      (err) => {
        assert.instance(err, BenchInterrupted);
        runId = (err as BenchInterrupted).runId;
      },
    );
    assert.is(counter.counted, 2);
    const journal = join(outDir, '.pdb-runs', runId, 'cases.jsonl');
    assert.is(readFileSync(journal, 'utf8').trim().split('\n').length, 2);
    assert.equal(
      readdirSync(outDir).filter((f) => f.endsWith('.json')),
      [],
      'no receipt for an interrupted run',
    );
    assert.equal(
      readdirSync(t.dir).filter((f) => f.startsWith('pdb-bench-')),
      [],
      'the interrupted attempt removed its store',
    );

    const { receipt } = await runBench({ outDir, resume: runId, storeParent: t.dir, workloads });
    assert.is(counter.counted, 4, 'only the two unfinished cases ran again');
    assert.is(receipt.runId, runId);
    assert.equal(
      receipt.cases.map((c) => c.id),
      ['b0-p0', 'b1-p0', 'b2-p0', 'b3-p0'],
    );
    assert.ok(
      receipt.cases.every((c) => c.outcome === 'ok'),
      JSON.stringify(receipt.cases.map((c) => c.failure)),
    );
    assert.not.ok(existsSync(join(outDir, '.pdb-runs')), 'the journal is removed once the receipt is written');

    await runBench({ outDir, resume: runId, workloads }).then(
      () => assert.unreachable('a finished run cannot be resumed'),
      (err) => assert.is((err as PdbError).code, 'E_RUN_NOT_FOUND'),
    );
  } finally {
    t.cleanup();
  }
});

test('aborting the signal kills the running case, keeps the journal and rejects with E_INTERRUPTED; --resume finishes', async () => {
  const t = tempDir();
  try {
    const outDir = join(t.dir, 'out');
    const pidFile = join(t.dir, 'abortable.pid');
    const plan = base({ name: 'abort', workloads: [{ name: 'test-abortable', params: { pidFile } }], blocks: 3 });
    abortable.runs = 0;
    const controller = new AbortController();
    // Interrupt as soon as the second case's child process is running (an event, not a sleep).
    const watcher = setInterval(() => {
      if (existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim()) controller.abort('SIGINT');
    }, 20);
    const t0 = performance.now();
    const err = await runBench({ plan, outDir, storeParent: t.dir, workloads, signal: controller.signal }).then(
      () => assert.unreachable('an interrupted run must reject'),
      (e: unknown) => e,
    );
    clearInterval(watcher);
    assert.ok(performance.now() - t0 < 25_000, 'the run did not wait for the 30 s sleep');
    assert.instance(err, PdbError);
    const e = err as PdbError;
    assert.is(e.code, 'E_INTERRUPTED', e.message);
    assert.match(e.message, 'interrupted by SIGINT');
    const runId = /--resume (\S+) --out /.exec(e.hint ?? '')?.[1];
    assert.ok(runId, `the hint says how to continue: ${e.hint}`);
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    assert.not.ok(isAlive(pid), `the running case's sleep (pid ${pid}) was killed`);
    const journal = join(outDir, '.pdb-runs', runId!, 'cases.jsonl');
    assert.is(readFileSync(journal, 'utf8').trim().split('\n').length, 1, 'the finished case is journaled, the interrupted one is not');
    assert.equal(
      readdirSync(outDir).filter((f) => f.endsWith('.json')),
      [],
      'no receipt for an interrupted run',
    );
    assert.equal(
      readdirSync(t.dir).filter((f) => f.startsWith('pdb-bench-')),
      [],
      'the interrupted attempt removed its store',
    );

    const { receipt } = await runBench({ outDir, resume: runId, storeParent: t.dir, workloads });
    assert.is(abortable.runs, 4, 'the interrupted case and the one never started ran on resume');
    assert.equal(
      receipt.cases.map((c) => [c.id, c.outcome]),
      [
        ['b0-p0', 'ok'],
        ['b1-p0', 'ok'],
        ['b2-p0', 'ok'],
      ],
    );
  } finally {
    t.cleanup();
  }
});

test('a signal aborted before the run starts rejects with E_INTERRUPTED and runs no case', async () => {
  const t = tempDir();
  try {
    counter.counted = 0;
    const plan = base({ name: 'pre-aborted', workloads: [{ name: 'test-count' }], blocks: 2 });
    const controller = new AbortController();
    controller.abort();
    await runBench({ plan, outDir: join(t.dir, 'out'), storeParent: t.dir, workloads, signal: controller.signal }).then(
      () => assert.unreachable('must reject'),
      (err) => {
        assert.is((err as PdbError).code, 'E_INTERRUPTED');
        assert.match((err as PdbError).hint ?? '', 'continue with: pdb-env bench --resume ');
      },
    );
    assert.is(counter.counted, 0);
    assert.equal(
      readdirSync(t.dir).filter((f) => f.startsWith('pdb-bench-')),
      [],
    );
  } finally {
    t.cleanup();
  }
});

test('bad plans fail before any filesystem work', async () => {
  const t = tempDir();
  try {
    const outDir = join(t.dir, 'out');
    const attempt = async (plan: unknown, code: string) =>
      runBench({ plan: plan as Plan, outDir, storeParent: t.dir, workloads }).then(
        () => assert.unreachable('must fail'),
        (err) => assert.is((err as PdbError).code, code),
      );
    await attempt(base({ backends: ['full-copy', 'hardlink-farm'], workloads: [{ name: 'test-count' }] }), 'E_PLAN_INVALID');
    // Without full-copy a block has no oracle: refused, naming the field and the fix.
    const noOracle: PdbError = await runBench({
      plan: base({ backends: ['overlay'], workloads: [{ name: 'test-count' }] }),
      outDir,
      storeParent: t.dir,
      workloads,
    }).then(
      () => {
        throw new Error('a plan without full-copy must fail');
      },
      (err: PdbError) => err,
    );
    assert.is(noOracle.code, 'E_PLAN_INVALID');
    assert.match(noOracle.message, '/backends');
    assert.match(noOracle.hint ?? '', 'full-copy');
    await attempt(base({ workloads: [{ name: 'no-such-workload' }] }), 'E_WORKLOAD_UNKNOWN');
    await attempt(base({ workloads: [{ name: 'fileops', params: { smallFile: 3 } }] }), 'E_PLAN_INVALID');
    await attempt({ ...base({ workloads: [{ name: 'test-count' }] }), surprise: true }, 'E_PLAN_INVALID');
    assert.equal(
      readdirSync(t.dir).filter((f) => f.startsWith('pdb-bench-')),
      [],
    );
  } finally {
    t.cleanup();
  }
});

test.run();
