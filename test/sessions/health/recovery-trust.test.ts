// gc trusts no journal record for where to write (issue 41, findings 2 and 3): a forged apply intent
// naming a session root or a directory the store never applied into, and a forged discard intent
// naming a ready session, are quarantined and reported by doctor, never run.
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tempDir } from '../../helpers/index.js';
import { applyCase, changedSession, filesOf } from '../../helpers/apply-fixture.js';

const t = tempDir('pdb-recovery-trust-');
test.after(() => t.cleanup());

const DEAD = 2 ** 22 + 1;

function forge(store: string, id: string, fields: object) {
  writeFileSync(
    join(store, 'journal', `${id}.json`),
    JSON.stringify({ id, pid: DEAD, pidStart: null, startedAt: new Date(Date.now() + 60_000).toISOString(), detail: {}, ...fields }),
  );
}

const applyDetail = (dir: string, changeset: string) => {
  const st = lstatSync(dir, { bigint: true });
  return { dir, dev: String(st.dev), ino: String(st.ino), changeset, phase: 'applying' };
};

test('a forged apply intent naming another session root, or the store itself, is quarantined, never run', async () => {
  const c = await applyCase(t.dir, 'forged-apply');
  const cp = await changedSession(c, 's', (root) => writeFileSync(join(root, 'a.txt'), 'changed\n'));
  const victim = await c.svc.create('victim', { from: c.src });
  writeFileSync(join(victim.root, 'work.txt'), 'uncheckpointed\n');
  const victimBefore = await filesOf(victim.root);
  writeFileSync(join(c.store, 'a.txt'), 'alpha\n'); // as the base had it: a forged apply into the store could replace it
  forge(c.store, 'f1', { op: 'apply', session: 's', detail: applyDetail(victim.root, cp.changeset) });
  forge(c.store, 'f2', { op: 'apply', session: 's', detail: applyDetail(c.store, cp.changeset) });
  const found = (await c.svc.doctor()).filter((f) => (f.kind as string) === 'untrusted-intent').map((f) => f.id);
  assert.equal(found.sort(), ['f1', 'f2']);
  const r = await c.svc.gc();
  assert.equal(await filesOf(victim.root), victimBefore, `gc wrote into a session root: ${r.actions.join('\n')}`);
  assert.is(readFileSync(join(c.store, 'a.txt'), 'utf8'), 'alpha\n', `gc wrote into the store: ${r.actions.join('\n')}`);
  assert.equal(readdirSync(join(c.store, 'journal')), []);
  const quarantined = readdirSync(join(c.store, 'quarantine', 'journal'));
  assert.ok(quarantined.some((n) => n.startsWith('f1.json')) && quarantined.some((n) => n.startsWith('f2.json')), quarantined.join());
  assert.match(r.notes.join('\n'), /f1 was not run: .*session root|inside the pdb-env store/);
});

test('a forged apply intent naming an ordinary directory outside every store, with a real Changeset, is quarantined, never run (finding 2)', async () => {
  const c = await applyCase(t.dir, 'forged-ordinary');
  const cp = await changedSession(c, 's', (root) => {
    writeFileSync(join(root, 'a.txt'), 'changed\n');
    rmSync(join(root, 'lib'), { recursive: true });
  });
  // c.target holds the base: the forged intent would turn it into the session's result, lib deleted.
  const before = await filesOf(c.target);
  for (const [id, phase] of [
    ['o1', 'applying'],
    ['o2', 'rolling-back'],
  ] as const) {
    forge(c.store, id, { op: 'apply', session: 's', detail: { ...applyDetail(c.target, cp.changeset), phase, nonce: 'a'.repeat(32) } });
    // o1: no staging in DIR at all; o2: a staging whose marker holds another nonce.
    if (id === 'o2') {
      mkdirSync(join(c.target, '.pdb', `apply-${id}`), { recursive: true });
      writeFileSync(join(c.target, '.pdb', `apply-${id}`, 'nonce'), 'b'.repeat(32));
    }
    const withStaging = await filesOf(c.target);
    const found = (await c.svc.doctor()).find((f) => f.id === id);
    assert.is(found?.kind as string, 'untrusted-intent', JSON.stringify(found));
    assert.match(found!.detail, id === 'o1' ? /staging .* is missing/ : /does not hold the intent's nonce/);
    assert.match(found!.repair ?? '', /pdb-env apply s --to/);
    const r = await c.svc.gc();
    assert.equal(await filesOf(c.target), withStaging, `gc ran a forged apply: ${r.actions.join('\n')}`);
    assert.equal(withStaging, before);
    assert.ok(readdirSync(join(c.store, 'quarantine', 'journal')).some((n) => n.startsWith(`${id}.json`)));
  }
  assert.equal(readdirSync(join(c.store, 'journal')), []);
});

test('an apply intent written before intents held a nonce is quarantined the same way', async () => {
  const c = await applyCase(t.dir, 'old-intent');
  const cp = await changedSession(c, 's', (root) => writeFileSync(join(root, 'a.txt'), 'changed\n'));
  const before = await filesOf(c.target);
  forge(c.store, 'old1', { op: 'apply', session: 's', detail: applyDetail(c.target, cp.changeset) });
  const found = (await c.svc.doctor()).find((f) => f.id === 'old1');
  assert.is(found?.kind as string, 'untrusted-intent', JSON.stringify(found));
  await c.svc.gc();
  assert.equal(await filesOf(c.target), before);
  assert.equal(readdirSync(join(c.store, 'journal')), []);
});

test('a forged discard intent naming a ready session is quarantined, never run: the session and its work stay', async () => {
  const c = await applyCase(t.dir, 'forged-discard');
  const victim = await c.svc.create('victim', { from: c.src });
  writeFileSync(join(victim.root, 'work.txt'), 'uncheckpointed\n');
  forge(c.store, 'd1', { op: 'discard', session: 'victim' });
  assert.ok((await c.svc.doctor()).some((f) => (f.kind as string) === 'untrusted-intent' && f.id === 'd1'));
  const r = await c.svc.gc();
  assert.not.match(r.actions.join('\n'), /remove session victim/);
  assert.is(readFileSync(join(victim.root, 'work.txt'), 'utf8'), 'uncheckpointed\n');
  assert.equal(
    (await c.svc.list()).map((s) => s.name),
    ['victim'],
  );
  assert.ok(readdirSync(join(c.store, 'quarantine', 'journal')).some((n) => n.startsWith('d1.json')));
});

/** A tree `levels` directories deep under `dir`, made by relative steps (no path of it fits PATH_MAX). */
function deepTree(dir: string, levels: number): void {
  const code = `process.chdir(${JSON.stringify(dir)}); const fs = require('node:fs'); for (let i = 0; i < ${levels}; i++) { fs.mkdirSync('q'); process.chdir('q'); } fs.writeFileSync('leaf', 'x');`;
  const r = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
}

test("a 10,000-level tree in a session: discard finishes, and gc removes one left in the store's tmp (issue 41, finding 7)", async () => {
  const c = await applyCase(t.dir, 'deep');
  try {
    await deepCase(c);
  } finally {
    spawnSync('rm', ['-rf', c.dir]); // GNU rm walks by handles: the test's own cleanup (rmSync) overflows its stack here
  }
});

async function deepCase(c: Awaited<ReturnType<typeof applyCase>>): Promise<void> {
  const s = await c.svc.create('deep', { from: c.src });
  deepTree(s.root, 10_000);
  await c.svc.discard('deep');
  assert.not.ok(existsSync(c.svc.sessionDir('deep')));
  assert.equal(readdirSync(join(c.store, 'tmp')), [], 'discard removed its trash');
  // As a discard killed mid-delete leaves it: a temp tree of a process that is gone.
  const left = join(c.store, 'tmp', `discard.${DEAD}.x.deep01`);
  mkdirSync(left);
  deepTree(left, 10_000);
  const r = await c.svc.gc();
  assert.equal(r.failed, [], JSON.stringify(r.failed));
  assert.equal(readdirSync(join(c.store, 'tmp')), []);
}

test.run();
