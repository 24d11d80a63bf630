// Random-moment kills (SIGKILL at a random time) of restore and checkpoint on every backend this
// host can run (full-copy; overlay on the temp dir's filesystem; reflink on loopback XFS and btrfs,
// btrfs-snapshot on loopback btrfs, as root), each followed by gc, doctor and verify and the checks
// of test/helpers/faults/restore-kills.ts: the root is the tree before or the target, never a mix,
// and nothing is lost. PDB_RESTORE_KILL_RUNS sets the runs per backend (default 6; the campaign of
// docs/way-back.md ran 30); PDB_KILL_SEED replays one (the seed is printed); PDB_RESTORE_KILL_BACKENDS
// (comma-separated) narrows the backends.
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createRandom } from '../../../harness/plan/prng.js';
import { SessionService } from '../../../sessions/service.js';
import { loadHostSetup, withLoopFs, type LoopFsType } from '../../helpers/cow-harness.js';
import { hasCommand, isRoot, skipPart, tempDir } from '../../helpers/index.js';
import { checkpointKill, openRestoreLane, restoreKill, type RestoreLane } from '../../helpers/faults/restore-kills.js';

const RUNS = Number(process.env.PDB_RESTORE_KILL_RUNS ?? 6);
const SEED = Number(process.env.PDB_KILL_SEED ?? Math.floor(Math.random() * 2 ** 32));
const ONLY = process.env.PDB_RESTORE_KILL_BACKENDS?.split(',') ?? null;
const t = tempDir('pdb-restore-kills-');
test.after(() => t.cleanup());

const lanes: RestoreLane[] = [];

async function lane(label: string, backend: string, dir: string): Promise<void> {
  if (ONLY && !ONLY.includes(label) && !ONLY.includes(backend)) return;
  const random = createRandom((SEED + lanes.length * 7919) >>> 0);
  const l = await openRestoreLane(dir, backend, random);
  l.backend = label;
  lanes.push(l);
  // Two restores for each checkpoint: restore is what is new here. A run that never settles is
  // named (the interval keeps the process alive so that it cannot end the test by itself).
  const alive = setInterval(() => {}, 1000);
  try {
    for (let i = 0; i < RUNS; i++) {
      const run = i % 3 === 2 ? checkpointKill(l, i) : restoreKill(l, i);
      let timer: NodeJS.Timeout | undefined;
      const stuck = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${label} run #${i} did not settle in 120 s`)), 120_000);
      });
      console.log(`  ${await Promise.race([run, stuck]).finally(() => clearTimeout(timer))}`);
    }
  } finally {
    clearInterval(alive);
  }
  for (const s of await l.svc.list()) await l.svc.discard(s.name);
}

async function loopSkip(fsType: LoopFsType): Promise<string | null> {
  if (!isRoot()) return `loopback ${fsType} needs root`;
  if (fsType === 'btrfs' && !hasCommand('btrfs')) return 'btrfs-progs is not installed';
  return (await loadHostSetup()).loopFsUnavailableReason(fsType);
}

test(`random-moment kills of restore and checkpoint on every available backend: before or restored, nothing lost (seed ${SEED})`, async () => {
  const t0 = Date.now();
  console.log(`  seed ${SEED} (PDB_KILL_SEED=${SEED} replays it)`);
  const dir = join(t.dir, 'tmp');
  await lane('full-copy', 'full-copy', dir);
  const overlay = await (await SessionService.open(join(dir, 'probe'), { create: true })).probe('overlay', dir);
  if (overlay.available) await lane('overlay', 'overlay', dir);
  else skipPart('restore kills on overlay', 'overlay', overlay.detail);
  const btrfs = await loopSkip('btrfs');
  if (btrfs) skipPart('restore kills on btrfs', 'btrfs', btrfs);
  else
    await withLoopFs('btrfs', t.dir, async (mnt) => {
      await lane('reflink on btrfs', 'reflink', mnt);
      await lane('btrfs-snapshot', 'btrfs-snapshot', mnt);
    });
  const xfs = await loopSkip('xfs');
  if (xfs) skipPart('restore kills on xfs', 'xfs', xfs);
  else await withLoopFs('xfs', t.dir, (mnt) => lane('reflink on xfs', 'reflink', mnt));
  const sum = (f: (l: RestoreLane) => number) => lanes.reduce((n, l) => n + f(l), 0);
  const killed = sum((l) => l.counts.restore.killed + l.counts.checkpoint.killed);
  const runs = sum((l) => l.counts.restore.killed + l.counts.restore.finished + l.counts.checkpoint.killed + l.counts.checkpoint.finished);
  console.log(
    `restore kills: ${killed} killed of ${runs} runs on ${lanes.map((l) => l.backend).join(', ')} ` +
      `(restore ${sum((l) => l.counts.restore.killed)}/${sum((l) => l.counts.restore.killed + l.counts.restore.finished)}, ` +
      `checkpoint ${sum((l) => l.counts.checkpoint.killed)}/${sum((l) => l.counts.checkpoint.killed + l.counts.checkpoint.finished)}; ` +
      `restores ending as before ${sum((l) => l.outcomes.before)}, restored ${sum((l) => l.outcomes.target)}), 0 lost or wrong, seed ${SEED} ` +
      `(${Math.round((Date.now() - t0) / 1000)} s)`,
  );
  assert.ok(runs < 6 || killed > 0, 'no run was killed: the delays are too long to test anything');
});

test.run();
