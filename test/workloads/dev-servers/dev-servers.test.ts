// The dev-servers workload for real: vite dev in one session and next dev in another, at once,
// started through `pdb-env run` on each session's PORT, on full-copy (and overlay as root). The
// checks must pass, the case session's sources must be its own edit on the base, and a check must
// fail when something survives.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { countMismatches, totalMismatches } from '../../../model/snapshot.js';
import { SessionService } from '../../../sessions/service.js';
import { devServersWorkload as w } from '../../../workloads/dev-servers/dev-servers.js';
import { DEV_SERVER_EDITS } from '../../../workloads/dev-servers/edits.js';
import { hmrFindings, type HmrObservation } from '../../../workloads/dev-servers/hmr.js';
import { isGone } from '../../../workloads/dev-servers/servers.js';
import { readRecord } from '../../../workloads/dev-servers/dev-servers-steps.js';
import { createProcessRunner } from '../../../workloads/process-runner.js';
import type { StepContext } from '../../../workloads/types.js';
import { CLI, isRoot, skipTest, tempDir } from '../../helpers/index.js';
import { stepContext } from '../../helpers/workload-ctx.js';

const t = tempDir('pdb-dev-servers-');
test.after(() => t.cleanup());

/** The workload installs from the npm registry (once per run); without it, it cannot run. */
function registryProblem(): string | null {
  const r = spawnSync('npm', ['view', 'vite@8.3.8', 'version', '--prefer-online'], { encoding: 'utf8', timeout: 30_000 });
  return r.status === 0 && r.stdout.trim() === '8.3.8' ? null : `the npm registry is unreachable (npm view exited ${r.status ?? r.signal})`;
}

const good: HmrObservation = {
  aAfterOwnEdit: [DEV_SERVER_EDITS.a.module],
  aAfterPeerEdit: [],
  bAfterPeerEdit: [],
  bAfterOwnEdit: ['serverComponentChanges', 'built'],
  bPageServesOwnEdit: true,
  aServesOwnEditOnly: true,
  milestones: {},
};

test('the HMR judgement: a leaked edit on either channel, or a missing own update, is a problem', () => {
  assert.equal(hmrFindings(good), []);
  assert.match(hmrFindings({ ...good, aAfterPeerEdit: [DEV_SERVER_EDITS.b.module] }).join(), /A's Vite reported B's edit/);
  assert.match(hmrFindings({ ...good, aAfterPeerEdit: ['full-reload:src/lib/greeting.ts'] }).join(), /A's Vite reported B's edit/);
  assert.equal(
    hmrFindings({ ...good, aAfterPeerEdit: [DEV_SERVER_EDITS.a.module] }),
    [],
    "a late repeat of A's own update is not B's edit",
  );
  assert.match(hmrFindings({ ...good, bAfterPeerEdit: ['built'] }).join(), /B's Next.js reported A's edit/);
  assert.match(hmrFindings({ ...good, aAfterOwnEdit: ['full-reload:src/lib/greeting.ts'] }).join(), /did not name/);
  assert.match(hmrFindings({ ...good, bPageServesOwnEdit: false }).join(), /never served B's edit/);
});

test('parameters are checked before any work', () => {
  assert.equal(w.paramIssues!({ quietMs: 500 }), []);
  assert.is(w.paramIssues!({ quietMs: -1 }).length, 1);
  assert.is(w.paramIssues!({ port: 3000 })[0]!.pointer, '/port');
});

const problem = registryProblem();
const proc = createProcessRunner();
const shared = join(t.dir, 'shared'); // one npm ci for every case of this file, as in a run

/** A live process in `name`, started the way the servers are; ended by the caller. */
async function survivor(storeDir: string, name: string) {
  const p = proc.start(process.execPath, [CLI, 'run', name, '--store', storeDir, '--', 'sleep', '120'], { cwd: t.dir });
  const deadline = Date.now() + 30_000;
  const svc = await SessionService.open(storeDir);
  while ((await svc.ps(name)).processes.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  return p;
}

async function runCase(backend: 'full-copy' | 'overlay'): Promise<void> {
  const dir = join(t.dir, backend);
  mkdirSync(join(dir, 'work'), { recursive: true });
  const fixture = await w.prepareFixture(join(t.dir, 'work'), w.defaultParams, proc);
  const storeDir = join(dir, 'store');
  const svc = await SessionService.open(storeDir, { create: true });
  const names = ['ds-a', 'ds-b'];
  const made = [];
  for (const n of names) made.push(await svc.create(n, { from: fixture.sourceDir, backend }));
  const base = svc.readSnapshot(made[0]!.base);
  const ctx: StepContext = { ...stepContext(svc, names, join(dir, 'scratch'), w.defaultParams, base.entries), sharedDir: shared };
  try {
    const milestones: Record<string, number> = {};
    for (const step of w.steps(w.defaultParams)) Object.assign(milestones, (await step.run(ctx))?.milestones);
    assert.ok(milestones.viteHmrUpdateMs! >= 0 && milestones.nextHmrBuiltMs! >= 0, JSON.stringify(milestones));

    const results = [await svc.scanEntries('ds-a'), await svc.scanEntries('ds-b')];
    const checks = await w.check!(ctx, results);
    for (const c of checks) assert.ok(c.passed, `${backend} ${c.name}: ${c.detail}`);
    assert.equal(
      checks.map((c) => c.name),
      ['servers-answer-as-themselves', 'ports-own-blocks', 'private-tmpdirs', 'hmr-own-edit-only', 'peer-tree', 'no-survivors'],
    );
    const rec = readRecord(ctx.scratchDir)!;
    assert.not.equal(rec.servers[0]!.env!.PORT, rec.servers[1]!.env!.PORT);
    assert.ok(
      rec.servers.every((s) => s.seen.length > 0 && s.seen.every(isGone)),
      'every process seen is gone',
    );

    // The oracle's view of the case session: exactly A's edit on the base.
    const cp = await svc.checkpoint('ds-a');
    const expected = await w.expected!(base.entries, w.defaultParams);
    const result = w.project(
      svc.readSnapshot(cp.snapshot).entries.filter((e) => !e.path.startsWith('public')),
      w.defaultParams,
    );
    assert.is(totalMismatches(countMismatches(expected, result)), 0, "the case session holds exactly A's edit");

    // Negative control: a process left running in a session fails the survivor check.
    const left = await survivor(storeDir, 'ds-b');
    try {
      const bad = (await w.check!(ctx, results)).find((c) => c.name === 'no-survivors')!;
      assert.is(bad.passed, false, 'a live process in ds-b is a survivor');
      assert.match(bad.detail!, /pdb-env ps ds-b still lists/);
    } finally {
      await left.stop();
    }
  } finally {
    for (const n of names) await svc.discard(n, { force: true });
  }
  assert.not.ok(existsSync(svc.sessionDir('ds-a')), 'discard leaves nothing');
}

test('vite dev and next dev at once in two full-copy sessions: own PORT, own TMPDIR, own HMR, no survivors', async () => {
  if (problem) return skipTest('dev-servers on full-copy', 'registry', problem);
  await runCase('full-copy');
});

test('the same on overlay', async () => {
  if (problem) return skipTest('dev-servers on overlay', 'registry', problem);
  if (!isRoot()) return skipTest('dev-servers on overlay', 'overlay', 'overlay mounts need root');
  await runCase('overlay');
});

test.run();
