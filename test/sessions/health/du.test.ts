// du against the filesystem's own answer: on real loopback XFS (reflink=1) and btrfs images, each
// backend's session gets N MiB of new data and an overwrite inside its largest (shared) file, and
// the growth of its exclusiveBytes must equal the free-space delta (statfs after sync) within
// 1.5 MB; a second session made from the same imported base costs what du says it costs. Plain
// `du` (st_blocks) is shown to count a clone's shared bytes as private, which is the point.
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, linkSync, openSync, statfsSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FS_MAGIC } from '../../../backends/shared/fs-util.js';
import { SessionService, type SessionDiskUsage } from '../../../sessions/service.js';
import { REPO_ROOT, hasCommand, isRoot, skipTest, tempDir, writeTree } from '../../helpers/index.js';
import { gitCommitAll, loadHostSetup, pattern, withLoopFs, type LoopFsType } from '../../helpers/cow-harness.js';

const t = tempDir('pdb-du-');
test.after(() => t.cleanup());

const MiB = 1024 * 1024;
const TOLERANCE = 1.5e6;
const BIG = 6 * MiB;

function writeFixture(src: string): void {
  writeTree(src, { 'README.md': '# du fixture\n', lib: { 'a.js': 'export const a = 1;\n' } });
  writeFileSync(join(src, 'big.bin'), pattern(BIG, 7));
  for (let i = 0; i < 40; i++) writeFileSync(join(src, 'lib', `f${i}.txt`), `small file ${i}\n`.repeat(50));
}

/** Plain du's answer for a directory (sums st_blocks, as du does). */
function plainDu(dir: string): number {
  return Number(execFileSync('du', ['-sB1', dir], { encoding: 'utf8' }).split('\t')[0]);
}

async function one(svc: SessionService, name: string): Promise<SessionDiskUsage> {
  const r = await svc.du(name);
  assert.is(r.sessions.length, 1);
  const s = r.sessions[0]!;
  assert.ok(s.measured, `${name}: ${s.reason}: ${s.detail}`);
  return s;
}

/** New data and an overwrite of 1 MiB in the middle of the big (shared) file, as an agent would write. */
function writeInto(root: string, newBytes: number): void {
  writeFileSync(join(root, 'new.bin'), pattern(newBytes, 11));
  const fd = openSync(join(root, 'big.bin'), 'r+');
  writeSync(fd, pattern(MiB, 13), 0, MiB, 2 * MiB);
  closeSync(fd);
}

interface Figures {
  backend: string;
  fs: LoopFsType;
  createDelta: number;
  createdExclusive: number;
  createdShared: number;
  plainDuAtCreate: number;
  writeDelta: number;
  exclusiveGrowth: number;
  sharedAfter: number;
}

/** A second session from the imported base (its cost alone), then writes into it, each against statfs. */
async function scenario(svc: SessionService, fs: LoopFsType, mnt: string, src: string, backend: string): Promise<Figures> {
  const hs = await loadHostSetup();
  const tag = backend.replace(/[^a-z]/g, '');
  await svc.create(`${tag}-first`, { from: src, backend }); // imports and materializes the base
  const free0 = await hs.freeBytesAfterSync(mnt);
  await svc.create(`${tag}-b`, { from: src, backend });
  const free1 = await hs.freeBytesAfterSync(mnt);
  const created = await one(svc, `${tag}-b`);
  const plainDuAtCreate = plainDu(svc.sessionRoot(`${tag}-b`));
  const free2 = await hs.freeBytesAfterSync(mnt);
  writeInto(svc.sessionRoot(`${tag}-b`), 8 * MiB);
  const free3 = await hs.freeBytesAfterSync(mnt);
  const after = await one(svc, `${tag}-b`);
  for (const n of [`${tag}-first`, `${tag}-b`]) await svc.discard(n);
  return {
    backend,
    fs,
    createDelta: free0 - free1,
    createdExclusive: created.exclusiveBytes!,
    createdShared: created.sharedBytes!,
    plainDuAtCreate,
    writeDelta: free2 - free3,
    exclusiveGrowth: after.exclusiveBytes! - created.exclusiveBytes!,
    sharedAfter: after.sharedBytes!,
  };
}

function check(f: Figures): void {
  const label = `${f.backend} on ${f.fs}`;
  console.log(`du ${label}: ${JSON.stringify(f)}`);
  assert.ok(
    Math.abs(f.exclusiveGrowth - f.writeDelta) < TOLERANCE,
    `${label}: exclusive grew ${f.exclusiveGrowth}, free space fell ${f.writeDelta}`,
  );
  // 8 MiB of new data plus the 1 MiB overwrite (a copy-up copies the whole file, as a clone on these filesystems).
  assert.ok(f.writeDelta > 9 * MiB - TOLERANCE, `${label}: the writes took ${f.writeDelta}`);
  assert.ok(
    Math.abs(f.createdExclusive - f.createDelta) < TOLERANCE,
    `${label}: du says ${f.createdExclusive}, the create took ${f.createDelta}`,
  );
  if (f.backend === 'full-copy' || f.backend === 'git-worktree') {
    assert.is(f.createdShared, 0);
    assert.ok(f.createdExclusive > BIG, `${label}: a copy (or a checkout) is all its own`);
  } else {
    // The session shares the base's bytes: plain du counts them as private, du does not.
    assert.ok(f.createdExclusive < TOLERANCE, `${label}: a new CoW session holds ${f.createdExclusive} of its own`);
    assert.ok(f.createdShared >= BIG, `${label}: shares ${f.createdShared}`);
    assert.ok(f.plainDuAtCreate > BIG, `${label}: plain du said ${f.plainDuAtCreate}`);
  }
  // A clone's overwritten MiB is no longer shared; an overlay's lower is shared whole.
  if (f.backend === 'reflink' || f.backend === 'btrfs-snapshot')
    assert.ok(Math.abs(f.createdShared - f.sharedAfter - MiB) < 64 * 1024, `${label}: shared ${f.createdShared} -> ${f.sharedAfter}`);
  if (f.backend === 'overlay') assert.is(f.sharedAfter, f.createdShared);
}

async function onLoopFs(fs: LoopFsType, backends: string[]): Promise<void> {
  const why = isRoot() ? await (await loadHostSetup()).loopFsUnavailableReason(fs) : `loopback ${fs} needs root`;
  if (why) return skipTest(`du on ${fs}`, fs, why);
  await withLoopFs(
    fs,
    t.dir,
    async (mnt) => {
      const src = join(mnt, 'src');
      writeFixture(src);
      if (hasCommand('git')) gitCommitAll(src);
      const svc = await SessionService.open(join(mnt, 'store'), { create: true });
      const all = hasCommand('git') ? [...backends, 'git-worktree'] : backends;
      for (const backend of all) check(await scenario(svc, fs, mnt, src, backend));
      // The store: what gc would free is gc's own sweep, and nothing is left to free here.
      const r = await svc.du();
      assert.equal(r.sessions, []);
      assert.is(r.store.gc.freeBytes, (await svc.gc({ dryRun: true })).freed.bytes);
      assert.ok(r.store.objectBytes >= BIG && r.store.objects > 40, JSON.stringify(r.store));
      const chunked = join(mnt, 'store', 'objects', 'chunked'); // records of documents kept as chunks (docs/store.md)
      assert.is(
        r.store.objectBytes,
        plainDu(join(mnt, 'store', 'objects', 'sha256')) +
          [chunked, join(mnt, 'store', 'objects', 'deflated')].reduce((n, d) => n + (existsSync(d) ? plainDu(d) : 0), 0),
        'objects are byte copies: st_blocks is their cost',
      );
    },
    1024,
  );
}

test('XFS (reflink=1): full-copy, reflink, overlay and git-worktree agree with the free-space delta', async () => {
  await onLoopFs('xfs', ['full-copy', 'reflink', 'overlay']);
});

test('btrfs: full-copy, reflink, btrfs-snapshot, overlay and git-worktree agree with the free-space delta', async () => {
  await onLoopFs('btrfs', ['full-copy', 'reflink', 'btrfs-snapshot', 'overlay']);
});

test('without shared extents (the temp filesystem), an overlay copy-up costs the whole file, measured by st_blocks', async () => {
  if (!isRoot()) return skipTest('du of overlay on the temp filesystem', 'overlay', 'mounting an overlay needs root');
  const type = Number(statfsSync(t.dir).type);
  if (type === FS_MAGIC.btrfs || type === FS_MAGIC.xfs)
    return skipTest('du of overlay without clones', 'no-clone-tmp', 'the temp filesystem supports clones');
  const src = join(t.dir, 'ov-src');
  writeFixture(src);
  const svc = await SessionService.open(join(t.dir, 'ov-store'), { create: true });
  await svc.create('o', { from: src, backend: 'overlay' });
  const before = await one(svc, 'o');
  writeInto(svc.sessionRoot('o'), MiB);
  const after = await one(svc, 'o');
  assert.is(after.method, 'st_blocks');
  const growth = after.exclusiveBytes! - before.exclusiveBytes!;
  assert.ok(Math.abs(growth - (BIG + MiB)) < 64 * 1024, `copy-up of 6 MiB and 1 MiB new: grew ${growth}`);
  assert.is(after.sharedBytes, before.sharedBytes, 'the lower is shared whole');
  await svc.discard('o');
});

test('a file hard-linked from outside the session is shared; a backend that cannot measure says why', async () => {
  const src = join(t.dir, 'plain-src');
  writeFixture(src);
  const svc = await SessionService.open(join(t.dir, 'plain-store'), { create: true });
  await svc.create('h', { from: src, backend: 'full-copy' });
  const before = await one(svc, 'h');
  const outside = join(t.dir, 'outside.bin');
  writeFileSync(outside, pattern(MiB, 5));
  linkSync(outside, join(svc.sessionRoot('h'), 'linked.bin'));
  const after = await one(svc, 'h');
  assert.ok(after.sharedBytes! >= MiB && after.sharedBytes! < MiB + 64 * 1024, `shared ${after.sharedBytes}`);
  assert.ok(Math.abs(after.exclusiveBytes! - before.exclusiveBytes!) < 64 * 1024, 'the linked file is not its own');
  await svc.create('m', { from: src, backendModule: join(REPO_ROOT, 'test', 'fixtures', 'backends', 'copy-backend.mjs') });
  const m = (await svc.du('m')).sessions[0]!;
  assert.is(m.measured, false);
  assert.is(m.reason, 'E_USAGE_UNMEASURABLE');
  assert.is(m.exclusiveBytes, null, 'never a guess');
  assert.match(m.detail, /does not measure/);
});

test.run();
