// What export takes out of the store is hashed on the way: an object overwritten in the store is
// E_OBJECT_CORRUPT naming the path for export --patch and export --git (no patch file, no branch,
// the object quarantined). A killed export leaves only temp names gc knows (owner pid and start),
// and gc removes them once their process is gone.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SessionService } from '../../../sessions/service.js';
import { tempDir } from '../../helpers/index.js';
import { assertTyped, FAULT_CLI, fileDigest, flipByte, json, objectFile, pdb } from '../../helpers/faults/fault-helpers.js';
import { gitRun, makeRepo } from '../../helpers/way-back-fixture.js';

const t = tempDir('pdb-plumbing-');
test.after(() => t.cleanup());

async function session(label: string, files = 1) {
  const src = makeRepo(join(t.dir, label, 'src'));
  const store = join(t.dir, label, 'store');
  const svc = await SessionService.open(store, { create: true });
  const s = await svc.create('s', { from: src });
  for (let i = 0; i < files; i++) writeFileSync(join(s.root, `new-${i}.txt`), `new bytes ${i} ${'x'.repeat(i % 7 === 0 ? 200_000 : 10)}\n`);
  const cp = await svc.checkpoint('s');
  return { src, store, svc, cp };
}

test('export --patch and export --git of a tampered object: E_OBJECT_CORRUPT naming the path, nothing written, quarantined', async () => {
  for (const how of ['--patch', '--git'] as const) {
    const { src, store, cp } = await session(`tampered${how}`);
    const digest = fileDigest(store, cp.snapshot, 'new-0.txt');
    flipByte(objectFile(store, digest));
    const file = join(t.dir, `out${how}.patch`);
    const r = pdb(store, ['export', 's', ...(how === '--patch' ? ['--patch', file] : ['--git']), '--json']);
    assertTyped(r, 'E_OBJECT_CORRUPT', `export ${how}`);
    assert.match(JSON.parse(r.stdout).error.message, /new-0\.txt/);
    assert.not.ok(existsSync(file), 'no patch file');
    assert.is(gitRun(src, ['branch', '--list', 'pdb-env/s']), '', 'no branch');
    assert.not.ok(existsSync(objectFile(store, digest)), 'the object left the store');
    assert.ok(readdirSync(join(store, 'quarantine', 'objects')).length > 0);
  }
});

test('a killed export leaves temp names gc reads, and gc removes them', async () => {
  const { store } = await session('killed', 120);
  let killed = 0;
  for (const args of [
    ['--patch', join(t.dir, 'killed.patch')],
    ['--git', '--branch', 'killed'],
  ]) {
    const child = spawn(process.execPath, [FAULT_CLI, 'export', 's', ...args], {
      env: { ...process.env, PDB_ENV_STORE: store },
      stdio: 'ignore',
    });
    const tmp = join(store, 'tmp');
    const deadline = Date.now() + 20_000;
    while (readdirSync(tmp).length === 0 && child.exitCode === null && Date.now() < deadline) await sleep(1);
    if (child.exitCode === null) {
      child.kill('SIGKILL');
      killed++;
    }
    await new Promise((resolve) => child.once('close', resolve));
  }
  assert.ok(killed > 0, 'no export was killed while it had temp files: the test did not test');
  const left = readdirSync(join(store, 'tmp'));
  const doctor = json(pdb(store, ['doctor', '--json'])).findings as Array<{ kind: string; id: string }>;
  assert.not.ok(
    doctor.some((f) => f.kind === 'unknown-temp'),
    `names gc cannot read: ${JSON.stringify(doctor)}`,
  );
  const gc = pdb(store, ['gc', '--json']);
  assert.is(gc.code, 0, gc.stderr);
  assert.equal(readdirSync(join(store, 'tmp')), [], `left after gc (before: ${left.join(', ')})`);
});

test('a patch file cut short by a kill is removed by gc (its temp name is in the journal); other names beside it are not', async () => {
  const { store } = await session('beside');
  const dir = join(t.dir, 'beside-out');
  mkdirSync(dir);
  const partial = join(dir, '.out.patch.pdb-0a1b2c3d');
  writeFileSync(partial, 'diff --git a/x b/x\n(cut short');
  writeFileSync(join(dir, '.out.patch.pdb-mine'), 'not a name export writes');
  writeFileSync(
    join(store, 'journal', 'x-1.json'),
    JSON.stringify({ id: 'x-1', op: 'export', pid: 4194305, pidStart: null, startedAt: '2020-01-01T00:00:00Z', detail: { temp: partial } }),
  );
  const gc = pdb(store, ['gc', '--json']);
  assert.is(gc.code, 0, gc.stdout + gc.stderr);
  assert.equal(readdirSync(dir), ['.out.patch.pdb-mine']);
  assert.equal(json(pdb(store, ['doctor', '--json'])).findings, []);
});

test.run();
