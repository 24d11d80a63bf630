// A test process killed mid-run leaves its temp dir, and with it mounts and loop devices: the
// runner's sweep releases and deletes them, and never touches a live owner's dir.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isRoot, REPO_ROOT, skipPart, tempDir } from './index.js';
import { loopDevicesUnder, mountsUnder, staleTempDirs, sweepStaleTempDirs } from './stale-temp.js';

const helpers = pathToFileURL(join(REPO_ROOT, 'dist', 'test', 'helpers', 'index.js')).href;

/** A child test process that makes a temp dir (optionally mounting and attaching in it), prints it, then waits to be killed. */
async function killedOwner(withMounts: boolean): Promise<string> {
  const setup = withMounts
    ? `const { execFileSync } = await import('node:child_process');
       const { mkdirSync, writeFileSync } = await import('node:fs');
       mkdirSync(t.dir + '/mnt'); execFileSync('mount', ['-t', 'tmpfs', 'tmpfs', t.dir + '/mnt']);
       mkdirSync(t.dir + '/mnt/inner'); execFileSync('mount', ['-t', 'tmpfs', 'tmpfs', t.dir + '/mnt/inner']);
       writeFileSync(t.dir + '/img', Buffer.alloc(1 << 20)); execFileSync('losetup', ['-f', t.dir + '/img']);`
    : '';
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `const { tempDir } = await import(${JSON.stringify(helpers)}); const t = tempDir('pdb-stale-'); ${setup} console.log(t.dir); setInterval(() => {}, 1000);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const dir = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (b: Buffer) => resolve(b.toString().trim()));
    child.once('exit', (code) => reject(new Error(`child exited ${code} before making its dir`)));
  });
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await gone;
  return dir;
}

test("the dir of a killed test process is swept; a live owner's dir is not", async () => {
  const live = tempDir('pdb-stale-live-');
  try {
    const dead = await killedOwner(false);
    assert.ok(existsSync(dead));
    assert.ok(staleTempDirs().includes(dead), 'a dead owner makes its dir stale');
    assert.not.ok(staleTempDirs().includes(live.dir), 'a live owner keeps its dir');
    const r = await sweepStaleTempDirs();
    assert.ok(r.dirs.includes(dead));
    assert.not.ok(existsSync(dead));
    assert.ok(existsSync(live.dir));
  } finally {
    live.cleanup();
  }
});

test("mounts (nested) and loop devices under a killed test's dir are released before it is deleted", async () => {
  if (!isRoot()) return skipPart('sweeping mounts of a killed test', 'root', 'mount and losetup need root');
  const dead = await killedOwner(true);
  assert.is(mountsUnder(dead).length, 2);
  assert.is(loopDevicesUnder(dead).length, 1);
  // A file on the inner mount must not be deleted through the mount: it goes with the tmpfs.
  writeFileSync(join(dead, 'mnt', 'inner', 'x'), 'x');
  const r = await sweepStaleTempDirs();
  assert.equal(r.unmounted, [join(dead, 'mnt', 'inner'), join(dead, 'mnt')]);
  assert.is(r.detached.length, 1);
  assert.equal(mountsUnder(dead), []);
  assert.equal(loopDevicesUnder(dead), []);
  assert.not.ok(existsSync(dead));
});

test('a killed test left a tree deeper than a path can name: the sweep removes it and the runner goes on', async () => {
  const dead = await killedOwner(false);
  // Made by relative steps: no path of it fits PATH_MAX (rmSync's recursion overflowed here once).
  const code = `process.chdir(${JSON.stringify(dead)}); const fs = require('node:fs'); for (let i = 0; i < 6000; i++) { fs.mkdirSync('q'); process.chdir('q'); } fs.writeFileSync('leaf', 'x');`;
  const made = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8' });
  assert.is(made.status, 0, made.stderr);
  const r = await sweepStaleTempDirs();
  assert.ok(r.dirs.includes(dead));
  assert.not.ok(existsSync(dead), 'the deep tree is gone');
});

test.run();
