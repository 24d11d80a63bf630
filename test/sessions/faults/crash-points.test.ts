// Every crash point (model/crash-point.ts) on every backend this host can run, through the real
// CLI: the operation is killed with SIGKILL at that step, then doctor, gc and verify run and the
// invariants are checked (crash-scenarios.ts). full-copy always; overlay and git-worktree on the
// temp dir's filesystem where available; reflink on loopback btrfs and XFS, btrfs-snapshot on
// loopback btrfs (root). Two lanes run at once to keep the suite's time reasonable.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CRASH_POINTS } from '../../../model/crash-point.js';
import { SessionService } from '../../../sessions/service.js';
import { loadHostSetup, withLoopFs, type LoopFsType } from '../../helpers/cow-harness.js';
import { hasCommand, isRoot, skipPart, tempDir } from '../../helpers/index.js';
import { closeLane, crashScenario, gcDuringCreates, openLane } from '../../helpers/faults/crash-scenarios.js';
import { writeSource } from '../../helpers/faults/fault-helpers.js';

const t = tempDir('pdb-crash-');
test.after(() => t.cleanup());

const log = new Map<string, string[]>();
const ran: string[] = [];

function gitSource(dir: string): void {
  writeSource(dir);
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', dir, ...args], {
      stdio: 'pipe',
      env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@e', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@e' },
    });
  git('init', '-q');
  git('add', '-A');
  git('commit', '-q', '-m', 'fixture');
}

/** Run every crash point on `backend` in a fresh store under `dir` (and, with `gcDuring`, gc during creates first). */
async function lane(label: string, backend: string, dir: string, gcDuring = false): Promise<void> {
  const source = join(dir, `src-${backend}`);
  gitSource(source);
  const l = await openLane(label, backend, join(dir, `store-${backend}`), source);
  const lines: string[] = [];
  log.set(label, lines);
  if (gcDuring) lines.push(`${label}: gc and doctor ran ${await gcDuringCreates(l)} times during creates, acting on nothing`);
  for (const [i, point] of CRASH_POINTS.entries()) lines.push(await crashScenario(l, point, i));
  await closeLane(l);
  ran.push(label);
}

async function loopSkip(fsType: LoopFsType): Promise<string | null> {
  if (!isRoot()) return `loopback ${fsType} needs root`;
  if (fsType === 'btrfs' && !hasCommand('btrfs')) return 'btrfs-progs is not installed';
  return (await loadHostSetup()).loopFsUnavailableReason(fsType);
}

/** The temp dir's filesystem: full-copy, and overlay and git-worktree where they are available. */
async function tmpLanes(): Promise<void> {
  const dir = join(t.dir, 'tmpfs');
  const probeSvc = await SessionService.open(join(dir, 'probe-store'), { create: true });
  await lane('full-copy', 'full-copy', dir);
  const overlay = await probeSvc.probe('overlay', dir);
  if (overlay.available) await lane('overlay', 'overlay', dir);
  else skipPart('crash points on overlay', 'overlay', overlay.detail);
  if (hasCommand('git')) await lane('git-worktree', 'git-worktree', dir);
  else skipPart('crash points on git-worktree', 'git', 'git is not installed');
}

/** Loopback btrfs (reflink, btrfs-snapshot) and XFS (reflink). */
async function loopLanes(): Promise<void> {
  const btrfs = await loopSkip('btrfs');
  if (btrfs) skipPart('crash points on btrfs', 'btrfs', btrfs);
  else
    await withLoopFs('btrfs', t.dir, async (mnt) => {
      await lane('reflink on btrfs', 'reflink', mnt);
      await lane('btrfs-snapshot', 'btrfs-snapshot', mnt);
    });
  const xfs = await loopSkip('xfs');
  if (xfs) skipPart('crash points on xfs', 'xfs', xfs);
  else await withLoopFs('xfs', t.dir, (mnt) => lane('reflink on xfs', 'reflink', mnt, true));
}

test('every crash point on every available backend: doctor, gc and verify leave the store whole', async () => {
  const t0 = Date.now();
  await Promise.all([tmpLanes(), loopLanes()]);
  for (const line of [...log.values()].flat()) console.log(`  ${line}`);
  const scenarios = CRASH_POINTS.length * ran.length;
  assert.is([...log.values()].flat().filter((l) => / (create|checkpoint|publish|discard|apply|restore):/.test(l)).length, scenarios);
  console.log(
    `crash points: ${CRASH_POINTS.length} x ${ran.length} backends (${ran.join(', ')}) = ${scenarios} crashes, 0 lost (${Math.round((Date.now() - t0) / 1000)} s)`,
  );
});

test.run();
