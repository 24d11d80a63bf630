// gc next to live work and damage, in-process: what it removes, what it keeps, what it only reports.
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { processStartTime } from '../../../model/os/proc.js';
import { GARBAGE_GRACE_MS } from '../../../sessions/locks/lock.js';
import { SessionService } from '../../../sessions/service.js';
import { tempDir, writeTree } from '../../helpers/index.js';
import { killHolders, startHolder } from '../../helpers/locks/lock-helpers.js';

const t = tempDir();
test.after(() => {
  killHolders();
  t.cleanup();
});

const DEAD = 2 ** 22 + 1;
let n = 0;
async function setup() {
  const dir = join(t.dir, `case${n++}`);
  const src = join(dir, 'src');
  writeTree(src, { 'a.txt': 'a\n' });
  const svc = await SessionService.open(join(dir, 'store'), { create: true });
  return { dir, src, svc };
}

function intent(svc: SessionService, id: string, fields: object) {
  writeFileSync(
    join(svc.store.paths.journal, `${id}.json`),
    JSON.stringify({ id, pid: DEAD, pidStart: null, startedAt: new Date(Date.now() - 60_000).toISOString(), detail: {}, ...fields }),
  );
}

const kinds = async (svc: SessionService) => (await svc.doctor()).map((f) => `${f.kind} ${f.id}`).sort();

test('gc removes what belongs to nobody and keeps what holds files without a record', async () => {
  const { dir, svc } = await setup();
  mkdirSync(svc.sessionDir('empty'));
  mkdirSync(join(svc.sessionDir('empty'), 'root'));
  mkdirSync(join(svc.sessionDir('lost'), 'root'), { recursive: true });
  writeFileSync(join(svc.sessionDir('lost'), 'root', 'work.txt'), 'work');
  const outside = join(dir, 'outside');
  mkdirSync(outside);
  writeFileSync(join(outside, 'keep.txt'), 'keep');
  symlinkSync(outside, join(svc.store.paths.sessions, 'planted'));
  writeFileSync(join(svc.store.paths.locks, 'store.lock'), JSON.stringify({ pid: DEAD, pidStart: null }));
  writeFileSync(join(svc.store.paths.environments, `.main.json.lock.lock-tmp.${DEAD}.x.ab12`), '{}');
  assert.equal(await kinds(svc), [
    'damaged-session lost',
    'foreign-entry sessions/planted',
    'orphan-session-dir empty',
    'stale-lock locks/store.lock',
    `temp-file environments/.main.json.lock.lock-tmp.${DEAD}.x.ab12`,
  ]);
  const r = await svc.gc();
  assert.ok(r.actions.includes('remove session empty (empty, without a record)'), r.actions.join('\n'));
  assert.not.ok(existsSync(svc.sessionDir('empty')));
  assert.is(readFileSync(join(svc.sessionDir('lost'), 'root', 'work.txt'), 'utf8'), 'work', 'files without a record are kept');
  assert.is(readFileSync(join(outside, 'keep.txt'), 'utf8'), 'keep', 'the link was removed, not followed');
  assert.not.ok(existsSync(join(svc.store.paths.sessions, 'planted')));
  assert.equal(await kinds(svc), ['damaged-session lost']);
  assert.equal(readdirSync(svc.store.paths.tmp), []);
});

test('an interrupted create is undone, an interrupted discard finished, but a session made after a discard intent is kept', async () => {
  const { src, svc } = await setup();
  await svc.create('undo', { from: src });
  const rec = JSON.parse(readFileSync(join(svc.sessionDir('undo'), 'session.json'), 'utf8'));
  writeFileSync(join(svc.sessionDir('undo'), 'session.json'), JSON.stringify({ ...rec, state: 'creating' }));
  intent(svc, 'c-1', { op: 'create', session: 'undo' });
  mkdirSync(svc.sessionDir('norecord'));
  intent(svc, 'c-2', { op: 'create', session: 'norecord' });
  await svc.create('finish', { from: src });
  // A discard marks the record before it removes anything: without that mark its intent is not run (recovery-trust.test.ts).
  const fin = JSON.parse(readFileSync(join(svc.sessionDir('finish'), 'session.json'), 'utf8'));
  writeFileSync(join(svc.sessionDir('finish'), 'session.json'), JSON.stringify({ ...fin, state: 'discarding' }));
  intent(svc, 'd-1', { op: 'discard', session: 'finish', startedAt: new Date(Date.now() + 1).toISOString() });
  intent(svc, 'd-2', { op: 'discard', session: 'reborn', startedAt: '2000-01-01T00:00:00.000Z' });
  await svc.create('reborn', { from: src });
  await svc.gc();
  assert.equal(
    (await svc.list()).map((s) => s.name),
    ['reborn'],
  );
  assert.equal(readdirSync(svc.store.paths.journal), []);
  assert.equal(await svc.doctor(), []);
});

test('a dead create whose record is unreadable is quarantined, not deleted', async () => {
  const { src, svc } = await setup();
  await svc.create('hurt', { from: src });
  writeFileSync(join(svc.sessionDir('hurt'), 'session.json'), '{"version":1,');
  intent(svc, 'c-3', { op: 'create', session: 'hurt' });
  const r = await svc.gc();
  assert.match(r.notes.join('\n'), /session hurt: Its files are kept in .*copy out what you need, then pdb-env discard hurt/);
  assert.ok(existsSync(join(svc.sessionRoot('hurt'), 'a.txt')));
  assert.equal(readdirSync(join(svc.store.paths.quarantine, 'records')).length, 1);
});

test('gc leaves alone a session whose owner is alive: a live lease holder, a live create intent, a live temp tree', async () => {
  const { src, svc } = await setup();
  await svc.create('busy', { from: src });
  const rec = JSON.parse(readFileSync(join(svc.sessionDir('busy'), 'session.json'), 'utf8'));
  writeFileSync(join(svc.sessionDir('busy'), 'session.json'), JSON.stringify({ ...rec, state: 'discarding' }));
  const holder = await startHolder('writer', join(svc.sessionDir('busy'), 'lease'));
  assert.is(await holder.go(), 'won');
  const r = await svc.gc();
  assert.match(r.notes.join('\n'), new RegExp(`session busy skipped: process ${holder.pid} holds a writer lease`));
  assert.ok(existsSync(svc.sessionRoot('busy')));
  await holder.finish();
  mkdirSync(svc.sessionDir('making'));
  intent(svc, 'c-live', { op: 'create', session: 'making', pid: process.pid, pidStart: processStartTime(process.pid) });
  mkdirSync(join(svc.store.paths.tmp, `base-tree.${process.pid}.${processStartTime(process.pid) ?? 'x'}.live01`));
  await svc.gc();
  assert.ok(existsSync(svc.sessionDir('making')));
  assert.ok(existsSync(join(svc.store.paths.tmp, `base-tree.${process.pid}.${processStartTime(process.pid) ?? 'x'}.live01`)));
  assert.equal(
    (await svc.list()).map((s) => s.name),
    [],
    'busy was finished once free; making is not listed until its record exists',
  );
});

test('an unreadable lease is reported, and broken by gc once older than the grace period', async () => {
  const { src, svc } = await setup();
  await svc.create('l', { from: src });
  const lease = join(svc.sessionDir('l'), 'lease');
  mkdirSync(lease, { recursive: true });
  writeFileSync(join(lease, 'exclusive.json'), '');
  assert.equal(await kinds(svc), ['unreadable-lock sessions/l/lease/exclusive.json']);
  const old = new Date(Date.now() - GARBAGE_GRACE_MS - 1_000);
  utimesSync(join(lease, 'exclusive.json'), old, old);
  assert.equal(await kinds(svc), ['stale-lock sessions/l/lease/exclusive.json']);
  await svc.gc();
  assert.equal(readdirSync(lease), []);
  await svc.checkpoint('l');
});

test('a recovery step that fails is reported with its path and skipped: gc does the rest, sweeps, and fails only at the end', async () => {
  const { src, svc } = await setup();
  // A discard that cannot finish: the record names a backend this pdb-env does not know.
  await svc.create('tampered', { from: src });
  const rec = JSON.parse(readFileSync(join(svc.sessionDir('tampered'), 'session.json'), 'utf8'));
  writeFileSync(
    join(svc.sessionDir('tampered'), 'session.json'),
    JSON.stringify({ ...rec, backend: 'no-such-backend', state: 'discarding' }),
  );
  intent(svc, 'd-stuck', { op: 'discard', session: 'tampered', startedAt: new Date(Date.now() + 60_000).toISOString() });
  // Work gc can do after it: an interrupted create to undo, a dead temp file, an unreachable object.
  await svc.create('undo', { from: src });
  const undo = JSON.parse(readFileSync(join(svc.sessionDir('undo'), 'session.json'), 'utf8'));
  writeFileSync(join(svc.sessionDir('undo'), 'session.json'), JSON.stringify({ ...undo, state: 'creating' }));
  intent(svc, 'z-create', { op: 'create', session: 'undo' });
  writeFileSync(join(svc.store.paths.tmp, `write.${DEAD}.x.dead01`), 'left by a crash');
  const unreachable = await svc.store.putBytes(Buffer.from('nothing reaches this'));
  const r = await svc.gc();
  assert.equal(
    r.failed.map((f) => f.code),
    ['E_BACKEND_UNKNOWN'],
    JSON.stringify(r),
  );
  assert.match(r.failed[0]!.what, /tampered/);
  assert.not.ok(existsSync(svc.sessionDir('undo')), 'the create after it was undone');
  assert.equal(readdirSync(svc.store.paths.tmp), [], 'the temp file after it was removed');
  assert.not.ok(svc.store.has(unreachable), 'the sweep ran');
  assert.ok(existsSync(join(svc.sessionRoot('tampered'), 'a.txt')), 'the stuck session kept its files');
  const stuck = (await svc.doctor()).filter((f) => f.id === 'd-stuck');
  assert.is(stuck.length, 1);
  assert.match(stuck[0]!.detail, /gc could not finish it: E_BACKEND_UNKNOWN/);
  assert.ok(stuck[0]!.repair, 'doctor says what to do');
  const again = await svc.gc();
  assert.is(again.failed.length, 1, 'still stuck, still reported');
});

test.run();
