// The worker's logic as a module: importing it starts nothing, and it judges a root in-process.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createProcessRunner } from '../../../workloads/process-runner.js';
import { twoAgentWorkload, type AgentVerdict } from '../../../workloads/two-agent/two-agent.js';
import { runTwoAgentWorker, WORKER_USAGE, type WorkerIo } from '../../../workloads/two-agent/worker.js';
import { tempDir } from '../../helpers/index.js';

function io(root: string, session: string | null) {
  const out = { stdout: '', stderr: '' };
  const edges: WorkerIo = {
    root,
    session,
    pid: 4242,
    stdout: (s) => (out.stdout += s),
    stderr: (s) => (out.stderr += s),
  };
  return { edges, out };
}

test('importing the worker module starts nothing', () => {
  assert.is(process.exitCode, undefined);
  assert.type(runTwoAgentWorker, 'function');
});

test('bad usage answers 2 with the usage line', async () => {
  const { edges, out } = io('/nonexistent', null);
  assert.is(await runTwoAgentWorker(['c', 'x', 'y'], edges), 2);
  assert.is(out.stderr, `${WORKER_USAGE}\n`);
  assert.is(out.stdout, '');
});

async function fixtureRoot(dir: string): Promise<{ root: string; barrier: string }> {
  const fixture = await twoAgentWorkload.prepareFixture(join(dir, 'fixtures'), {}, createProcessRunner());
  const barrier = join(dir, 'barrier');
  mkdirSync(barrier);
  writeFileSync(join(barrier, 'a.done'), '');
  return { root: fixture.sourceDir, barrier };
}

test('a worker in its own copy of the fixture sees exactly its own work', async () => {
  const t = tempDir();
  try {
    // The fixture is committed: its .git is an administrative root the worker's scan leaves out.
    const { root, barrier } = await fixtureRoot(t.dir);
    const { edges, out } = io(root, 'sess-b');
    assert.is(await runTwoAgentWorker(['b', 'sess-b', barrier, '3', '5000'], edges), 0, out.stdout + out.stderr);
    const v = JSON.parse(out.stdout.trim()) as AgentVerdict;
    assert.equal(v, { role: 'b', session: 'sess-b', sessionOk: true, ownWorkOnly: true, mismatches: [] });
  } finally {
    t.cleanup();
  }
});

test("a file the agent did not write (a peer's leak) fails its verdict", async () => {
  const t = tempDir();
  try {
    const { root, barrier } = await fixtureRoot(t.dir);
    writeFileSync(join(root, 'shared', 'stray.txt'), 'a leak from a peer\n');
    const { edges, out } = io(root, 'sess-b');
    assert.is(await runTwoAgentWorker(['b', 'sess-b', barrier, '3', '5000'], edges), 1);
    const v = JSON.parse(out.stdout.trim()) as AgentVerdict;
    assert.is(v.ownWorkOnly, false);
    assert.equal(v.mismatches, ['add shared/stray.txt']);
  } finally {
    t.cleanup();
  }
});

test.run();
