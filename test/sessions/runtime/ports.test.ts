// Port blocks: a block skips ports other sessions hold and ports busy on the host; the range and
// block size come from the environment; a full range is a typed error.
import { createServer, type Server } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { nativeOs } from '../../../model/os/native.js';
import { allocatePortBlock, portConfig, portIsFree } from '../../../sessions/runtime/ports.js';
import { skipPart } from '../../helpers/index.js';

/** portIsFree by each way this host has: bind(2) through the native addon, and net.Server (PDB_ENV_NATIVE_OS=off). */
async function bothWays(port: number): Promise<boolean[]> {
  const before = process.env.PDB_ENV_NATIVE_OS;
  const out: boolean[] = [];
  try {
    process.env.PDB_ENV_NATIVE_OS = 'off';
    out.push(await portIsFree(port));
    delete process.env.PDB_ENV_NATIVE_OS;
    if (nativeOs()) out.push(await portIsFree(port));
    else skipPart('the port probe through the addon', 'native-scan', 'the native addon is not built');
  } finally {
    if (before === undefined) delete process.env.PDB_ENV_NATIVE_OS;
    else process.env.PDB_ENV_NATIVE_OS = before;
  }
  return out;
}

test('portConfig reads PDB_ENV_PORT_RANGE and PDB_ENV_PORT_BLOCK and refuses nonsense', () => {
  assert.equal(portConfig({}), { first: 20000, last: 29999, block: 10 });
  assert.equal(portConfig({ PDB_ENV_PORT_RANGE: '31000-31099', PDB_ENV_PORT_BLOCK: '5' }), { first: 31000, last: 31099, block: 5 });
  assert.throws(() => portConfig({ PDB_ENV_PORT_RANGE: 'lots' }), /PDB_ENV_PORT_RANGE/);
  assert.throws(() => portConfig({ PDB_ENV_PORT_RANGE: '31000-31003', PDB_ENV_PORT_BLOCK: '10' }), /smaller than one block/);
  assert.throws(() => portConfig({ PDB_ENV_PORT_BLOCK: '70000' }), /port number/);
});

test('a block never overlaps ports other sessions hold, and is consecutive', async () => {
  const cfg = { first: 40000, last: 40029, block: 10 };
  const all = async () => true;
  const a = await allocatePortBlock(new Set(), 'seed', cfg, all);
  assert.is(a.length, 10);
  assert.equal(
    a,
    Array.from({ length: 10 }, (_, i) => a[0]! + i),
  );
  const b = await allocatePortBlock(new Set(a), 'seed', cfg, all);
  const c = await allocatePortBlock(new Set([...a, ...b]), 'seed', cfg, all);
  assert.is(new Set([...a, ...b, ...c]).size, 30, 'three disjoint blocks');
  try {
    await allocatePortBlock(new Set([...a, ...b, ...c]), 'seed', cfg, all);
    assert.unreachable('the range is full');
  } catch (err) {
    assert.is((err as { code?: string }).code, 'E_PORTS_EXHAUSTED');
  }
});

test('a block with a port busy on the host is skipped (real listener on 127.0.0.1)', async () => {
  const server: Server = createServer();
  await new Promise<void>((r) => server.listen({ port: 0, host: '127.0.0.1' }, r));
  const busy = (server.address() as { port: number }).port;
  try {
    assert.ok(
      (await bothWays(busy)).every((free) => free === false),
      'a port listened on is busy, by every probe',
    );
    // A range of exactly two blocks, the busy port in the first: the second is chosen whatever the seed.
    const first = busy - (busy % 2);
    const cfg = { first, last: first + 3, block: 2 };
    for (const seed of ['a', 'b', 'c', 'd']) {
      const ports = await allocatePortBlock(new Set(), seed, cfg);
      assert.not.ok(ports.includes(busy), `seed ${seed}: ${ports}`);
    }
  } finally {
    await new Promise((r) => server.close(r));
  }
});

test('each probe finds a port busy on ::1 only busy, and a closed port free', async () => {
  const v6: Server = createServer();
  const listening = await new Promise<boolean>((r) => {
    v6.once('error', () => r(false));
    v6.listen({ port: 0, host: '::1' }, () => r(true));
  });
  if (!listening) return skipPart('a listener on ::1', 'root', 'this host has no ::1');
  const busy = (v6.address() as { port: number }).port;
  try {
    assert.ok(
      (await bothWays(busy)).every((free) => free === false),
      'busy on ::1',
    );
  } finally {
    await new Promise((r) => v6.close(r));
  }
  assert.ok(
    (await bothWays(busy)).every((free) => free === true),
    'free once closed',
  );
});

test.run();
