// The agentfs backend as production runs it: the binary is found, held to the pin, and must pass a
// real trial. The executable used here is the STAND-IN (test/fixtures/agentfs-stand-in), never
// AgentFS; even with its checksum pinned, the production probe refuses it, because it cannot make
// an AgentFS FUSE mount. No test here, or anywhere, sees agentfs available.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { agentfsBackend, probeAgentfs } from '../../../backends/agentfs/agentfs.js';
import { AGENTFS_BIN_ENV, AGENTFS_CONFIG_FILE, AGENTFS_SHA256_ENV } from '../../../backends/agentfs/pin.js';
import type { BackendContext, ProbeResult } from '../../../backends/types.js';
import { ObjectStore } from '../../../model/store/object-store.js';
import { REPO_ROOT, tempDir } from '../../helpers/index.js';
import { QUICK, STAND_IN, copyStandIn, leftovers, sha256Of, standInEnv, type StandInMode } from '../../helpers/agentfs-stand-in.js';

const t = tempDir('pdb-agentfs-');
test.after(() => t.cleanup());

let n = 0;
async function context(): Promise<BackendContext> {
  const store = await ObjectStore.init(join(t.dir, `store-${++n}`));
  return { store, probeDir: store.paths.tmp };
}

/** The production probe with the stand-in as the binary, its sha256 pinned through the environment. */
async function probePinnedStandIn(ctx: BackendContext, mode: StandInMode): Promise<ProbeResult> {
  const r = await probeAgentfs(ctx, {
    env: standInEnv(mode, { [AGENTFS_BIN_ENV]: STAND_IN, [AGENTFS_SHA256_ENV]: sha256Of(STAND_IN) }),
    timeouts: QUICK,
  });
  assert.is(r.available, false, 'a stand-in never makes agentfs available');
  return r;
}

test('no binary: E_AGENTFS_MISSING, through the variable or PATH', async () => {
  const ctx = await context();
  const viaPath = await probeAgentfs(ctx, { env: { PATH: join(t.dir, 'empty-path') } });
  assert.is(viaPath.available, false);
  assert.is(viaPath.reason, 'E_AGENTFS_MISSING');
  assert.equal(viaPath.evidence, { found: false, via: 'PATH' });
  const viaEnv = await probeAgentfs(ctx, { env: { [AGENTFS_BIN_ENV]: join(t.dir, 'nope'), PATH: '' } });
  assert.is(viaEnv.reason, 'E_AGENTFS_MISSING');
  assert.is(viaEnv.evidence.via, AGENTFS_BIN_ENV);
});

test('a binary with no pin: E_AGENTFS_CHECKSUM says the pin is missing (found on PATH or through the variable)', async () => {
  const ctx = await context();
  const dir = join(t.dir, 'bin-unpinned');
  mkdirSync(dir);
  const bin = copyStandIn(dir);
  for (const env of [{ PATH: dir }, { [AGENTFS_BIN_ENV]: bin }]) {
    const r = await probeAgentfs(ctx, { env });
    assert.is(r.reason, 'E_AGENTFS_CHECKSUM');
    assert.is(r.evidence.checksum, 'missing');
    assert.is(r.evidence.sha256, sha256Of(bin));
    assert.match(r.detail, /no sha256 is pinned/);
  }
});

test('a pin that does not match: E_AGENTFS_CHECKSUM names both values and where the pin came from', async () => {
  const ctx = await context();
  const dir = join(t.dir, 'bin-other');
  mkdirSync(dir);
  const bin = copyStandIn(dir, 'other bytes');
  const pinned = sha256Of(STAND_IN);
  assert.is.not(sha256Of(bin), pinned);
  const viaEnv = await probeAgentfs(ctx, { env: { [AGENTFS_BIN_ENV]: bin, [AGENTFS_SHA256_ENV]: pinned } });
  assert.is(viaEnv.reason, 'E_AGENTFS_CHECKSUM');
  assert.equal([viaEnv.evidence.checksum, viaEnv.evidence.pinnedBy], ['mismatch', AGENTFS_SHA256_ENV]);
  assert.ok(viaEnv.detail.includes(pinned) && viaEnv.detail.includes(sha256Of(bin)), viaEnv.detail);

  writeFileSync(join(ctx.store.paths.root, AGENTFS_CONFIG_FILE), JSON.stringify({ sha256: pinned, note: 'checked by hand' }));
  const viaStore = await probeAgentfs(ctx, { env: { [AGENTFS_BIN_ENV]: bin } });
  assert.equal(
    [viaStore.reason, viaStore.evidence.checksum, viaStore.evidence.pinnedBy],
    ['E_AGENTFS_CHECKSUM', 'mismatch', 'store-config'],
  );
  // The variable takes precedence over the store's file.
  const both = await probeAgentfs(ctx, { env: { [AGENTFS_BIN_ENV]: bin, [AGENTFS_SHA256_ENV]: 'f'.repeat(64) } });
  assert.is(both.evidence.pinnedBy, AGENTFS_SHA256_ENV);
});

test('an unusable pin is E_AGENTFS_CHECKSUM "invalid", checked against schemas/agentfs-config.schema.json', async () => {
  const ctx = await context();
  const config = join(ctx.store.paths.root, AGENTFS_CONFIG_FILE);
  const env = { [AGENTFS_BIN_ENV]: STAND_IN };
  for (const [text, why] of [
    ['{"sha256": "abc"}', /\/sha256 must match pattern/],
    [`{"sha256": "${'a'.repeat(64)}", "version": "0.6.4"}`, /\/version is not allowed/],
    ['{not json', /not valid JSON/],
  ] as const) {
    writeFileSync(config, text);
    const r = await probeAgentfs(ctx, { env });
    assert.equal([r.reason, r.evidence.checksum, r.evidence.pinnedBy], ['E_AGENTFS_CHECKSUM', 'invalid', 'store-config']);
    assert.match(r.detail, why);
  }
  const bad = await probeAgentfs(ctx, { env: { ...env, [AGENTFS_SHA256_ENV]: 'not-a-sha' } });
  assert.equal([bad.evidence.checksum, bad.evidence.pinnedBy], ['invalid', AGENTFS_SHA256_ENV]);
});

test('a pinned stand-in that mounts is still refused: its mount is not an AgentFS FUSE mount (E_AGENTFS_PROBE at "mount")', async () => {
  const ctx = await context();
  const r = await probePinnedStandIn(ctx, 'ok');
  assert.is(r.reason, 'E_AGENTFS_PROBE');
  assert.equal([r.evidence.checksum, r.evidence.trial, r.evidence.step, r.evidence.timedOut], ['match', 'failed', 'mount', false]);
  // As root the stand-in bind-mounts, and the mount check names what it found; otherwise its mount command fails.
  assert.match(r.detail, /not an AgentFS FUSE mount|agentfs mount exited/);
  assert.equal(leftovers(ctx.probeDir), []);
});

test('each failing step is E_AGENTFS_PROBE naming the step; a hang is killed within the bound; nothing is left', async () => {
  const cases: [StandInMode, string, RegExp, boolean][] = [
    ['init-fail', 'init', /agentfs init exited 1: agentfs stand-in: init failed on purpose/, false],
    ['init-hang', 'init', /agentfs init did not finish within 1500 ms \(its process group was killed\)/, true],
    ['init-garbage', 'init', /exited 0 but made no \.agentfs\/trial\.db/, false],
    ['mount-fail', 'mount', /agentfs mount exited 1: agentfs stand-in: mount failed on purpose/, false],
    ['mount-hang', 'mount', /agentfs mount did not finish within 1500 ms/, true],
    ['mount-noop', 'mount', /nothing is mounted at the mount point/, false],
  ];
  for (const [mode, step, detail, timedOut] of cases) {
    const ctx = await context();
    const started = performance.now();
    const r = await probePinnedStandIn(ctx, mode);
    assert.equal([mode, r.reason, r.evidence.step, r.evidence.timedOut], [mode, 'E_AGENTFS_PROBE', step, timedOut]);
    assert.match(r.detail, detail);
    assert.match(r.detail, new RegExp(`^the trial failed at step "${step}"`));
    assert.not.match(r.detail, /[^\x20-\x7e]/, 'garbage output is not passed on');
    assert.ok(performance.now() - started < 10_000, `${mode} took ${performance.now() - started} ms`);
    // The hung mount's "daemon" left the process group (like AgentFS's, through setsid); it was found and killed too.
    assert.equal(leftovers(ctx.probeDir), [], mode);
  }
});

test('the registered backend runs no binary that is not pinned: create refuses with the probe reason', async () => {
  const ctx = await context();
  const saved = { bin: process.env[AGENTFS_BIN_ENV], sha: process.env[AGENTFS_SHA256_ENV] };
  process.env[AGENTFS_BIN_ENV] = STAND_IN;
  delete process.env[AGENTFS_SHA256_ENV];
  try {
    const root = join(t.dir, 'never-made');
    await agentfsBackend.createSession(ctx, { entries: [] } as never, `sha256:${'0'.repeat(64)}` as never, root, t.dir);
    assert.unreachable('create must refuse');
  } catch (err) {
    assert.is((err as { code?: string }).code, 'E_AGENTFS_CHECKSUM');
  } finally {
    if (saved.bin === undefined) delete process.env[AGENTFS_BIN_ENV];
    else process.env[AGENTFS_BIN_ENV] = saved.bin;
    if (saved.sha !== undefined) process.env[AGENTFS_SHA256_ENV] = saved.sha;
  }
});

test('production code never builds a stand-in tool: only tests do', () => {
  const makers: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory() && !['node_modules', 'dist', 'test', 'fixtures', '.git'].includes(e.name)) walk(p);
      else if (e.isFile() && p.endsWith('.ts') && /kind:\s*'stand-in'/.test(readFileSync(p, 'utf8'))) makers.push(p);
    }
  };
  walk(REPO_ROOT);
  assert.equal(makers, []);
  assert.match(
    readFileSync(join(REPO_ROOT, 'test', 'helpers', 'agentfs-stand-in.ts'), 'utf8'),
    /kind: 'stand-in'/,
    'the check can see one',
  );
});

test.run();
