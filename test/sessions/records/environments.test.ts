import { readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isPdbError } from '../../../model/errors.js';
import { GARBAGE_GRACE_MS, SHORT_LOCK_WAIT_MS } from '../../../sessions/locks/lock.js';
import { SessionService } from '../../../sessions/service.js';
import { tempDir, writeTree } from '../../helpers/index.js';
import { crash, killHolders, startHolder } from '../../helpers/locks/lock-helpers.js';

const t = tempDir();
test.after(() => {
  killHolders();
  t.cleanup();
});

const DEAD_PID = 2 ** 22 + 1;

let n = 0;
async function setup() {
  const dir = join(t.dir, `case${n++}`);
  const src = join(dir, 'src');
  writeTree(src, { 'a.txt': 'a\n' });
  const svc = await SessionService.open(join(dir, 'store'), { create: true });
  return { src, svc, lock: join(svc.store.paths.environments, 'main.json.lock') };
}

async function expectCode(p: Promise<unknown>, code: string, pattern?: RegExp) {
  try {
    await p;
  } catch (err) {
    assert.ok(isPdbError(err), `expected PdbError, got ${String(err)}`);
    assert.is((err as { code: string }).code, code);
    if (pattern) assert.match((err as Error).message, pattern);
    return;
  }
  assert.unreachable(`expected ${code}`);
}

function age(path: string) {
  const then = new Date(Date.now() - GARBAGE_GRACE_MS - 1_000);
  utimesSync(path, then, then);
}

/** A session with a checkpoint that changed a.txt, ready to publish onto main. */
async function checkpointed(svc: SessionService, src: string, name: string) {
  const s = await svc.create(name, { from: src });
  writeFileSync(join(s.root, 'a.txt'), `${name}\n`);
  return { head: await svc.envHead('main'), cp: await svc.checkpoint(name) };
}

test('the empty lock a crash of older versions left does not wedge publish once it is older than the grace period', async () => {
  const { src, svc, lock } = await setup();
  const { head, cp } = await checkpointed(svc, src, 'p');
  writeFileSync(lock, '');
  await expectCode(svc.publish('p', 'main', head), 'E_LEASE_BUSY', /being updated by process \?/);
  age(lock);
  assert.equal(await svc.publish('p', 'main', head), { env: 'main', previous: head, head: cp.snapshot });
  assert.equal(readdirSync(svc.store.paths.environments).sort(), ['main.history.jsonl', 'main.json'], 'the head, its history, and no lock');
});

test('a first import makes main past a stale lock of a dead process', async () => {
  const { src, svc, lock } = await setup();
  writeFileSync(lock, JSON.stringify({ pid: DEAD_PID, pidStart: null }));
  const s = await svc.create('first', { from: src });
  assert.is(await svc.envHead('main'), s.base);
  assert.equal(readdirSync(svc.store.paths.environments).sort(), ['main.history.jsonl', 'main.json'], 'the head, its history, and no lock');
});

test('publish while a live process keeps the environment lock waits a bounded time, then E_LEASE_BUSY naming it; after it crashes, publish works', async () => {
  const { src, svc, lock } = await setup();
  const { head, cp } = await checkpointed(svc, src, 'q');
  const holder = await startHolder('lock', lock);
  assert.is(await holder.go(), 'won');
  const t0 = Date.now();
  await expectCode(svc.publish('q', 'main', head), 'E_LEASE_BUSY', new RegExp(`being updated by process ${holder.pid}\\b`));
  const waited = Date.now() - t0;
  assert.ok(waited >= SHORT_LOCK_WAIT_MS - 100 && waited < SHORT_LOCK_WAIT_MS + 2_000, `waited ${waited} ms`);
  assert.is(await svc.envHead('main'), head, 'nothing published');
  await crash(holder);
  assert.is((await svc.publish('q', 'main', head)).head, cp.snapshot);
});

test('a failed publish releases the lock: E_ENV_NOT_FOUND and E_HEAD_MOVED leave no lock behind', async () => {
  const { src, svc } = await setup();
  const { head } = await checkpointed(svc, src, 'r');
  await expectCode(svc.publish('r', 'other', head), 'E_ENV_NOT_FOUND');
  await expectCode(svc.publish('r', 'main', `sha256:${'0'.repeat(64)}`), 'E_HEAD_MOVED');
  assert.equal(readdirSync(svc.store.paths.environments).sort(), ['main.history.jsonl', 'main.json'], 'the head, its history, and no lock');
});

test.run();
