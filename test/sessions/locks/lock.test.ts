import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GARBAGE_GRACE_MS, breakStale, inspectLock, parseLockOwner, tryLock, type HeldLock } from '../../../sessions/locks/lock.js';
import { processStartTime } from '../../../model/os/proc.js';
import { tempDir } from '../../helpers/index.js';
import { crash, killHolders, startHolder } from '../../helpers/locks/lock-helpers.js';

const t = tempDir();
test.after(() => {
  killHolders();
  t.cleanup();
});

/** A pid above the kernel's pid_max limit (2^22): never a live process. */
const DEAD_PID = 2 ** 22 + 1;
const OPTS = { kind: 'update', purpose: 'test' } as const;

let n = 0;
function lockPath(): string {
  const dir = join(t.dir, `case${n++}`);
  mkdirSync(dir);
  return join(dir, 'x.lock');
}

async function take(path: string, options: Parameters<typeof tryLock>[1] = OPTS): Promise<HeldLock> {
  const r = await tryLock(path, options);
  assert.ok(r.lock, `expected to take ${path}, held by ${JSON.stringify(r.lock ? null : r.holder)}`);
  return r.lock!;
}

function ageFile(path: string, ms: number): void {
  const then = new Date(Date.now() - ms);
  utimesSync(path, then, then);
}

test('a lock is created with its owner in one step; a second taker is told who holds it; release frees it', async () => {
  const path = lockPath();
  const lock = await take(path);
  const owner = parseLockOwner(readFileSync(path, 'utf8'))!;
  assert.equal(owner, lock.owner);
  assert.is(owner.pid, process.pid);
  assert.is(owner.pidStart, processStartTime(process.pid));
  assert.equal([owner.kind, owner.purpose], ['update', 'test']);
  assert.match(owner.token, /^[0-9a-f]{16}$/);
  const again = await tryLock(path, OPTS);
  assert.is(again.lock, null);
  assert.is(again.lock ? null : again.holder?.token, owner.token);
  assert.equal(readdirSync(join(path, '..')), ['x.lock'], 'no temp or guard file is left beside the lock');
  await lock.release();
  assert.equal(readdirSync(join(path, '..')), []);
  await lock.release(); // idempotent
  await (await take(path)).release();
});

test("release never removes a lock that is no longer this holder's", async () => {
  const path = lockPath();
  const lock = await take(path);
  const other = { ...lock.owner, token: 'someone-else' };
  writeFileSync(path, JSON.stringify(other));
  await lock.release();
  assert.equal(parseLockOwner(readFileSync(path, 'utf8')), other);
});

test('a stale lock of a dead pid is broken and taken; so is one of a reused pid (another start time)', async () => {
  for (const stale of [
    { pid: DEAD_PID, pidStart: null },
    { pid: process.pid, pidStart: 'not-this-process' },
    { kind: 'update', pid: DEAD_PID, pidStart: '1', purpose: 'crashed', acquiredAt: '2020-01-01T00:00:00Z', token: 'ab' },
  ]) {
    const path = lockPath();
    writeFileSync(path, JSON.stringify(stale));
    assert.is((await inspectLock(path)).state, 'stale');
    const lock = await take(path);
    assert.is(parseLockOwner(readFileSync(path, 'utf8'))!.token, lock.owner.token);
    await lock.release();
    assert.equal(readdirSync(join(path, '..')), [], 'the broken lock is gone, nothing set aside is left');
  }
});

test('the lock of a live process is not broken: a sleeping child named by pid, then a real holder', async () => {
  const path = lockPath();
  const sleeper = spawn('sleep', ['30']);
  try {
    const record = JSON.stringify({ kind: 'update', pid: sleeper.pid, pidStart: processStartTime(sleeper.pid!), purpose: 'sleep' });
    writeFileSync(path, record);
    const r = await tryLock(path, OPTS);
    assert.is(r.lock, null);
    assert.is(r.lock ? 0 : r.holder?.pid, sleeper.pid);
    assert.is(readFileSync(path, 'utf8'), record);
  } finally {
    const exited = once(sleeper, 'exit');
    sleeper.kill('SIGKILL');
    await exited;
  }
  await (await take(path)).release(); // its process is gone now: stale

  const holder = await startHolder('lock', path);
  assert.is(await holder.go(), 'won');
  const r = await tryLock(path, OPTS);
  assert.is(r.lock ? 0 : r.holder?.pid, holder.pid);
  await crash(holder); // killed while holding: the lock stays, its owner is gone
  assert.is(parseLockOwner(readFileSync(path, 'utf8'))!.pid, holder.pid);
  await (await take(path)).release();
});

test('an unreadable lock (the empty lock old versions left on a crash) is broken only after the grace period', async () => {
  for (const garbage of ['', '{"pid":', 'not json', '{"pid":"12"}']) {
    const path = lockPath();
    writeFileSync(path, garbage);
    const young = await tryLock(path, OPTS);
    assert.is(young.lock, null, 'a young unreadable lock may be an old writer mid-write');
    assert.is(young.lock ? 'x' : young.holder, null);
    assert.is(readFileSync(path, 'utf8'), garbage);
    ageFile(path, GARBAGE_GRACE_MS + 1_000);
    await (await take(path)).release();
  }
  // With no grace, an unreadable lock a moment old is stale (a moment: written within the same
  // millisecond, its mtime can be past Date.now(), which counts whole milliseconds).
  const path = lockPath();
  writeFileSync(path, '');
  ageFile(path, 50);
  await (await take(path, { ...OPTS, garbageGraceMs: 0 })).release();
});

test('breaking never removes a lock other than the one judged stale', async () => {
  const path = lockPath();
  writeFileSync(path, JSON.stringify({ pid: DEAD_PID, pidStart: null }));
  const judged = await inspectLock(path);
  assert.is(judged.state, 'stale');
  // Before this breaker acts, someone else breaks the stale lock and a live owner takes it.
  writeFileSync(
    `${path}.new`,
    JSON.stringify({ kind: 'update', pid: process.pid, pidStart: processStartTime(process.pid), token: 'live' }),
  );
  const { renameSync } = await import('node:fs');
  renameSync(`${path}.new`, path);
  await breakStale(path, judged.state === 'free' ? '' : judged.fingerprint);
  assert.is(parseLockOwner(readFileSync(path, 'utf8'))!.token, 'live');
  assert.equal(readdirSync(join(path, '..')), ['x.lock']);
  // A guard left by a breaker that died is cleared, and the stale lock is broken after it.
  writeFileSync(path, JSON.stringify({ pid: DEAD_PID, pidStart: null }));
  writeFileSync(join(path, '..', '.x.lock.break'), JSON.stringify({ pid: DEAD_PID, pidStart: null }));
  await (await take(path)).release();
  assert.equal(readdirSync(join(path, '..')), []);
});

test('wait: a bounded, silent poll for a short-held lock', async () => {
  const path = lockPath();
  const first = await take(path);
  setTimeout(() => void first.release(), 150);
  const t0 = Date.now();
  const second = await take(path, { ...OPTS, wait: { timeoutMs: 5_000 } });
  assert.ok(Date.now() - t0 >= 100, 'it waited for the release');
  const t1 = Date.now();
  const third = await tryLock(path, { ...OPTS, wait: { timeoutMs: 200 } });
  const waited = Date.now() - t1;
  assert.is(third.lock, null);
  assert.ok(waited >= 200 && waited < 3_000, `waited ${waited} ms`);
  const t2 = Date.now();
  assert.is((await tryLock(path, OPTS)).lock, null);
  assert.ok(Date.now() - t2 < 1_000, 'without wait, a held lock is refused at once');
  await second.release();
});

test('processes racing for one lock never both win (free, stale, unreadable and stale-guard starts)', async () => {
  const starts: Array<[string, (path: string) => void]> = [
    ['free', () => {}],
    ['stale', (p) => writeFileSync(p, JSON.stringify({ pid: DEAD_PID, pidStart: null }))],
    ['unreadable', (p) => (writeFileSync(p, ''), ageFile(p, GARBAGE_GRACE_MS + 1_000))],
    [
      'stale guard',
      (p) => {
        writeFileSync(p, JSON.stringify({ pid: DEAD_PID, pidStart: null }));
        writeFileSync(join(p, '..', '.x.lock.break'), JSON.stringify({ pid: DEAD_PID, pidStart: null }));
      },
    ],
  ];
  for (const [name, prepare] of starts) {
    for (let round = 0; round < 2; round++) {
      const path = lockPath();
      prepare(path);
      const holders = await Promise.all([0, 1, 2, 3].map(() => startHolder('lock', path)));
      const answers = await Promise.all(holders.map((h) => h.go()));
      const winners = holders.filter((_, i) => answers[i] === 'won');
      assert.is(winners.length, 1, `${name} round ${round}: ${answers.join(', ')}`);
      assert.is(parseLockOwner(readFileSync(path, 'utf8'))!.pid, winners[0]!.pid);
      for (const [i, a] of answers.entries()) if (a !== 'won') assert.is(a, `busy ${winners[0]!.pid}`, `loser ${i} names the winner`);
      await Promise.all(holders.map((h) => h.finish()));
      // The winner released. A breakers' guard can be left only in the interleaving lock.ts names
      // (a guard moved aside by a second breaker while its owner released it, then put back): it
      // must then be stale (its owner is gone), which the next breaker clears.
      const left = readdirSync(join(path, '..'));
      assert.ok(!left.includes('x.lock'), `${name} round ${round}: the winner did not release`);
      for (const f of left) {
        assert.is(f, '.x.lock.break', `${name} round ${round}: ${f} left beside the lock`);
        assert.is((await inspectLock(join(path, '..', f))).state, 'stale', `${name} round ${round}: a live guard left`);
      }
    }
  }
});

test.run();
