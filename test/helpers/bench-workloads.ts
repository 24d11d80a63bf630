// Test workloads and plans for the harness tests: tiny fixtures, a sleeping step, a counting step,
// a step that appends in place (for the negative control), and one that is interrupted.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Plan } from '../../harness/plan/plan.js';
import { PdbError, type PdbErrorCode } from '../../model/errors.js';
import { WORKLOADS } from '../../workloads/registry.js';
import type { Workload } from '../../workloads/types.js';
import { readProcStat } from '../../model/os/proc.js';

export const base = (over: Partial<Plan>): Plan => ({
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

export function tinyFixture(name: string): Workload['prepareFixture'] {
  return async (workDir) => {
    const dir = join(workDir, name);
    mkdirSync(join(dir, 'src'), { recursive: true });
    writeFileSync(join(dir, 'src', 'a.txt'), 'a\n');
    return { name, sourceDir: dir };
  };
}

/** Running (a zombie waiting to be reaped by init has nothing left to run). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = readProcStat(pid);
  return stat !== null && stat.state !== 'Z';
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

export const counter = { counted: 0 };
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
        counter.counted++;
        writeFileSync(join(ctx.session.root, 'src', 'count.txt'), 'counted\n');
      },
    },
  ],
  project: (e) => e,
  projectionNote: 'identity',
  async expected(entries) {
    const { TreeModel } = await import('../../workloads/tree-model.js');
    const m = new TreeModel(entries);
    m.write('src/count.txt', 'counted\n');
    return m.result();
  },
};

// No precomputed expectation: the block's full-copy case is the oracle, through the declared projection.
export const projectedWorkload: Workload = {
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
export const abortable = { runs: 0 };
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
        abortable.runs++;
        if (abortable.runs !== 2) return;
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

export const workloads: Record<string, Workload> = {
  ...(WORKLOADS as Record<string, Workload>),
  'test-abortable': abortableWorkload,
  'test-sleep': sleepWorkload,
  'test-count': countWorkload,
  'test-projected': projectedWorkload,
};

/** Which run of its step fails (1-based, counting every case that ran it), and with which code. */
export const failing = { runs: 0, at: 0, code: 'E_STEP_FAILED' as PdbErrorCode };

// Writes only new files (nothing in place, so even the hard-link farm gets it right), and fails on the
// `failing.at`-th run: the harness tests point that at a block's full-copy case.
export const failOnceWorkload: Workload = {
  name: 'test-fail-once',
  description: 'writes a new file; one chosen run of the step fails',
  deterministic: true,
  sessions: 1,
  defaultParams: {},
  prepareFixture: tinyFixture('fail-once@1'),
  steps: () => [
    {
      name: 'write',
      timeoutMs: 10_000,
      async run(ctx) {
        failing.runs++;
        if (failing.runs === failing.at) throw new PdbError(failing.code, 'the chosen run fails');
        writeFileSync(join(ctx.session.root, 'src', 'new.txt'), 'new\n');
      },
    },
  ],
  project: (e) => e,
  projectionNote: 'identity',
  async expected(entries) {
    const { TreeModel } = await import('../../workloads/tree-model.js');
    const m = new TreeModel(entries);
    m.write('src/new.txt', 'new\n');
    return m.result();
  },
};

/** The fixture source of the registry workload, so its step can damage the base when asked. */
const registrySource = { dir: '' };

// Stands in for an install that cannot reach the registry; with touchBase it first writes into the
// base's source, which the base-unchanged check must catch whatever the step's own failure was.
export const registryWorkload: Workload = {
  name: 'test-registry',
  description: 'fails as E_REGISTRY_UNREACHABLE (after damaging the base when touchBase is set)',
  deterministic: true,
  sessions: 1,
  defaultParams: { touchBase: false },
  prepareFixture: async (workDir, params, proc) => {
    const f = await tinyFixture('registry@1')(workDir, params, proc);
    registrySource.dir = f.sourceDir;
    return f;
  },
  steps: (params) => [
    {
      name: 'install',
      timeoutMs: 10_000,
      async run() {
        if (params.touchBase === true) writeFileSync(join(registrySource.dir, 'src', 'a.txt'), 'changed behind the harness\n');
        throw new PdbError('E_REGISTRY_UNREACHABLE', 'npm ci could not reach the package registry: ENOTFOUND');
      },
    },
  ],
  project: (e) => e,
  projectionNote: 'identity',
  async expected(entries) {
    return entries;
  },
};

workloads['test-fail-once'] = failOnceWorkload;
workloads['test-registry'] = registryWorkload;
