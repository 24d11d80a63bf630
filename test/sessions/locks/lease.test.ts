import { mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isPdbError } from '../../../model/errors.js';
import { acquireLease, liveLeases, type Lease } from '../../../sessions/locks/lease.js';
import { GARBAGE_GRACE_MS } from '../../../sessions/locks/lock.js';
import { tempDir } from '../../helpers/index.js';
import { crash, killHolders, startHolder } from '../../helpers/locks/lock-helpers.js';

const t = tempDir();
test.after(() => {
  killHolders();
  t.cleanup();
});

const DEAD_PID = 2 ** 22 + 1;

let n = 0;
function leaseDir(): string {
  const dir = join(t.dir, `lease${n++}`);
  mkdirSync(dir);
  return dir;
}

async function busy(p: Promise<Lease>, pattern?: RegExp): Promise<void> {
  const t0 = Date.now();
  try {
    await p;
  } catch (err) {
    assert.ok(isPdbError(err), String(err));
    assert.is((err as { code: string }).code, 'E_LEASE_BUSY');
    if (pattern) assert.match((err as Error).message, pattern);
    assert.ok(Date.now() - t0 < 2_000, 'busy is answered fast, never frozen');
    return;
  }
  assert.unreachable('expected E_LEASE_BUSY');
}

test('exclusive excludes exclusive', async () => {
  const dir = leaseDir();
  const a = await acquireLease(dir, 's', 'exclusive', 'checkpoint');
  await busy(acquireLease(dir, 's', 'exclusive', 'discard'), /process \d+ holds a exclusive lease for checkpoint; discard was refused/);
  await a.release();
  await (await acquireLease(dir, 's', 'exclusive', 'discard')).release();
  assert.equal(readdirSync(dir), []);
});

test('writers share; exclusive waits for no writer and excludes new writers', async () => {
  const dir = leaseDir();
  const w1 = await acquireLease(dir, 's', 'writer', 'run a');
  const w2 = await acquireLease(dir, 's', 'writer', 'run b');
  assert.equal((await liveLeases(dir)).map((l) => [l.kind, l.pid, l.purpose]).sort(), [
    ['writer', process.pid, 'run a'],
    ['writer', process.pid, 'run b'],
  ]);
  await busy(acquireLease(dir, 's', 'exclusive', 'checkpoint'), /holds a writer lease/);
  await w1.release();
  await busy(acquireLease(dir, 's', 'exclusive', 'checkpoint'));
  await w2.release();
  const x = await acquireLease(dir, 's', 'exclusive', 'checkpoint');
  await busy(acquireLease(dir, 's', 'writer', 'run c'), /holds a exclusive lease for checkpoint; run c was refused/);
  await x.release();
  assert.equal(readdirSync(dir), [], 'a refused acquirer removes its own lock');
});

test('leases of dead processes are broken: a stale exclusive lock, an old-format writer record, an old empty lock', async () => {
  const dir = leaseDir();
  writeFileSync(
    join(dir, 'exclusive.json'),
    JSON.stringify({ kind: 'exclusive', pid: DEAD_PID, pidStart: null, purpose: 'x', acquiredAt: '' }),
  );
  writeFileSync(
    join(dir, 'writer-1-ab.json'),
    JSON.stringify({ kind: 'writer', pid: DEAD_PID, pidStart: null, purpose: 'y', acquiredAt: '' }),
  );
  assert.equal(await liveLeases(dir), []);
  assert.equal(readdirSync(dir), [], 'seeing them removed them');
  writeFileSync(join(dir, 'exclusive.json'), '');
  await busy(acquireLease(dir, 's', 'writer', 'run'), /another process is taking a exclusive lease/);
  const then = new Date(Date.now() - GARBAGE_GRACE_MS - 1_000);
  utimesSync(join(dir, 'exclusive.json'), then, then);
  await (await acquireLease(dir, 's', 'exclusive', 'checkpoint')).release();
  assert.equal(readdirSync(dir), []);
});

test('a lease held by a live process is respected; after it crashes, it is broken', async () => {
  const dir = leaseDir();
  const writer = await startHolder('writer', dir);
  assert.is(await writer.go(), 'won');
  await busy(acquireLease(dir, 's', 'exclusive', 'checkpoint'), new RegExp(`process ${writer.pid} holds a writer lease for lock-child`));
  assert.equal(
    (await liveLeases(dir)).map((l) => l.pid),
    [writer.pid],
  );
  await crash(writer);
  await (await acquireLease(dir, 's', 'exclusive', 'checkpoint')).release();
  assert.equal(readdirSync(dir), []);
});

test('processes racing for the exclusive lease never both win; writers racing an exclusive never share with it', async () => {
  for (let round = 0; round < 3; round++) {
    const dir = leaseDir();
    const modes = round === 0 ? (['exclusive', 'exclusive', 'exclusive'] as const) : (['exclusive', 'writer', 'writer'] as const);
    const holders = await Promise.all(modes.map((m) => startHolder(m, dir)));
    const answers = await Promise.all(holders.map((h) => h.go()));
    const won = modes.filter((_, i) => answers[i] === 'won');
    if (won.includes('exclusive')) assert.equal(won, ['exclusive'], `round ${round}: ${answers.join(' | ')}`);
    if (round === 0) assert.is(won.length, 1, 'one of the exclusive takers wins');
    const live = await liveLeases(dir);
    assert.is(live.length, won.length, 'exactly the winners hold leases');
    await Promise.all(holders.map((h) => h.finish()));
    assert.equal(readdirSync(dir), []);
  }
});

test.run();
