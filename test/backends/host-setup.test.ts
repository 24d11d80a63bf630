// scripts/host-setup.ts: a loopback filesystem is mounted, then fully released (no mount, no
// loop device, no image), also when making it fails half-way, and releasing twice is harmless.
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mountTable } from '../../model/os/mounts.js';
import { isRoot, skipTest, tempDir } from '../helpers/index.js';
import { loadHostSetup } from '../helpers/cow-harness.js';

const t = tempDir('pdb-host-');
test.after(() => t.cleanup());

const mounted = (p: string) => mountTable().some((m) => m.mountPoint === p);
const attached = (image: string) => execFileSync('losetup', ['-j', image], { encoding: 'utf8' }).trim();

test('mount, observe, release (twice)', async () => {
  const hs = await loadHostSetup();
  const why = isRoot() ? await hs.loopFsUnavailableReason('xfs') : 'loopback filesystems need root';
  if (why) return skipTest('host-setup xfs', 'xfs', why);
  const made = await hs.mountLoopFs({ fsType: 'xfs', image: join(t.dir, 'x.img'), mountPoint: join(t.dir, 'mnt') });
  try {
    assert.ok(mounted(made.mountPoint));
    assert.match(attached(made.image), /loop/);
    assert.ok((await hs.freeBytesAfterSync(made.mountPoint)) > 100 * 1024 * 1024);
  } finally {
    await hs.releaseLoopFs(made);
  }
  assert.not.ok(mounted(made.mountPoint));
  assert.not.ok(existsSync(made.image));
  await hs.releaseLoopFs(made);
});

test('a failure half-way releases the loop device it attached', async () => {
  const hs = await loadHostSetup();
  const why = isRoot() ? await hs.loopFsUnavailableReason('xfs') : 'loopback filesystems need root';
  if (why) return skipTest('host-setup failure path', 'xfs', why);
  const image = join(t.dir, 'bad.img');
  const before = execFileSync('losetup', ['-a'], { encoding: 'utf8' });
  // The mount point is a regular file: mkdir fails after losetup and mkfs have run.
  const notADir = join(t.dir, 'not-a-dir');
  writeFileSync(notADir, 'x');
  try {
    await hs.mountLoopFs({ fsType: 'xfs', image, mountPoint: notADir });
    assert.unreachable();
  } catch (err) {
    assert.match(String(err), /EEXIST|ENOTDIR|not a directory/i);
  }
  assert.not.ok(existsSync(image));
  assert.is(execFileSync('losetup', ['-a'], { encoding: 'utf8' }), before);
});

test.run();
