// One real case of each developer lane on full-copy: a session made from the fixture, every step
// through the real tools (install from the registry, tsc, tsserver, Vite, Next.js, Jest, Vitest),
// a checkpoint compared with the expected sources, the lane's checks, and discard.
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { countMismatches, totalMismatches } from '../../../model/snapshot.js';
import { scanTree } from '../../../model/scan/scan.js';
import { SessionService } from '../../../sessions/service.js';
import { createDevLane } from '../../../workloads/dev-lane/dev-lane.js';
import { installedSet } from '../../../workloads/dev-lane/installed-set.js';
import { pnpmImportMethods } from '../../../workloads/dev-lane/install.js';
import { type LaneKind } from '../../../workloads/dev-lane/fixture.js';
import { createProcessRunner } from '../../../workloads/process-runner.js';
import { parseTsserverFrames } from '../../../workloads/tools/tsserver-client.js';
import type { StepContext, Workload } from '../../../workloads/types.js';
import { decodeFrames } from '../../../workloads/tools/vite-hmr.js';
import { registryProblem, skipTest, tempDir } from '../../helpers/index.js';

const t = tempDir('pdb-lane-');
test.after(() => t.cleanup());

const problem = registryProblem();

test('tsserver frames are parsed by Content-Length header, partial frames wait', () => {
  const a = JSON.stringify({ seq: 0, type: 'event', event: 'semanticDiag', body: { file: 'x.ts', diagnostics: [] } });
  const b = JSON.stringify({ seq: 0, type: 'event', event: 'requestCompleted', body: { request_seq: 2 } });
  const frame = (s: string) => `Content-Length: ${Buffer.byteLength(s) + 1}\r\n\r\n${s}\n`;
  const msgs = parseTsserverFrames(frame(a) + frame(b) + 'Content-Length: 40\r\n\r\n{"seq":0,"ty');
  assert.is(msgs.length, 2);
  assert.is(msgs[1]!.event, 'requestCompleted');
});

test('WebSocket server frames decode, including 16-bit lengths and partial frames', () => {
  const text = JSON.stringify({ type: 'update', pad: 'x'.repeat(300) });
  const body = Buffer.from(text);
  const head = Buffer.from([0x81, 126, body.length >> 8, body.length & 0xff]);
  const small = Buffer.from([0x81, 17, ...Buffer.from('{"type":"connec')]);
  const r = decodeFrames(Buffer.concat([head, body, small]));
  assert.equal(r.texts, [text]);
  assert.is(r.rest.length, small.length, 'the incomplete frame stays unread');
});

test('pnpm import methods come from its own imported-progress records', () => {
  const lines = [
    { name: 'pnpm:progress', status: 'imported', method: 'hardlink' },
    { name: 'pnpm:progress', status: 'imported', method: 'hardlink' },
    { name: 'pnpm:progress', status: 'imported', method: 'copy' },
    { name: 'pnpm:progress', status: 'resolved' },
  ].map((x) => JSON.stringify(x));
  assert.equal(pnpmImportMethods(lines.join('\n')), { hardlink: 2, copy: 1 });
});

/** Negative control: a write through a hard-linked package file changes the shared store, and the check sees it. */
async function assertStoreMutationSeen(lane: Workload, ctx: StepContext): Promise<void> {
  const linked = realpathSync(join(ctx.session.root, 'node_modules', 'react', 'package.json'));
  const original = readFileSync(linked);
  appendFileSync(linked, ' ');
  try {
    const bad = await lane.check!(ctx, []);
    assert.is(bad.find((c) => c.name === 'pnpm-store-untouched')?.passed, false, 'a mutated store is reported');
  } finally {
    writeFileSync(linked, original);
  }
}

async function runLaneCase(kind: LaneKind): Promise<void> {
  const lane = createDevLane(kind);
  const dir = join(t.dir, kind);
  const work = join(dir, 'work');
  const shared = join(dir, 'shared');
  const scratch = join(dir, 'scratch');
  for (const d of [work, shared, scratch]) mkdirSync(d, { recursive: true });
  const proc = createProcessRunner();
  const fixture = await lane.prepareFixture(work, lane.defaultParams, proc);
  assert.match(fixture.name, new RegExp(`^${kind}-app@2\\+[0-9a-f]{8}$`));

  const svc = await SessionService.open(join(dir, 'store'), { create: true });
  const made = await svc.create('lane', { from: fixture.sourceDir, backend: 'full-copy' });
  const base = svc.readSnapshot(made.base);
  assert.ok(base.excludes.includes('node_modules'), 'the fixture excludes node_modules from its Snapshot');

  const metrics: Record<string, string | number | boolean> = {};
  const ctx: StepContext = {
    session: { name: 'lane', root: made.root },
    sessions: [{ name: 'lane', root: made.root }],
    scratchDir: scratch,
    sharedDir: shared,
    params: lane.defaultParams,
    proc,
    pdbEnvRun: () => Promise.reject(new Error('not used by the lanes')),
    pdbEnv: () => Promise.reject(new Error('not used by the lanes')),
    metric: (k, v) => (metrics[k] = v),
    log: () => undefined,
  };
  const milestones: Record<string, Record<string, number>> = {};
  try {
    for (const step of lane.steps(lane.defaultParams)) {
      const out = await step.run(ctx);
      milestones[step.name] = out?.milestones ?? {};
    }
    // Every milestone came from a tool signal and was recorded.
    assert.ok(milestones.tsserver!.firstDiagnosticsMs! > 0 && milestones.tsserver!.editDiagnosticsMs! > 0);
    assert.ok(milestones['vite-dev-hmr']!.hmrUpdateMs! >= 0 && milestones['vite-dev-hmr']!.readyMs! > 0);
    for (const w of ['jest-watch', 'vitest-watch']) assert.ok(milestones[w]!.rerunMs! > 0, `${w} rerun recorded`);
    assert.type(metrics.installedPackages, 'number');
    assert.ok((metrics.installedPackages as number) > 100);
    if (kind === 'pnpm')
      assert.ok(
        ['clone', 'hardlink', 'copy'].includes(String(metrics.pnpmImportMethod)),
        `pnpm import method recorded: ${metrics.pnpmImportMethod}`,
      );
    assert.is(installedSet(kind, made.root).length, metrics.installedPackages);

    const checks = await lane.check!(ctx, []);
    for (const c of checks) assert.ok(c.passed, `${c.name}: ${c.detail}`);
    if (kind === 'pnpm') {
      assert.ok(checks.some((c) => c.name === 'pnpm-store-untouched'));
      if (metrics.pnpmHardlinkObserved === true) await assertStoreMutationSeen(lane, ctx);
    }

    // The compared projection: exactly the expected sources (base + the lane's deterministic edits).
    const cp = await svc.checkpoint('lane');
    const result = lane.project(svc.readSnapshot(cp.snapshot).entries, lane.defaultParams);
    const expected = await lane.expected!(base.entries, lane.defaultParams);
    assert.is(totalMismatches(countMismatches(expected, result)), 0, 'result sources equal the expected sources');
    assert.is(cp.changes, 3, 'exactly the three edited source files changed');
    assert.ok(
      !result.some((e) => e.path.startsWith('node_modules/') || e.path.startsWith('.next/')),
      'generated output is not compared byte for byte',
    );
  } finally {
    await svc.discard('lane');
  }
  assert.not.ok(existsSync(svc.sessionDir('lane')), 'discard leaves nothing');
  // The base (the fixture source) is unchanged.
  const rescan = await scanTree(fixture.sourceDir, { excludes: base.excludes, excludeAbsolute: [join(dir, 'store')] });
  assert.is(totalMismatches(countMismatches(base.entries, rescan.entries)), 0, 'the fixture source is unchanged');
  // The watcher event files were written by the fixture's reporters.
  const events = readdirSync(scratch).filter((n) => n.endsWith('-events.jsonl'));
  assert.equal(events.sort(), ['jest-events.jsonl', 'vitest-events.jsonl']);
  assert.ok(readFileSync(join(scratch, 'jest-events.jsonl'), 'utf8').includes('"runComplete"'));
}

for (const kind of ['npm', 'pnpm'] as const) {
  test(`${kind} lane: one full-copy case through the real tools`, async () => {
    if (problem) return skipTest(`${kind} lane`, 'registry', problem);
    await runLaneCase(kind);
  });
}

test.run();
