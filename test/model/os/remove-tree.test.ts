// model/os/remove-tree.ts: a tree removed as `rm -rf` removes it (links unlinked, never followed; a
// missing path no error), with memory that does not grow with the tree (issue 38: Node 20's
// recursive fs.promises.rm put every entry of a 268,753-entry session in flight at once: the
// harness's discard grew its heap by about 200 MB, its RSS by 325 MB).
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { removeTree } from '../../../model/os/remove-tree.js';
import { tempDir } from '../../helpers/index.js';

const t = tempDir('pdb-remove-tree-');
test.after(() => t.cleanup());

test('a tree of directories, files and links goes; a link is removed, never followed; a missing path or a file is no error', async () => {
  const outside = join(t.dir, 'outside');
  mkdirSync(outside);
  writeFileSync(join(outside, 'keep.txt'), 'kept\n');
  const dir = join(t.dir, 'tree');
  mkdirSync(join(dir, 'a/b/c'), { recursive: true });
  mkdirSync(join(dir, 'empty'));
  writeFileSync(join(dir, 'a/b/c/f.txt'), 'x');
  writeFileSync(join(dir, 'top.txt'), 'y');
  symlinkSync(outside, join(dir, 'a/to-outside'));
  symlinkSync('missing-target', join(dir, 'dangling'));
  await removeTree(dir);
  assert.not.ok(existsSync(dir));
  assert.is(readFileSync(join(outside, 'keep.txt'), 'utf8'), 'kept\n');
  await removeTree(dir); // already gone
  const file = join(t.dir, 'file.txt');
  writeFileSync(file, 'z');
  await removeTree(file);
  assert.not.ok(existsSync(file));
  const link = join(t.dir, 'link');
  symlinkSync(outside, link);
  await removeTree(link);
  assert.not.ok(existsSync(link));
  assert.ok(existsSync(join(outside, 'keep.txt')));
});

test('removing a 24,000-file tree grows the heap by far less than the tree: it is never all in flight at once', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const dir = join(t.dir, 'big');
  // node_modules-shaped: packages of a few directories of files each.
  for (let p = 0; p < 40; p++)
    for (let d = 0; d < 6; d++) {
      const sub = join(dir, `pkg-${p}`, `lib-${d}`);
      mkdirSync(sub, { recursive: true });
      for (let f = 0; f < 100; f++) writeFileSync(join(sub, `file-${f}.js`), '');
    }
  gc();
  const start = process.memoryUsage().heapUsed;
  let peak = start;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 1);
  try {
    await removeTree(dir);
  } finally {
    clearInterval(sampler);
  }
  assert.not.ok(existsSync(dir));
  // fs.promises.rm grew it by about 20 MB here (an lstat, a path and a callback per entry at once).
  const grew = peak - start;
  assert.ok(grew < 8 * 2 ** 20, `removing the tree grew the heap by ${(grew / 2 ** 20).toFixed(1)} MiB`);
});

test.run();
