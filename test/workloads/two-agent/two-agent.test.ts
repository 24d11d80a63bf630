import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { countMismatches, totalMismatches } from '../../../model/snapshot.js';
import { SessionService } from '../../../sessions/service.js';
import { createProcessRunner } from '../../../workloads/process-runner.js';
import { twoAgentBaseEntries, twoAgentWorkload, WORKER_SCRIPT, type AgentVerdict } from '../../../workloads/two-agent/two-agent.js';
import { cli, tempDir } from '../../helpers/index.js';
import { stepContext } from '../../helpers/workload-ctx.js';

const PARAMS = { nestedFiles: 12, barrierTimeoutMs: 20_000 };

async function setup(t: { dir: string }, names: string[]) {
  const fixture = await twoAgentWorkload.prepareFixture(join(t.dir, 'fixtures'), PARAMS, createProcessRunner());
  const svc = await SessionService.open(join(t.dir, 'store'), { create: true });
  let baseDigest = '';
  for (const n of names) baseDigest = (await svc.create(n, { from: fixture.sourceDir, backend: 'full-copy' })).base;
  const base = svc.readSnapshot(baseDigest as `sha256:${string}`).entries;
  return { fixture, svc, base };
}

test('the known fixture entries equal the imported base (agents judge against them)', async () => {
  const t = tempDir();
  try {
    const { base } = await setup(t, ['a1']);
    assert.equal(countMismatches(twoAgentBaseEntries(), base), { content: 0, mode: 0, symlink: 0, missing: 0, extra: 0, kind: 0 });
  } finally {
    t.cleanup();
  }
});

test('two agents in two sessions at once: each sees only its own work; the base is unchanged', async () => {
  const t = tempDir();
  try {
    const { svc, base, fixture } = await setup(t, ['agent-a', 'agent-b']);
    const ctx = stepContext(svc, ['agent-a', 'agent-b'], join(t.dir, 'scratch'), PARAMS, base);
    const [step] = twoAgentWorkload.steps(PARAMS);
    const out = await step!.run(ctx);
    assert.is(out?.process?.exitCode, 0);
    assert.ok((out?.milestones?.agentAMs ?? 0) > 0 && (out?.milestones?.agentBMs ?? 0) > 0);
    const a = svc.readSnapshot((await svc.checkpoint('agent-a')).snapshot).entries;
    const b = await svc.scanEntries('agent-b');
    const expected = await twoAgentWorkload.expected!(base, PARAMS);
    assert.is(totalMismatches(countMismatches(expected, a)), 0);
    const checks = await twoAgentWorkload.check!(ctx, [a, b]);
    assert.equal(
      checks.map((c) => [c.name, c.passed]),
      [
        ['peer-oracle', true],
        ['agent-a-sees-own-work', true],
        ['agent-b-sees-own-work', true],
      ],
    );
    // Same paths, different results.
    const notes = (es: typeof a) => es.find((e) => e.path === 'shared/notes.md');
    assert.not.equal(notes(a), notes(b));
    assert.ok(a.some((e) => e.path === 'shared/moved-by-a.txt') && !a.some((e) => e.path === 'shared/moved-by-b.txt'));
    const source = await svc.importSource(fixture.sourceDir);
    assert.is(totalMismatches(countMismatches(base, source.snapshot.entries)), 0, 'the source is unchanged');
  } finally {
    t.cleanup();
  }
});

test('agents sharing one root (no isolation) fail their own verification', async () => {
  const t = tempDir();
  try {
    const { svc, base } = await setup(t, ['shared-one']);
    // One agent may crash on a path its peer already moved: a short barrier keeps the test quick.
    const params = { ...PARAMS, barrierTimeoutMs: 3000 };
    const ctx = stepContext(svc, ['shared-one', 'shared-one'], join(t.dir, 'scratch'), params, base);
    const [step] = twoAgentWorkload.steps(params);
    await step!.run(ctx).then(
      () => assert.unreachable('the agents must notice each other'),
      (err) => assert.is(err.code, 'E_STEP_FAILED'),
    );
    const entries = await svc.scanEntries('shared-one');
    const checks = await twoAgentWorkload.check!(ctx, [entries, entries]);
    assert.ok(checks.filter((c) => !c.passed).length >= 2, JSON.stringify(checks));
  } finally {
    t.cleanup();
  }
});

test('an agent checks PDB_ENV_SESSION against the session it was given', async () => {
  const t = tempDir();
  try {
    const { svc } = await setup(t, ['named']);
    const barrier = join(t.dir, 'barrier');
    mkdirSync(barrier);
    writeFileSync(join(barrier, 'b.done'), '');
    const r = cli([
      'run',
      'named',
      '--store',
      svc.store.paths.root,
      '--',
      process.execPath,
      WORKER_SCRIPT,
      'a',
      'someone-else',
      barrier,
      '2',
      '5000',
    ]);
    assert.is(r.code, 1, r.stderr);
    const v = JSON.parse(r.stdout.trim().split('\n').pop()!) as AgentVerdict;
    assert.is(v.session, 'named');
    assert.is(v.sessionOk, false);
    assert.is(v.ownWorkOnly, true);
  } finally {
    t.cleanup();
  }
});

test.run();
