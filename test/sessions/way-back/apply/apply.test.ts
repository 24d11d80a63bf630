// apply: the last checkpoint written back into a directory with a per-path compare-and-set. A
// property over random changesets (apply equals the session's result; .env, node_modules and the
// .git directory untouched), a refused apply writes nothing, and a crash between the staged renames
// is finished by gc. PDB_APPLY_RUNS changes the run count (default 10).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isPdbError } from '../../../../model/errors.js';
import { SessionService } from '../../../../sessions/service.js';
import { tempDir } from '../../../helpers/index.js';
import { pdb } from '../../../helpers/faults/fault-helpers.js';
import { applyOps, filesOf, forRandomChangesets, gitRun, makeRepo, nonDirs } from '../../../helpers/way-back-fixture.js';

const RUNS = Number(process.env.PDB_APPLY_RUNS ?? 10);
const t = tempDir('pdb-apply-');
test.after(() => t.cleanup());

/** What apply must never touch: the ignored .env, the excluded node_modules, git's own directory. */
const untouched = (dir: string) => ({
  env: readFileSync(join(dir, '.env'), 'utf8'),
  modules: readFileSync(join(dir, 'node_modules/pkg/index.js'), 'utf8'),
  head: gitRun(dir, ['rev-parse', 'HEAD']),
  index: readFileSync(join(dir, '.git/index')).toString('base64'),
});

test(`apply writes exactly the session's result into its source (${RUNS} random changesets), touching nothing else`, async () => {
  await forRandomChangesets(t.dir, RUNS, async ({ src, svc, checkpoint, expected, ops }) => {
    const before = untouched(src);
    const r = await svc.apply('s');
    assert.is(r.changes, checkpoint.changes);
    assert.equal(await filesOf(src), expected, JSON.stringify(ops));
    assert.equal(untouched(src), before);
    assert.not.ok(existsSync(join(src, '.pdb')), 'the staging is gone');
  });
});

test('apply over a path the user edited since is E_APPLY_CONFLICT listing it, and writes nothing', async () => {
  const src = makeRepo(join(t.dir, 'conflict/src'));
  const svc = await SessionService.open(join(t.dir, 'conflict/store'), { create: true });
  const s = await svc.create('s', { from: src });
  applyOps(s.root, [
    { op: 'write', path: 'a.txt', bytes: [1, 2], exec: false },
    { op: 'write', path: 'new/deep/n.bin', bytes: [3], exec: true },
    { op: 'delete', path: 'lib' },
  ]);
  await svc.checkpoint('s');
  writeFileSync(join(src, 'lib/x.js'), 'the user was here\n');
  writeFileSync(join(src, 'lib/stray.txt'), 'not in the base\n');
  const before = await filesOf(src);
  try {
    await svc.apply('s');
    assert.unreachable('apply should refuse');
  } catch (err) {
    assert.ok(isPdbError(err, 'E_APPLY_CONFLICT'), String(err));
    assert.match((err as Error).message, /lib\/x\.js/);
    assert.match((err as Error).message, /lib\/stray\.txt/);
    assert.not.match((err as Error).message, /a\.txt/);
  }
  assert.equal(await filesOf(src), before, 'nothing written');
  assert.not.ok(existsSync(join(src, '.pdb')));
  assert.equal(await svc.doctor(), []);
});

test('a crash between the staged renames (SIGKILL) is finished by gc: the result whole, the staging and the intent gone', async () => {
  const src = makeRepo(join(t.dir, 'crash/src'));
  const store = join(t.dir, 'crash/store');
  const svc = await SessionService.open(store, { create: true });
  const s = await svc.create('s', { from: src });
  applyOps(s.root, [
    { op: 'write', path: 'a.txt', bytes: [65, 10], exec: false },
    { op: 'write', path: '日本 語.md', bytes: [66], exec: false },
    { op: 'dir', path: 'run.sh' },
    { op: 'delete', path: 'é/ü.txt' },
  ]);
  const cp = await svc.checkpoint('s');
  const crashed = pdb(store, ['apply', 's'], { PDB_ENV_CRASH_AT: 'apply:after-first-rename' });
  assert.is(crashed.signal, 'SIGKILL', crashed.stderr);
  assert.ok(existsSync(join(src, '.pdb')), 'the staging is there after the crash');
  const findings = await svc.doctor();
  // The apply's intent, and its lock on DIR (both of a process that is gone).
  assert.equal(
    findings.map((f) => f.kind),
    ['abandoned-intent', 'stale-lock'],
  );
  const gc = await svc.gc();
  assert.ok(
    gc.actions.some((a) => a.startsWith('finish apply of s into')),
    gc.actions.join('\n'),
  );
  assert.equal(await filesOf(src), nonDirs(svc.readSnapshot(cp.snapshot).entries));
  assert.not.ok(existsSync(join(src, '.pdb')));
  assert.equal(await svc.doctor(), []);
  execFileSync('git', ['-C', src, 'status', '--porcelain']); // still a working repository
});

test('an apply that already completed is a no-op with exit 0; a partly changed target is still a conflict', async () => {
  const src = makeRepo(join(t.dir, 'again/src'));
  const store = join(t.dir, 'again/store');
  const svc = await SessionService.open(store, { create: true });
  const s = await svc.create('s', { from: src });
  applyOps(s.root, [
    { op: 'write', path: 'a.txt', bytes: [1, 2], exec: false },
    { op: 'dir', path: 'run.sh' },
    { op: 'delete', path: 'lib' },
  ]);
  const cp = await svc.checkpoint('s');
  const first = pdb(store, ['apply', 's', '--json']);
  assert.is(first.code, 0, first.stdout + first.stderr);
  const applied = await filesOf(src);
  const again = pdb(store, ['apply', 's', '--json']);
  assert.is(again.code, 0, `a completed apply again: ${again.stdout}${again.stderr}`);
  const r = JSON.parse(again.stdout) as { written: number; deleted: number; changes: number };
  assert.equal([r.changes, r.written, r.deleted], [cp.changes, 0, 0]);
  assert.equal(await filesOf(src), applied);
  assert.not.ok(existsSync(join(src, '.pdb')));
  writeFileSync(join(src, 'a.txt'), 'alpha\n');
  const partly = pdb(store, ['apply', 's', '--json']);
  assert.is.not(partly.code, 0);
  assert.is(JSON.parse(partly.stdout).error.code, 'E_APPLY_CONFLICT');
});

test.run();
