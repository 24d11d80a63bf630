// apply never writes through a link or outside DIR: a parent of a changed path replaced by a
// symlink (to a directory outside), a mount inside DIR, DIR/.pdb as a link; and DIR may not be
// the store, inside it, or another session's root.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isRoot, skipPart, tempDir } from '../../../helpers/index.js';
import { assertTyped, pdb } from '../../../helpers/faults/fault-helpers.js';
import { applyCase, changedSession, filesOf } from '../../../helpers/apply-fixture.js';

const t = tempDir('pdb-apply-target-');
test.after(() => t.cleanup());

const editD = (root: string) => {
  writeFileSync(join(root, 'd/c.txt'), 'changed\n');
  writeFileSync(join(root, 'd/added.txt'), 'added\n');
  writeFileSync(join(root, 'a.txt'), 'changed too\n');
};

test('a parent replaced by a symlink to a directory outside: E_APPLY_CONFLICT naming it, nothing written anywhere', async () => {
  const c = await applyCase(t.dir, 'linked-parent');
  await changedSession(c, 's', editD);
  const outsideD = join(c.outside, 'D');
  execFileSync('cp', ['-a', join(c.target, 'd'), outsideD]);
  rmSync(join(c.target, 'd'), { recursive: true });
  symlinkSync(outsideD, join(c.target, 'd'));
  const before = { target: await filesOf(c.target), outside: await filesOf(c.outside) };
  const r = pdb(c.store, ['apply', 's', '--to', c.target, '--json']);
  assertTyped(r, 'E_APPLY_CONFLICT', 'apply through a linked parent');
  assert.match(r.stdout, /d\/c\.txt/);
  assert.match(r.stdout, /symlink/);
  assert.equal(await filesOf(c.outside), before.outside, 'OUTSIDE/D unchanged');
  assert.equal(await filesOf(c.target), before.target, 'nothing written in DIR');
  assert.is(readFileSync(join(outsideD, 'c.txt'), 'utf8'), 'c\n');
});

test('a mount inside DIR (another device) is never written through', async () => {
  if (!isRoot()) return skipPart('a mount inside DIR', 'root', 'mounting a tmpfs needs root');
  const c = await applyCase(t.dir, 'mount-inside');
  await changedSession(c, 's', editD);
  const d = join(c.target, 'd');
  const saved = readFileSync(join(d, 'c.txt'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', d]);
  try {
    writeFileSync(join(d, 'c.txt'), saved);
    const r = pdb(c.store, ['apply', 's', '--to', c.target, '--json']);
    assertTyped(r, 'E_APPLY_CONFLICT', 'apply across a mount');
    assert.match(r.stdout, /d\/c\.txt/);
    assert.is(readFileSync(join(d, 'c.txt'), 'utf8'), 'c\n');
  } finally {
    execFileSync('umount', [d]);
  }
});

test('DIR/.pdb as a link (or a file) is refused before anything is written', async () => {
  const c = await applyCase(t.dir, 'linked-pdb');
  await changedSession(c, 's', editD);
  mkdirSync(join(c.outside, 'elsewhere'));
  symlinkSync(join(c.outside, 'elsewhere'), join(c.target, '.pdb'));
  const before = { target: await filesOf(c.target), outside: await filesOf(c.outside) };
  const r = pdb(c.store, ['apply', 's', '--to', c.target, '--json']);
  assert.is.not(r.code, 0, r.stdout);
  assert.match(r.stdout, /\.pdb/);
  assert.match(r.stdout, /E_BAD_PATH/);
  assert.equal(await filesOf(c.outside), before.outside);
  assert.equal(await filesOf(c.target), before.target);
  assert.equal(JSON.parse(pdb(c.store, ['doctor', '--json']).stdout).findings, []);
});

test('--to the store, a directory inside it, or another session root is refused (E_USAGE)', async () => {
  const c = await applyCase(t.dir, 'into-store');
  // Adds only: an apply anywhere without these paths would otherwise succeed.
  await changedSession(c, 's', (root) => writeFileSync(join(root, 'only-new.txt'), 'new\n'));
  const other = await c.svc.create('other', { from: c.src });
  for (const dir of [c.store, join(c.store, 'tmp'), other.root, join(other.root, 'lib')]) {
    const r = pdb(c.store, ['apply', 's', '--to', dir, '--json']);
    assertTyped(r, 'E_USAGE', `apply --to ${dir}`);
    assert.match(r.stdout, /store|session/);
  }
  assert.not.ok(
    (await c.svc.scanEntries('other')).some((e) => e.path === 'only-new.txt'),
    'the other session was written',
  );
});

test.run();
