// The measurer behind du: filefrag's output as real XFS and btrfs print it, shared ranges counted
// once, and FIEMAP's split on btrfs checked against btrfs's own accounting (`btrfs filesystem du`).
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { measureBlocks, measureExtents } from '../../../backends/shared/disk-usage.js';
import { parseFilefrag, unionBytes } from '../../../backends/shared/fiemap.js';
import { hasCommand, isRoot, skipTest, tempDir } from '../../helpers/index.js';
import { loadHostSetup, pattern, withLoopFs } from '../../helpers/cow-harness.js';

const t = tempDir('pdb-disk-usage-');
test.after(() => t.cleanup());

// Printed by filefrag 1.47.0 (`-v -s -b1`) on loopback XFS and btrfs: a partly overwritten clone,
// a sparse file (with the "expected" column), an empty file, a btrfs inline file; "gone" was
// never printed (filefrag said so on stderr only).
const XFS = `Filesystem type is: 58465342
File size of x/big2 is 6291456 (6291456 blocks of 1 bytes)
 ext:     logical_offset:        physical_offset: length:   expected: flags:
   0:        0.. 2097151:      98304..   2195455: 2097152:             shared
   1:  2097152.. 3145727:    6389760..   7438335: 1048576:    2195456:
   2:  3145728.. 6291455:    3244032..   6389759: 3145728:    7438336: last,shared,eof
x/big2: 3 extents found
File size of x/empty is 0 (0 blocks of 1 bytes)
x/empty: 0 extents found
File size of x/sparse is 10485760 (10485760 blocks of 1 bytes)
 ext:     logical_offset:        physical_offset: length:   expected: flags:
   0:  4997120.. 5001215:   17756160..  17760255:   4096:    4997120: last
x/sparse: 1 extent found
File size of b/small is 8 (4096 block of 1 bytes)
 ext:     logical_offset:        physical_offset: length:   expected: flags:
   0:        0..    4095:          0..      4095:   4096:             last,not_aligned,inline,eof
b/small: 1 extent found
`;

test('filefrag -v -b1: extents in bytes with their flags, by path, in the order given; an unmapped file is absent', () => {
  const maps = parseFilefrag(XFS, ['x/big2', 'x/gone', 'x/empty', 'x/sparse', 'b/small']);
  assert.equal([...maps.keys()], ['x/big2', 'x/empty', 'x/sparse', 'b/small']);
  assert.equal(maps.get('x/big2'), [
    { physical: 98304, length: 2097152, flags: ['shared'] },
    { physical: 6389760, length: 1048576, flags: [] },
    { physical: 3244032, length: 3145728, flags: ['last', 'shared', 'eof'] },
  ]);
  assert.equal(maps.get('x/empty'), []);
  assert.equal(maps.get('x/sparse'), [{ physical: 17756160, length: 4096, flags: ['last'] }]);
  assert.equal(maps.get('b/small')![0]!.flags, ['last', 'not_aligned', 'inline', 'eof']);
});

test('shared ranges count once, overlapping or repeated', () => {
  assert.is(
    unionBytes([
      [0, 100],
      [50, 100],
      [0, 100],
      [400, 10],
    ]),
    160,
  );
  assert.is(unionBytes([]), 0);
});

test('st_blocks: a hard link inside the tree counts once, one from outside is shared', () => {
  const dir = join(t.dir, 'links');
  mkdirSync(dir);
  writeFileSync(join(dir, 'a'), pattern(64 * 1024, 1));
  execFileSync('ln', [join(dir, 'a'), join(dir, 'a2')]);
  writeFileSync(join(t.dir, 'outside'), pattern(32 * 1024, 2));
  execFileSync('ln', [join(t.dir, 'outside'), join(dir, 'b')]);
  const u = measureBlocks(dir);
  assert.is(u.files, 2);
  assert.ok(u.exclusiveBytes >= 64 * 1024 && u.exclusiveBytes < 2 * 64 * 1024, String(u.exclusiveBytes));
  assert.ok(u.sharedBytes >= 32 * 1024 && u.sharedBytes < 64 * 1024, String(u.sharedBytes));
});

test('on btrfs, the FIEMAP split of a snapshot agrees with btrfs filesystem du (its own accounting)', async () => {
  const why = isRoot() ? await (await loadHostSetup()).loopFsUnavailableReason('btrfs') : 'loopback btrfs needs root';
  if (why) return skipTest('FIEMAP against btrfs filesystem du', 'btrfs', why);
  if (!hasCommand('filefrag')) return skipTest('FIEMAP against btrfs filesystem du', 'btrfs', 'filefrag (e2fsprogs) is not installed');
  await withLoopFs('btrfs', t.dir, async (mnt) => {
    const btrfs = (...args: string[]) => execFileSync('btrfs', args, { encoding: 'utf8' });
    btrfs('subvolume', 'create', join(mnt, 'base'));
    writeFileSync(join(mnt, 'base', 'big'), pattern(4 * 1024 * 1024, 3));
    writeFileSync(join(mnt, 'base', 'other'), pattern(512 * 1024, 4));
    btrfs('subvolume', 'snapshot', join(mnt, 'base'), join(mnt, 'snap'));
    writeFileSync(join(mnt, 'snap', 'new'), pattern(1024 * 1024, 5));
    const fd = openSync(join(mnt, 'snap', 'big'), 'r+');
    writeSync(fd, pattern(256 * 1024, 6), 0, 256 * 1024, 1024 * 1024);
    closeSync(fd);
    execFileSync('sync');
    const u = await measureExtents(join(mnt, 'snap'));
    const [total, exclusive, setShared] = btrfs('filesystem', 'du', '-s', '--raw', join(mnt, 'snap'))
      .split('\n')[1]!
      .trim()
      .split(/\s+/)
      .map(Number);
    assert.is(u.exclusiveBytes, exclusive!, 'exclusive');
    assert.is(u.sharedBytes, setShared!, 'set shared');
    assert.is(exclusive, 1024 * 1024 + 256 * 1024);
    assert.ok(total! >= exclusive! + setShared!);
    for (const d of ['snap', 'base']) btrfs('subvolume', 'delete', join(mnt, d));
  });
});

test.run();
