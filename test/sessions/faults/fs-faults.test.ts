// Filesystem faults through the real CLI: ENOSPC on a small loopback XFS at several levels of
// free space (down to none and one block), a read-only store (a read-only bind mount), and a
// store tmp that cannot be written (chattr +i). Each must be a typed error naming what failed,
// leave nothing half-written, and leave a store that doctor and gc call clean once space is back.
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, rmSync, statfsSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hasCommand, isRoot, skipTest, tempDir, writeTree } from '../../helpers/index.js';
import { withLoopFs } from '../../helpers/cow-harness.js';
import { assertTyped, json, pdb, writeSource, type Run } from '../../helpers/faults/fault-helpers.js';

const t = tempDir('pdb-fsfault-');
test.after(() => t.cleanup());

const canRun = isRoot() && hasCommand('mkfs.xfs') && hasCommand('losetup');
let faults = 0;

function freeBytes(path: string): number {
  const s = statfsSync(path);
  return s.bavail * s.bsize;
}

/** Fill the filesystem of `dir` until at most `leave` bytes are free; returns the filler files. */
function fill(dir: string, leave: number): string[] {
  const files: string[] = [];
  const big = join(dir, `filler-${files.length}`);
  const first = freeBytes(dir) - leave - 4 * 1024 * 1024;
  if (first > 0) {
    execFileSync('fallocate', ['-l', String(first), big]);
    files.push(big);
  }
  // Top up in shrinking chunks: XFS keeps per-AG reserves, so free space is only known by writing.
  const fd = openSync(join(dir, 'filler-top'), 'w');
  files.push(join(dir, 'filler-top'));
  try {
    for (let chunk = 1 << 20; chunk >= 4096 && freeBytes(dir) > leave;) {
      try {
        writeSync(fd, Buffer.alloc(chunk));
        fsyncSync(fd);
      } catch {
        chunk >>= 1; // ENOSPC at this size: try smaller pieces
      }
    }
  } finally {
    closeSync(fd);
  }
  return files;
}

/** After a failed command: no session directory, no intent, nothing in tmp; doctor and gc clean once space is back. */
function assertNothingHalfMade(store: string, name: string, what: string): void {
  assert.not.ok(existsSync(join(store, 'sessions', name)), `${what}: a session directory was left`);
  assert.equal(readdirSync(join(store, 'journal')), [], `${what}: an intent was left`);
  assert.equal(readdirSync(join(store, 'tmp')), [], `${what}: a temp file was left`);
}

test('ENOSPC: create fails with E_NO_SPACE and a hint at every level of free space, leaving nothing half-made', async () => {
  if (!canRun) return skipTest('ENOSPC', 'xfs', 'needs root, losetup and mkfs.xfs');
  await withLoopFs('xfs', t.dir, async (mnt) => {
    const store = join(mnt, 'store');
    const src = join(t.dir, 'src');
    writeSource(src);
    writeTree(join(src, 'data'), Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`blob${i}.bin`, 'x'.repeat(256 * 1024)])));
    json(pdb(store, ['create', 'first', '--from', src, '--json']));
    const outcomes: string[] = [];
    // From "the tree does not fit" down to "one block" and "nothing": each level fails at another step.
    for (const leave of [1024 * 1024, 256 * 1024, 64 * 1024, 16 * 1024, 4096, 0]) {
      const fillers = fill(mnt, leave);
      try {
        for (const [name, args] of [
          [`copy-${leave}`, ['--env', 'main']],
          [`import-${leave}`, ['--from', src]],
        ] as const) {
          const r: Run = pdb(store, ['create', name, ...args, '--json']);
          faults++;
          if (r.code === 0) {
            outcomes.push(`${name}: ok`);
            json(pdb(store, ['discard', name, '--force', '--json']));
            continue;
          }
          assertTyped(r, 'E_NO_SPACE', `create ${name}`);
          const error = JSON.parse(r.stdout).error as { message: string; hint: string };
          assert.match(error.message, /no space left on the device/);
          assert.match(error.message, /\//, 'the message names a path');
          assert.match(error.hint, /Free space/);
          assertNothingHalfMade(store, name, name);
          outcomes.push(`${name}: E_NO_SPACE (${error.message.split(' failed:')[0]})`);
        }
      } finally {
        for (const f of fillers) unlinkSync(f);
      }
    }
    assert.ok(outcomes.filter((o) => o.includes('E_NO_SPACE')).length >= 6, outcomes.join(', '));
    assert.equal(json(pdb(store, ['doctor', '--json'])).findings, []);
    assert.is(pdb(store, ['verify']).code, 0);
    for (const name of ['copy-0', 'import-0']) json(pdb(store, ['create', name, '--from', src, '--json']));
    console.log(`ENOSPC: ${outcomes.join(', ')}`);
  });
});

test('a read-only store: discard, create, checkpoint and gc are E_READ_ONLY naming the path; doctor and list still work', () => {
  if (!isRoot()) return skipTest('read-only store', 'root', 'needs root (a read-only bind mount)');
  const src = join(t.dir, 'ro-src');
  writeSource(src);
  const store = join(t.dir, 'ro-store');
  json(pdb(store, ['create', 'r1', '--from', src, '--json']));
  execFileSync('mount', ['--bind', store, store]);
  try {
    execFileSync('mount', ['-o', 'remount,bind,ro', store]);
    for (const args of [['discard', 'r1'], ['create', 'r2', '--env', 'main'], ['checkpoint', 'r1'], ['gc']]) {
      const r = pdb(store, [...args, '--json']);
      faults++;
      assertTyped(r, 'E_READ_ONLY', args.join(' '));
      assert.match(JSON.parse(r.stdout).error.message, new RegExp(store.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
      assert.match(JSON.parse(r.stdout).error.hint, /read-write/);
    }
    assert.is(pdb(store, ['list']).code, 0);
    assert.is(pdb(store, ['doctor']).code, 0);
  } finally {
    execFileSync('umount', [store]);
  }
  assert.equal(json(pdb(store, ['doctor', '--json'])).findings, []);
  assert.is(json(pdb(store, ['discard', 'r1', '--json'])).discarded, true);
});

test('an intent that cannot be written (chattr +i on the store tmp) leaves no session directory behind', () => {
  if (!isRoot() || !hasCommand('chattr')) return skipTest('immutable tmp', 'root', 'needs root and chattr');
  const src = join(t.dir, 'imm-src');
  writeSource(src);
  const store = join(t.dir, 'imm-store');
  json(pdb(store, ['create', 'i1', '--from', src, '--json']));
  const tmp = join(store, 'tmp');
  const probe = join(t.dir, 'chattr-probe');
  mkdirSync(probe);
  try {
    execFileSync('chattr', ['+i', probe]);
    execFileSync('chattr', ['-i', probe]);
  } catch {
    return skipTest('immutable tmp', 'root', 'the filesystem of the temp dir has no immutable attribute');
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
  execFileSync('chattr', ['+i', tmp]);
  try {
    for (const [name, args] of [
      ['i2', ['--env', 'main']],
      ['i3', ['--from', src]],
    ] as const) {
      const r = pdb(store, ['create', name, ...args, '--json']);
      faults++;
      assertTyped(r, 'E_PERMISSION', `create ${name}`);
      assert.match(JSON.parse(r.stdout).error.hint, /chattr/);
      assert.not.ok(existsSync(join(store, 'sessions', name)), `create ${name} left its directory`);
      assert.equal(readdirSync(join(store, 'journal')), []);
    }
  } finally {
    execFileSync('chattr', ['-i', tmp]);
  }
  assert.equal(json(pdb(store, ['doctor', '--json'])).findings, []);
  json(pdb(store, ['create', 'i2', '--env', 'main', '--json']));
});

test.after(() => console.log(`filesystem faults injected: ${faults}`));

test.run();
