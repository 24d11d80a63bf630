// model/os/dir-handle.ts, in each way it can make its calls (the addon's *at calls, /proc/self/fd
// paths, checked paths): writes land in the directory the handle holds, a component that is a
// link is refused (never followed), a directory renamed away is still the one written, and
// rmTreeAt removes a tree deeper than any path can name.
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  closeDir,
  dirHandleWay,
  hashFileAt,
  linkAt,
  listAt,
  mkdirAt,
  openDirAt,
  openParentAt,
  openRoot,
  readlinkAt,
  renameAt,
  rmTreeAt,
  statAt,
  symlinkAt,
  unlinkAt,
  writeFileAt,
  type DirHandleWay,
} from '../../../model/os/dir-handle.js';
import { sha256Hex } from '../../../model/os/hash.js';
import { tempDir } from '../../helpers/index.js';

const t = tempDir('pdb-dir-handle-');
test.after(() => {
  delete process.env.PDB_ENV_DIR_HANDLES;
  t.cleanup();
});

const code = (fn: () => unknown): string | null => {
  try {
    fn();
    return null;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? String(err);
  }
};

let n = 0;
for (const way of ['native', 'proc', 'path'] as DirHandleWay[]) {
  const use = () => {
    process.env.PDB_ENV_DIR_HANDLES = way;
    return dirHandleWay() === way;
  };

  test(`${way}: writes go into the handle's directory, also after it was renamed away; links are made, never followed`, () => {
    if (!use()) return;
    const dir = join(t.dir, `w${n++}`);
    mkdirSync(join(dir, 'a'), { recursive: true });
    const root = openRoot(dir);
    const a = openDirAt(root, 'a');
    try {
      writeFileAt(a, 'f', 'one\n', { mode: 0o755 });
      assert.is(readFileSync(join(dir, 'a/f'), 'utf8'), 'one\n');
      assert.is(statAt(a, 'f')!.mode & 0o777, 0o755);
      assert.is(hashFileAt(a, 'f'), sha256Hex('one\n'));
      assert.is(
        code(() => writeFileAt(a, 'f', 'two\n')),
        'EEXIST',
      );
      symlinkAt('f', a, 'l');
      assert.is(readlinkAt(a, 'l'), 'f');
      assert.ok(statAt(a, 'l')!.isSymbolicLink());
      assert.is(hashFileAt(a, 'l'), null, 'a link is not read through');
      linkAt(a, 'f', a, 'g');
      assert.is(statAt(a, 'g')!.ino, statAt(a, 'f')!.ino);
      assert.is(
        code(() => linkAt(a, 'f', a, 'g')),
        'EEXIST',
      );
      renameAt(a, 'g', root, 'moved', { noReplace: true });
      assert.is(
        code(() => renameAt(a, 'f', root, 'moved', { noReplace: true })),
        'EEXIST',
      );
      unlinkAt(root, 'moved');
      mkdirAt(a, 'sub');
      assert.equal(listAt(a).sort(), ['f', 'l', 'sub']);
      if (way !== 'path') {
        // The path way refuses a handle whose directory moved; the others write where it is now.
        renameSync(join(dir, 'a'), join(dir, 'b'));
        mkdirSync(join(dir, 'a'));
        writeFileAt(a, 'after', 'x');
        assert.ok(existsSync(join(dir, 'b/after')));
        assert.equal(readdirSync(join(dir, 'a')), []);
      } else {
        renameSync(join(dir, 'a'), join(dir, 'b'));
        assert.is(
          code(() => writeFileAt(a, 'after', 'x')),
          'ESTALE',
        );
      }
    } finally {
      closeDir(a);
      closeDir(root);
    }
  });

  test(`${way}: a component that is a link (or a file) is refused, its target untouched`, () => {
    if (!use()) return;
    const dir = join(t.dir, `l${n++}`);
    const outside = join(t.dir, `outside${n++}`);
    mkdirSync(dir);
    mkdirSync(outside);
    symlinkSync(outside, join(dir, 'link'));
    writeFileSync(join(dir, 'file'), '');
    const root = openRoot(dir);
    try {
      assert.ok(['ENOTDIR', 'ELOOP'].includes(code(() => openDirAt(root, 'link'))!));
      assert.ok(['ENOTDIR', 'ELOOP'].includes(code(() => openDirAt(root, 'file'))!));
      assert.ok(['ENOTDIR', 'ELOOP'].includes(code(() => openParentAt(root, 'link/x'))!));
      assert.is(
        code(() => openFileFollows(root)),
        'ELOOP',
      );
      assert.ok(['ENOTDIR', 'ELOOP'].includes(code(() => openRoot(join(dir, 'link')))!));
      assert.equal(readdirSync(outside), []);
    } finally {
      closeDir(root);
    }
  });
}

const openFileFollows = (root: ReturnType<typeof openRoot>) => writeFileAt(root, 'link', 'through', { exclusive: false });

// 3,000 levels of 'd/' are 6,000 bytes, past PATH_MAX; PDB_DEEP_LEVELS=10000 is the campaign's depth (each rmdir there costs the
// kernel ~1 ms on this VM's overlay /tmp, so the suite keeps it smaller).
const LEVELS = Number(process.env.PDB_DEEP_LEVELS ?? 3000);

test(`rmTreeAt removes a ${LEVELS}-level tree (no path can name its bottom), read-only directories included, and no link target`, () => {
  delete process.env.PDB_ENV_DIR_HANDLES;
  if (dirHandleWay() === 'path') return; // the path way cannot name the bottom of it
  const dir = join(t.dir, 'deep');
  const outside = join(t.dir, 'deep-outside');
  mkdirSync(join(dir, 'top'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, 'keep'), 'keep\n');
  const root = openRoot(dir);
  let cur = openDirAt(root, 'top');
  for (let i = 0; i < LEVELS; i++) {
    mkdirAt(cur, 'd');
    if (i % 1000 === 0) {
      writeFileAt(cur, 'f', String(i));
      symlinkAt(outside, cur, 'out');
    }
    const next = openDirAt(cur, 'd');
    if (i === LEVELS >> 1) mkdirAt(cur, 'ro', 0o555);
    closeDir(cur);
    cur = next;
  }
  closeDir(cur);
  rmTreeAt(root, 'top');
  closeDir(root);
  assert.equal(readdirSync(dir), []);
  assert.equal(readdirSync(outside), ['keep']);
});

test.run();
