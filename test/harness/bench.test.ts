// End-to-end harness runs on real temporary stores: the negative control is caught and recorded,
// a case killed by its timeout is recorded (and its processes are gone), --resume skips finished cases.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { getBackend } from '../../backends/registry.js';
import { BenchInterrupted, runBench } from '../../harness/bench.js';
import type { Plan } from '../../harness/plan.js';
import type { Receipt } from '../../harness/receipt-types.js';
import { validateAgainst } from '../../harness/schemas.js';
import { PdbError } from '../../model/errors.js';
import { WORKLOADS } from '../../workloads/registry.js';
import type { Workload } from '../../workloads/types.js';
import { skipReason, tempDir } from '../helpers.js';

const base = (over: Partial<Plan>): Plan => ({
  kind: 'pdb-env-plan',
  name: 'unit',
  backends: ['full-copy'],
  workloads: [],
  blocks: 1,
  warmupBlocks: 0,
  seed: 3,
  caseTimeoutMs: 120_000,
  ...over,
});

function tinyFixture(name: string): Workload['prepareFixture'] {
  return async (workDir) => {
    const dir = join(workDir, name);
    mkdirSync(join(dir, 'src'), { recursive: true });
    writeFileSync(join(dir, 'src', 'a.txt'), 'a\n');
    return { name, sourceDir: dir };
  };
}

/** Running (a zombie waiting to be reaped by init has nothing left to run). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

const sleepWorkload: Workload = {
  name: 'test-sleep',
  description: 'a step that runs a process far longer than the case timeout',
  deterministic: true,
  sessions: 1,
  defaultParams: { pidFile: '' },
  prepareFixture: tinyFixture('sleep@1'),
  steps: (params) => [
    {
      name: 'sleep',
      timeoutMs: 60_000,
      async run(ctx) {
        const r = await ctx.proc.run('sh', ['-c', `echo $$ > '${String(params.pidFile)}'; exec sleep 30`], {
          cwd: ctx.session.root,
          timeoutMs: 60_000,
        });
        return { process: r };
      },
    },
  ],
  project: (e) => e,
  projectionNote: 'identity',
};

let counted = 0;
const countWorkload: Workload = {
  name: 'test-count',
  description: 'counts how often its step runs',
  deterministic: true,
  sessions: 1,
  defaultParams: {},
  prepareFixture: tinyFixture('count@1'),
  steps: () => [
    {
      name: 'count',
      timeoutMs: 10_000,
      async run(ctx) {
        counted++;
        writeFileSync(join(ctx.session.root, 'src', 'count.txt'), 'counted\n');
      },
    },
  ],
  project: (e) => e,
  projectionNote: 'identity',
  async expected(entries) {
    const { TreeModel } = await import('../../workloads/fileops.js');
    const m = new TreeModel(entries);
    m.write('src/count.txt', 'counted\n');
    return m.result();
  },
};

// No precomputed expectation: the block's full-copy case is the oracle, through the declared projection.
const projectedWorkload: Workload = {
  name: 'test-projected',
  description: 'appends in place to a base file and writes a random stamp that the projection leaves out',
  deterministic: false,
  sessions: 1,
  defaultParams: {},
  prepareFixture: tinyFixture('projected@1'),
  steps: () => [
    {
      name: 'append',
      timeoutMs: 10_000,
      async run(ctx) {
        const { appendFileSync } = await import('node:fs');
        appendFileSync(join(ctx.session.root, 'src', 'a.txt'), 'appended\n');
        writeFileSync(join(ctx.session.root, 'stamp.txt'), `${Math.random()}\n`);
      },
    },
  ],
  project: (entries) => entries.filter((e) => e.path !== 'stamp.txt'),
  projectionNote: 'everything but the random stamp',
};

// Its first run finishes at once; its second starts a long sleep (the run is interrupted there).
let abortableRuns = 0;
const abortableWorkload: Workload = {
  name: 'test-abortable',
  description: 'finishes once, then sleeps in a child process until the run is interrupted',
  deterministic: true,
  sessions: 1,
  defaultParams: { pidFile: '' },
  prepareFixture: tinyFixture('abortable@1'),
  steps: (params) => [
    {
      name: 'maybe-sleep',
      timeoutMs: 60_000,
      async run(ctx) {
        abortableRuns++;
        if (abortableRuns !== 2) return;
        const r = await ctx.proc.run('sh', ['-c', `echo $$ > '${String(params.pidFile)}'; exec sleep 30`], {
          cwd: ctx.session.root,
          timeoutMs: 60_000,
        });
        return { process: r };
      },
    },
  ],
  project: (e) => e,
  projectionNote: 'identity',
  async expected(entries) {
    return entries;
  },
};

const workloads = {
  ...(WORKLOADS as Record<string, Workload>),
  'test-abortable': abortableWorkload,
  'test-sleep': sleepWorkload,
  'test-count': countWorkload,
  'test-projected': projectedWorkload,
};

test('the hardlink-farm negative control produces oracle failures that end up in the receipt', async () => {
  try {
    getBackend('hardlink-farm', { allowTestOnly: true });
  } catch (err) {
    skipReason('negative control', `hardlink-farm is not registered in this build (${(err as PdbError).code})`);
    return;
  }
  const t = tempDir();
  try {
    const plan = base({
      name: 'negative-control',
      backends: ['full-copy', 'hardlink-farm'],
      allowTestOnlyBackends: true,
      workloads: [
        { name: 'two-agent', params: { nestedFiles: 4 } },
        { name: 'fileops', params: { smallFiles: 40, largeFileBytes: 65536, newSmallFiles: 10 } },
      ],
      blocks: 2,
    });
    const { receipt, receiptPath } = await runBench({ plan, outDir: join(t.dir, 'out'), storeParent: t.dir, workloads });
    assert.ok(existsSync(receiptPath));
    const onDisk = JSON.parse(readFileSync(receiptPath, 'utf8')) as Receipt;
    assert.equal(validateAgainst('receipt', onDisk), []);
    const farm = onDisk.cases.filter((c) => c.backend === 'hardlink-farm');
    const full = onDisk.cases.filter((c) => c.backend === 'full-copy');
    assert.is(farm.length, 4);
    assert.is(full.length, 4);
    for (const c of full) assert.is(c.outcome, 'ok', `${c.id} full-copy x ${c.workload}: ${JSON.stringify(c.failure)}`);
    for (const c of farm) assert.is(c.outcome, 'failed', `${c.id} hardlink-farm x ${c.workload} must fail`);
    const oracleFailures = farm.filter((c) => c.checks.some((k) => k.name === 'oracle' && !k.passed));
    assert.ok(oracleFailures.length >= 2, `oracle failures: ${oracleFailures.map((c) => c.id).join(', ')}`);
    for (const c of oracleFailures) {
      const k = c.checks.find((x) => x.name === 'oracle')!;
      assert.ok(k.mismatches && Object.values(k.mismatches).some((n) => n > 0), 'mismatch counts recorded');
    }
    // Shared inodes also change the materialized base: the base check sees it.
    assert.ok(farm.some((c) => c.checks.some((k) => k.name === 'base-unchanged' && !k.passed)));
    assert.is(receipt.summary.oracleMismatches, oracleFailures.length);
    assert.ok(farm.every((c) => c.failure && /^E_[A-Z_]+$/.test(c.failure.code) && c.failure.phase.length > 0));
  } finally {
    t.cleanup();
  }
});

test('without a precomputed expectation the full-copy case of the block is the oracle, through the projection', async () => {
  const t = tempDir();
  try {
    const plan = base({
      name: 'deferred',
      backends: ['full-copy', 'hardlink-farm'],
      allowTestOnlyBackends: true,
      workloads: [{ name: 'test-projected' }],
      blocks: 3,
    });
    const { receipt } = await runBench({ plan, outDir: join(t.dir, 'out'), storeParent: t.dir, workloads });
    const full = receipt.cases.filter((c) => c.backend === 'full-copy');
    assert.is(full.length, 3);
    for (const c of full) {
      assert.is(c.outcome, 'ok', JSON.stringify(c.failure));
      const k = c.checks.find((x) => x.name === 'oracle');
      assert.ok(k?.passed, 'the random stamp is outside the projection');
      assert.ok(c.oracleSnapshot);
    }
    // The farm's appends go through shared inodes into its base: later farm sessions start wrong.
    const farmOracle = receipt.cases.filter((c) => c.backend === 'hardlink-farm').map((c) => c.checks.find((x) => x.name === 'oracle')!);
    assert.ok(farmOracle.filter((k) => !k.passed).length >= 2, JSON.stringify(farmOracle));
    assert.ok(farmOracle.some((k) => k.mismatches?.content === 1));
  } finally {
    t.cleanup();
  }
});

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
    counted = 0;
    let runId = '';
    await runBench({ plan, outDir, storeParent: t.dir, workloads, stopAfterCases: 2 }).then(
      () => assert.unreachable('the run must stop after 2 cases'),
      (err) => {
        assert.instance(err, BenchInterrupted);
        runId = (err as BenchInterrupted).runId;
      },
    );
    assert.is(counted, 2);
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
    assert.is(counted, 4, 'only the two unfinished cases ran again');
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
    abortableRuns = 0;
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
    assert.is(abortableRuns, 4, 'the interrupted case and the one never started ran on resume');
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
    counted = 0;
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
    assert.is(counted, 0);
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
