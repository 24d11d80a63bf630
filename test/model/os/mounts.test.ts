// model/os/mounts.ts: the one mountinfo parser (escaped paths, optional fields, both option
// lists) and its look-ups, on a table given as text and on this process's own; mounting and
// unmounting by mount(2) through the native addon and by mount(8), the same mounts and the same
// typed errors.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mountAt, mountContaining, mountFs, mountPointsUnder, mountTable, parseMountInfo, unmountFs } from '../../../model/os/mounts.js';
import { nativeOs } from '../../../model/os/native.js';
import { isRoot, skipPart, skipTest, tempDir } from '../../helpers/index.js';

// proc(5)'s fields: id parent major:minor root mount-point mount-options [optional...] - type source super-options
const MOUNTINFO = [
  '22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro',
  '35 22 0:31 /@data /srv/my\\040data rw,noatime shared:7 master:2 - btrfs /dev/sdb rw,space_cache=v2,subvol=/@data',
  '36 35 0:32 / /srv/my\\040data/sub rw - tmpfs tmp\\040fs rw,size=1024k',
  '37 22 0:33 / /srv/other rw - overlay overlay rw,lowerdir=/a:/b',
  '38 22 0:34 / /srv/other ro - fuse.agentfs agentfs:/db rw,user_id=0',
  'not a mountinfo line',
  '',
].join('\n');

test('a mountinfo line: the escaped space decoded, optional fields skipped, both option lists kept', () => {
  const table = parseMountInfo(MOUNTINFO);
  assert.is(table.length, 5, 'the line without a separator is skipped');
  assert.equal(table[1], {
    mountPoint: '/srv/my data',
    root: '/@data',
    fsType: 'btrfs',
    source: '/dev/sdb',
    mountOptions: ['rw', 'noatime'],
    superOptions: ['rw', 'space_cache=v2', 'subvol=/@data'],
  });
  assert.equal([table[2]!.mountPoint, table[2]!.fsType, table[2]!.source], ['/srv/my data/sub', 'tmpfs', 'tmp fs']);
  assert.equal(table[0]!.mountOptions, ['rw', 'relatime'], 'no optional fields in the option list');
});

test('look-ups: the visible mount at a path, the mount holding it, the mount points under it', () => {
  const table = parseMountInfo(MOUNTINFO);
  // These paths do not exist here, so they are judged as given.
  assert.is(mountAt('/srv/other', table)?.fsType, 'fuse.agentfs', 'the last of two at one point is the visible one');
  assert.is(mountAt('/srv/nothing', table), null);
  assert.is(mountContaining('/srv/my data/sub/x/y', table)?.fsType, 'tmpfs');
  assert.is(mountContaining('/srv/my data/subx', table)?.fsType, 'btrfs', 'a prefix that is not a path component does not count');
  assert.is(mountContaining('/home', table)?.mountPoint, '/');
  assert.equal(mountPointsUnder('/srv/my data', table), ['/srv/my data', '/srv/my data/sub']);
  assert.equal(mountPointsUnder('/srv/other', table), ['/srv/other', '/srv/other']);
});

test("this process's table holds / and finds a temp dir's mount", () => {
  if (process.platform !== 'linux') return skipTest('the mount table', 'procfs', `no /proc/self/mountinfo on ${process.platform}`);
  const t = tempDir('pdb-mounts-');
  try {
    const dir = join(t.dir, 'a b');
    mkdirSync(dir);
    const table = mountTable();
    assert.ok(table.some((m) => m.mountPoint === '/'));
    assert.ok(mountContaining(dir, table), 'some mount holds every path');
    assert.is(mountAt(dir, table), null);
    assert.equal(mountPointsUnder(dir, table), []);
  } finally {
    t.cleanup();
  }
});

/** Run `fn` with PDB_ENV_NATIVE_OS set to `value` (undefined: unset), restoring it after. */
async function withNativeOs<T>(value: string | undefined, fn: () => Promise<T>): Promise<T> {
  const before = process.env.PDB_ENV_NATIVE_OS;
  if (value === undefined) delete process.env.PDB_ENV_NATIVE_OS;
  else process.env.PDB_ENV_NATIVE_OS = value;
  try {
    return await fn();
  } finally {
    if (before === undefined) delete process.env.PDB_ENV_NATIVE_OS;
    else process.env.PDB_ENV_NATIVE_OS = before;
  }
}

test('mountFs and unmountFs: mount(2) through the addon and mount(8) make the same mount, and fail with the same code', async () => {
  if (process.platform !== 'linux') return skipTest('mounting', 'procfs', `no mount(2) of tmpfs on ${process.platform}`);
  if (!isRoot()) return skipTest('mounting', 'root', 'mounting a tmpfs needs root');
  const t = tempDir('pdb-mountfs-');
  const ways: Array<[string, string | undefined]> = [['mount(8)', 'off']];
  if (nativeOs()) ways.push(['mount(2)', undefined]);
  else skipPart('mount(2) through the addon', 'native-scan', 'the native addon is not built');
  try {
    for (const [way, env] of ways) {
      await withNativeOs(env, async () => {
        const dir = join(t.dir, `mnt-${env ?? 'native'}`);
        mkdirSync(dir);
        await mountFs('tmpfs', dir, 'tmpfs', 'size=1m,mode=0755', 'E_MOUNT_FAILED', 'mounting a test tmpfs');
        try {
          const m = mountAt(dir);
          assert.is(m?.fsType, 'tmpfs', way);
          assert.ok(m!.superOptions.includes('size=1024k'), `${way}: the options reached the kernel (${m!.superOptions})`);
          writeFileSync(join(dir, 'f'), 'x');
          assert.is(readFileSync(join(dir, 'f'), 'utf8'), 'x');
        } finally {
          await unmountFs(dir, 'E_MOUNT_FAILED', 'unmounting a test tmpfs');
        }
        assert.is(mountAt(dir), null, `${way}: unmounted`);
        // A target that does not exist, and unmounting what is no mount: typed, naming what failed.
        for (const attempt of [
          () => mountFs('tmpfs', join(t.dir, 'missing'), 'tmpfs', 'size=1m', 'E_MOUNT_FAILED', 'mounting a test tmpfs'),
          () => unmountFs(dir, 'E_MOUNT_FAILED', 'unmounting a test tmpfs'),
        ]) {
          try {
            await attempt();
            assert.unreachable(`${way}: succeeded`);
          } catch (err) {
            assert.is((err as { code?: string }).code, 'E_MOUNT_FAILED', `${way}: ${(err as Error).message}`);
            assert.match((err as Error).message, /(mounting|unmounting) a test tmpfs failed/);
          }
        }
      });
    }
  } finally {
    t.cleanup();
  }
});

test.run();
