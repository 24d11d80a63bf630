import { execFileSync } from 'node:child_process';
import { lstatSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { btrfsSnapshotBackend } from '../../backends/btrfs-snapshot.js';
import { FS_MAGIC } from '../../backends/shared/fs-util.js';
import { ObjectStore } from '../../model/store/object-store.js';
import { scanTree } from '../../model/scan/scan.js';
import { createSnapshot } from '../../model/snapshot.js';
import { hasCommand, isRoot, skipTest, tempDir, writeTree } from '../helpers/index.js';
import { loadHostSetup, withLoopFs } from '../helpers/cow-harness.js';

const t = tempDir('pdb-btrfs-');
test.after(() => t.cleanup());

test('probe on a non-btrfs store is E_NOT_BTRFS', async () => {
  if (Number(statfsSync(t.dir).type) === FS_MAGIC.btrfs) return skipTest('E_NOT_BTRFS', 'no-clone-tmp', 'the temp filesystem is btrfs');
  const store = await ObjectStore.init(join(t.dir, 'store'));
  const r = await btrfsSnapshotBackend.probe({ store, probeDir: store.paths.tmp });
  assert.is(r.reason, 'E_NOT_BTRFS');
});

test('base is one read-only subvolume, made once; sessions are snapshots; release deletes them', async () => {
  const why = !isRoot()
    ? 'loopback btrfs needs root'
    : ((await (await loadHostSetup()).loopFsUnavailableReason('btrfs')) ?? (hasCommand('btrfs') ? null : 'btrfs-progs missing'));
  if (why) return skipTest('btrfs-snapshot lifecycle', 'btrfs', why);
  await withLoopFs('btrfs', t.dir, async (mnt) => {
    const src = join(mnt, 'src');
    writeTree(src, { 'a.txt': 'a', d: { 'b.txt': 'b' } });
    const store = await ObjectStore.init(join(mnt, 'store'));
    const { entries } = await scanTree(src, { excludes: [], store });
    const snapshot = createSnapshot(entries, [], null);
    const digest = await store.putDocument(snapshot);
    const ctx = { store, probeDir: store.paths.tmp };
    assert.is((await btrfsSnapshotBackend.probe(ctx)).available, true);
    await btrfsSnapshotBackend.materializeBase(ctx, snapshot, digest);
    await btrfsSnapshotBackend.materializeBase(ctx, snapshot, digest); // idempotent
    const base = join(store.paths.bases, digest.slice(7), 'btrfs-subvolume');
    assert.is(lstatSync(base).ino, 256, 'the base is a subvolume root');
    assert.match(execFileSync('btrfs', ['property', 'get', '-ts', base, 'ro'], { encoding: 'utf8' }), /ro=true/);
    assert.throws(() => writeFileSync(join(base, 'x'), 'x'), /EROFS|read-only/i);
    const root = join(mnt, 'sess-root');
    await btrfsSnapshotBackend.createSession(ctx, snapshot, digest, root, mnt);
    assert.is(lstatSync(root).ino, 256, 'the session root is a snapshot subvolume');
    writeFileSync(join(root, 'a.txt'), 'changed'); // writable
    await btrfsSnapshotBackend.release(ctx, root, mnt, {});
    const list = execFileSync('btrfs', ['subvolume', 'list', mnt], { encoding: 'utf8' });
    assert.not.match(list, /sess-root/);
    assert.is(list.trim().split('\n').length, 1, list);
  });
});

test.run();
