import { existsSync, readdirSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cloneTree } from '../../backends/shared/clone-tree.js';
import { FS_MAGIC } from '../../backends/shared/fs-util.js';
import { reflinkBackend } from '../../backends/reflink.js';
import { isPdbError } from '../../model/errors.js';
import { ObjectStore } from '../../model/store/object-store.js';
import { scanTree } from '../../model/scan/scan.js';
import { createSnapshot } from '../../model/snapshot.js';
import { isRoot, skipTest, tempDir, writeTree } from '../helpers/index.js';
import { loadHostSetup, withLoopFs } from '../helpers/cow-harness.js';

const t = tempDir('pdb-reflink-');
test.after(() => t.cleanup());

async function fixture(dir: string, storeDir: string) {
  writeTree(dir, { 'a.txt': 'a'.repeat(20000), sub: { 'b.txt': 'b' } });
  const store = await ObjectStore.init(storeDir);
  const { entries } = await scanTree(dir, { excludes: [], store });
  const snapshot = createSnapshot(entries, [], null);
  return { store, snapshot, digest: await store.putDocument(snapshot) };
}

test('on a filesystem without clones the forced clone is E_CLONE_UNSUPPORTED and nothing is copied', async () => {
  const type = Number(statfsSync(t.dir).type);
  if (type === FS_MAGIC.btrfs || type === FS_MAGIC.xfs)
    return skipTest('reflink refusal', 'no-clone-tmp', 'the temp filesystem supports clones');
  const { store, snapshot, digest } = await fixture(join(t.dir, 'src'), join(t.dir, 'store'));
  const ctx = { store, probeDir: store.paths.tmp };
  const probe = await reflinkBackend.probe(ctx);
  assert.is(probe.available, false);
  assert.is(probe.reason, 'E_CLONE_UNSUPPORTED');
  assert.is(probe.evidence.cloned, false);
  const root = join(t.dir, 'root');
  try {
    await reflinkBackend.createSession(ctx, snapshot, digest, root, t.dir);
    assert.unreachable('a forced clone on this filesystem must fail');
  } catch (err) {
    assert.ok(isPdbError(err, 'E_CLONE_UNSUPPORTED'), String(err));
  }
  // No silent copy fallback: no file of the snapshot exists in the session root.
  assert.not.ok(existsSync(join(root, 'a.txt')));
  assert.not.ok(existsSync(join(root, 'sub', 'b.txt')));
});

test('a clone across filesystems is E_CROSS_DEVICE', async () => {
  const why = isRoot() ? await (await loadHostSetup()).loopFsUnavailableReason('xfs') : 'loopback xfs needs root';
  if (why) return skipTest('reflink EXDEV', 'xfs', why);
  await withLoopFs('xfs', t.dir, async (mnt) => {
    const { store, snapshot, digest } = await fixture(join(mnt, 'src'), join(mnt, 'store'));
    const ctx = { store, probeDir: store.paths.tmp };
    await reflinkBackend.materializeBase(ctx, snapshot, digest);
    const base = join(store.paths.bases, digest.slice(7), 'tree');
    const root = join(t.dir, 'cross-root');
    try {
      await cloneTree(base, snapshot, root);
      assert.unreachable();
    } catch (err) {
      assert.ok(isPdbError(err, 'E_CROSS_DEVICE'), String(err));
    }
    assert.equal(
      readdirSync(root).filter((n) => n !== 'sub'),
      [],
    );
    // On the same filesystem the clone works and is observed.
    const made = await reflinkBackend.createSession(ctx, snapshot, digest, join(mnt, 'root'), mnt);
    assert.is(made.cloneObserved, true);
    assert.is(made.files, 2);
  });
});

test.run();
