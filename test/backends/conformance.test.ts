// The contract suite: every backend available on a filesystem that supports it runs the
// file-operation matrix through the real session lifecycle and must match the full-copy oracle;
// the sibling session and the base stay unchanged; discard leaves nothing. The hard-link farm
// (test-only negative control) must fail it.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { assertBackendName, getBackend } from '../../backends/registry.js';
import type { Digest } from '../../model/canonical-json.js';
import { diffEntries } from '../../model/snapshot.js';
import { SessionService } from '../../sessions/service.js';
import { hasCommand, isRoot, skipPart, skipTest, tempDir } from '../helpers/index.js';
import {
  gitCommitAll,
  loadHostSetup,
  passes,
  runMatrixCase,
  withLoopFs,
  writeMatrixFixture,
  type CaseOutcome,
  type LoopFsType,
} from '../helpers/cow-harness.js';

const applyScript = fileURLToPath(new URL('../helpers/apply-matrix.js', import.meta.url));
const t = tempDir('pdb-conf-');
test.after(() => t.cleanup());

let oracleDigest: Digest | null = null;

function report(o: CaseOutcome): string {
  return `${o.backend}: oracle=${o.digestEqualsOracle} sibling=${o.siblingUnchanged} base=${o.baseUnchanged} fresh=${o.freshSessionEqualsBase} cleanup=${o.cleanupComplete} cloneObserved=${o.cloneObserved}${o.details.length ? `\n  ${o.details.join('\n  ')}` : ''}`;
}

function assertConforms(o: CaseOutcome): void {
  console.log(`  ${report(o)}`);
  assert.ok(passes(o), report(o));
}

async function unmount(root: string): Promise<void> {
  execFileSync('umount', [root]);
}

async function oracleFor(svc: SessionService, source: string): Promise<Digest> {
  const o = await runMatrixCase(svc, 'full-copy', source, null, { applyScript });
  assertConforms(o);
  return o.resultDigest;
}

test('full-copy (the oracle), overlay and git-worktree on the temp filesystem match the oracle', async () => {
  const source = join(t.dir, 'src-tmp');
  writeMatrixFixture(source);
  gitCommitAll(source);
  const svc = await SessionService.open(join(t.dir, 'store-tmp'), { create: true });
  oracleDigest = await oracleFor(svc, source);
  // The oracle is reproducible: a second full-copy run gives the same digest.
  assertConforms(await runMatrixCase(svc, 'full-copy', source, oracleDigest, { applyScript }));

  if ((await svc.probe('overlay', source)).available) {
    // Re-entry after the mount is gone (as after a reboot): run must re-mount first.
    const o = await runMatrixCase(svc, 'overlay', source, oracleDigest, { applyScript, beforeReentry: unmount });
    assertConforms(o);
  } else skipPart('overlay on tmp', 'overlay', (await svc.probe('overlay', source)).detail);

  if (hasCommand('git')) assertConforms(await runMatrixCase(svc, 'git-worktree', source, oracleDigest, { applyScript }));
  else skipPart('git-worktree', 'git', 'git is not installed');
});

test('git-worktree carries only committed files: the oracle catches the untracked .env it drops', async () => {
  if (!hasCommand('git')) return skipTest('git-worktree .env', 'git', 'git is not installed');
  const source = join(t.dir, 'src-env');
  writeMatrixFixture(source);
  gitCommitAll(source);
  writeFileSync(join(source, '.env'), 'SECRET=1\n');
  const svc = await SessionService.open(join(t.dir, 'store-env'), { create: true });
  assert.is((await getBackend('git-worktree')).capabilities.carriesFullSnapshot, false);
  const o = await runMatrixCase(svc, 'git-worktree', source, null, { applyScript });
  const full = await runMatrixCase(svc, 'full-copy', source, null, { applyScript });
  assert.ok(full.cleanupComplete && full.siblingUnchanged);
  assert.is.not(o.resultDigest, full.resultDigest, 'the oracle must tell the worktree apart');
  const diff = diffEntries(svc.readSnapshot(full.resultDigest).entries, svc.readSnapshot(o.resultDigest).entries);
  assert.equal(
    diff.map((c) => `${c.kind} ${c.path}`),
    ['delete .env'],
  );
  // The sibling is a worktree too, so it "differs from the base" by the same .env: expected behaviour.
  assert.is(o.siblingUnchanged, false);
  assert.ok(o.cleanupComplete, report(o));
  console.log(`  expected behaviour: git-worktree drops ${diff.map((c) => c.path).join(', ')} (carriesFullSnapshot=false)`);
});

test('negative control: the hard-link farm fails the oracle checks', async () => {
  const source = join(t.dir, 'src-hl');
  writeMatrixFixture(source);
  const svc = await SessionService.open(join(t.dir, 'store-hl'), { create: true });
  const oracle = oracleDigest ?? (await oracleFor(svc, source));
  const o = await runMatrixCase(svc, 'hardlink-farm', source, oracle, { applyScript, allowTestOnly: true });
  console.log(`  ${report(o)}`);
  assert.not.ok(passes(o), 'the hard-link farm must be caught');
  assert.not.ok(o.siblingUnchanged, 'an in-place edit through a shared inode reaches the sibling');
  assert.not.ok(o.baseUnchanged, 'and the base');
  // It is never offered to users.
  assert.throws(() => assertBackendName('hardlink-farm'), /is a test-only backend/);
});

test('agentfs (an external, pinned AgentFS binary) matches the oracle, re-mounted after its mount is gone', async () => {
  const source = join(t.dir, 'src-agentfs');
  writeMatrixFixture(source);
  const svc = await SessionService.open(join(t.dir, 'store-agentfs'), { create: true });
  // Gated by the probe itself: available only where a pinned binary passed the trial mount.
  const probe = await svc.probe('agentfs', source);
  if (!probe.available) return skipTest('agentfs', 'agentfs', `${probe.reason}: ${probe.detail}`);
  const oracle = oracleDigest ?? (await oracleFor(svc, source));
  assertConforms(await runMatrixCase(svc, 'agentfs', source, oracle, { applyScript, beforeReentry: unmount }));
});

async function loopSkip(fsType: LoopFsType): Promise<string | null> {
  if (!isRoot()) return `loopback ${fsType} needs root`;
  return (await loadHostSetup()).loopFsUnavailableReason(fsType);
}

test('reflink on loopback XFS (reflink=1) matches the oracle, clones observed', async () => {
  const why = await loopSkip('xfs');
  if (why) return skipTest('reflink on xfs', 'xfs', why);
  await withLoopFs('xfs', t.dir, async (mnt) => {
    const source = join(mnt, 'src');
    writeMatrixFixture(source);
    const svc = await SessionService.open(join(mnt, 'store'), { create: true });
    const oracle = oracleDigest ?? (await oracleFor(svc, source));
    const probe = await svc.probe('reflink', source);
    assert.ok(probe.available, probe.detail);
    assert.is(probe.evidence.observed, true);
    const o = await runMatrixCase(svc, 'reflink', source, oracle, { applyScript });
    assertConforms(o);
    assert.is(o.cloneObserved, true);
    assertConforms(await runMatrixCase(svc, 'overlay', source, oracle, { applyScript, beforeReentry: unmount }));
  });
});

test('reflink and btrfs-snapshot on loopback btrfs match the oracle', async () => {
  const why = (await loopSkip('btrfs')) ?? (hasCommand('btrfs') ? null : 'btrfs (btrfs-progs) is not installed');
  if (why) return skipTest('btrfs backends', 'btrfs', why);
  await withLoopFs('btrfs', t.dir, async (mnt) => {
    const source = join(mnt, 'src');
    writeMatrixFixture(source);
    const svc = await SessionService.open(join(mnt, 'store'), { create: true });
    const oracle = oracleDigest ?? (await oracleFor(svc, source));
    const r = await runMatrixCase(svc, 'reflink', source, oracle, { applyScript });
    assertConforms(r);
    assert.is(r.cloneObserved, true);
    const b = await runMatrixCase(svc, 'btrfs-snapshot', source, oracle, { applyScript });
    assertConforms(b);
    // Discard deleted every session snapshot: only the base subvolume is left.
    const subvols = execFileSync('btrfs', ['subvolume', 'list', '-o', mnt], { encoding: 'utf8' });
    assert.not.match(subvols, /sessions\//, subvols);
    assert.match(subvols, /bases\/[0-9a-f]{64}\/btrfs-subvolume/);
  });
});

test.run();
