// run, enter and checkpoint work only in the directory the store made: a session root replaced by a
// link (to / or anywhere) and a removed temp dir replaced by a link are E_SESSION_DAMAGED, and
// nothing runs in, is walked in or is written to where the link points.
import { mkdirSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tempDir, writeTree } from '../../helpers/index.js';
import { assertTyped, pdb } from '../../helpers/faults/fault-helpers.js';

const t = tempDir('pdb-run-');
test.after(() => t.cleanup());

const src = join(t.dir, 'src');
writeTree(src, { 'a.txt': 'a\n' });
const store = join(t.dir, 'store');

test('a session root replaced by a link: run, enter and checkpoint are E_SESSION_DAMAGED; discard removes the link only', () => {
  const made = pdb(store, ['create', 's', '--from', src]);
  assert.is(made.code, 0, made.stderr);
  const root = join(store, 'sessions', 's', 'root');
  const elsewhere = join(t.dir, 'elsewhere');
  mkdirSync(elsewhere);
  // elsewhere first: a build without the check would run (and walk) there before it could reach /
  for (const target of [elsewhere, '/']) {
    rmSync(root, { recursive: true, force: true });
    symlinkSync(target, root);
    const run = pdb(store, ['run', 's', '--json', '--', 'sh', '-c', 'touch made-here']);
    assertTyped(run, 'E_SESSION_DAMAGED', `run with the root a link to ${target}`);
    assertTyped(pdb(store, ['enter', 's', '--json'], { SHELL: '/bin/true' }), 'E_SESSION_DAMAGED', 'enter');
    assertTyped(pdb(store, ['checkpoint', 's', '--json']), 'E_SESSION_DAMAGED', 'checkpoint');
    assert.equal(readdirSync(elsewhere), [], 'nothing ran where the link points');
    rmSync(root);
  }
  writeFileSync(join(elsewhere, 'keep.txt'), 'keep\n');
  symlinkSync(elsewhere, root);
  const discard = pdb(store, ['discard', 's']);
  assert.is(discard.code, 0, discard.stderr);
  assert.equal(readdirSync(elsewhere), ['keep.txt'], 'discard removed the link, not what it points to');
});

test('a removed temp dir replaced by a link: run is E_SESSION_DAMAGED and writes nothing where it points', () => {
  pdb(store, ['create', 'tmpdir', '--from', src]);
  const first = pdb(store, ['run', 'tmpdir', '--', 'sh', '-c', 'echo "$TMPDIR"']);
  assert.is(first.code, 0, first.stderr);
  const tmp = first.stdout.trim();
  const aside = join(t.dir, 'aside');
  mkdirSync(aside);
  rmSync(tmp, { recursive: true });
  symlinkSync(aside, tmp);
  const run = pdb(store, ['run', 'tmpdir', '--json', '--', 'sh', '-c', 'touch "$TMPDIR/leaked"']);
  assertTyped(run, 'E_SESSION_DAMAGED', 'run with the temp dir a link');
  assert.match(JSON.parse(run.stdout).error.message, /tmp/);
  assert.equal(readdirSync(aside), []);
  rmSync(tmp);
  renameSync(aside, join(t.dir, 'aside-done'));
  assert.is(pdb(store, ['run', 'tmpdir', '--', 'true']).code, 0, 'pdb-env makes a removed temp dir again');
});

test.run();
