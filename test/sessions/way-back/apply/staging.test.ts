// Bytes leave the store hashed: an object overwritten in the store is E_OBJECT_CORRUPT naming the
// path when apply stages it, nothing is written into DIR, and the object is in the quarantine.
// Staging that cannot be written (no inodes left on DIR's filesystem) is E_NO_SPACE naming that
// filesystem, and leaves DIR as it was with nothing for gc to finish.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isRoot, skipTest, tempDir } from '../../../helpers/index.js';
import { assertTyped, fileDigest, flipByte, json, objectFile, pdb } from '../../../helpers/faults/fault-helpers.js';
import { applyCase, changedSession, filesOf } from '../../../helpers/apply-fixture.js';

const t = tempDir('pdb-apply-staging-');
test.after(() => t.cleanup());

test('a tampered object is E_OBJECT_CORRUPT naming the path: nothing written, the object quarantined', async () => {
  const c = await applyCase(t.dir, 'tampered');
  const cp = await changedSession(c, 's', (root) => {
    writeFileSync(join(root, 'a.txt'), 'the session wrote this\n');
    writeFileSync(join(root, 'd/new.txt'), 'new bytes\n');
  });
  const digest = fileDigest(c.store, cp.snapshot, 'd/new.txt');
  flipByte(objectFile(c.store, digest));
  const before = await filesOf(c.target);
  const r = pdb(c.store, ['apply', 's', '--to', c.target, '--json']);
  assertTyped(r, 'E_OBJECT_CORRUPT', 'apply of a tampered object');
  assert.match(JSON.parse(r.stdout).error.message, /d\/new\.txt/);
  assert.equal(await filesOf(c.target), before, 'nothing written');
  assert.not.ok(existsSync(join(c.target, '.pdb')), 'no staging left');
  assert.not.ok(existsSync(objectFile(c.store, digest)), 'the object left the store');
  assert.ok(readdirSync(join(c.store, 'quarantine', 'objects')).some((n) => digest.endsWith(n.split('.')[0]!)));
  assert.equal(readdirSync(join(c.store, 'journal')), []);
});

test("no inodes left on DIR's filesystem: E_NO_SPACE naming it, DIR as it was, gc has nothing to finish", async () => {
  if (!isRoot()) return skipTest('E_NO_SPACE in the target', 'root', 'mounting a tmpfs with few inodes needs root');
  const c = await applyCase(t.dir, 'inodes');
  await changedSession(c, 's', (root) => {
    for (let i = 0; i < 20; i++) mkdirSync(join(root, `dir${i}`));
    writeFileSync(join(root, 'a.txt'), 'changed\n');
  });
  const mnt = join(c.dir, 'small');
  mkdirSync(mnt);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m,nr_inodes=400', 'tmpfs', mnt]);
  try {
    const target = join(mnt, 'target');
    execFileSync('cp', ['-a', c.target, target]);
    // Leave 12 inodes: enough to stage, not enough for the 20 directories.
    const filler = join(mnt, 'filler');
    mkdirSync(filler);
    let n = 0;
    try {
      for (;;) writeFileSync(join(filler, String(n++)), '');
    } catch {
      // ENOSPC: no inode left
    }
    for (let i = 1; i <= 12; i++) rmSync(join(filler, String(n - 1 - i)));
    const before = await filesOf(target);
    const r = pdb(c.store, ['apply', 's', '--to', target, '--json']);
    assertTyped(r, 'E_NO_SPACE', 'apply with no inodes left');
    const err = JSON.parse(r.stdout).error as { message: string; hint: string };
    assert.match(err.hint, new RegExp(mnt.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), 'the hint names the full filesystem');
    assert.not.match(err.hint, /holds the store/);
    assert.equal(await filesOf(target), before, 'DIR as it was');
    assert.not.ok(existsSync(join(target, '.pdb')));
    const gc = pdb(c.store, ['gc', '--json']);
    assert.is(gc.code, 0, gc.stdout + gc.stderr);
    assert.equal(json(gc).actions, []);
  } finally {
    execFileSync('umount', [mnt]);
  }
});

test.run();
