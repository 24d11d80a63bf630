// The runtime record: concurrent allocations in one store never share a port (they run under the
// store lock); a session keeps its block; runtimeEnv gives what run and enter set.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ObjectStore } from '../../../model/store/object-store.js';
import { ensureRuntime, readRuntime, runtimeEnv } from '../../../sessions/runtime/runtime.js';
import { tempDir } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());

test('parallel allocations get disjoint blocks; a second ensure keeps the block; runtimeEnv names them all', async () => {
  process.env.PDB_ENV_PORT_RANGE = '41000-41059';
  process.env.PDB_ENV_PORT_BLOCK = '10';
  const store = await ObjectStore.init(join(t.dir, 'store'));
  const names = ['a', 'b', 'c', 'd', 'e', 'f'];
  for (const n of names) mkdirSync(join(store.paths.sessions, n));
  const rts = await Promise.all(names.map((n) => ensureRuntime(store, n, async () => true)));
  const all = rts.flatMap((r) => r.ports);
  assert.is(all.length, 60);
  assert.is(new Set(all).size, 60, 'no port in two blocks');
  assert.equal(await ensureRuntime(store, 'a', async () => true), rts[0]);
  assert.equal(await readRuntime(store, 'a'), rts[0]);
  const env = runtimeEnv(store, 'a', rts[0]!, '');
  assert.is(env.PORT, String(rts[0]!.ports[0]));
  assert.is(env.PDB_ENV_PORTS, rts[0]!.ports.join(','));
  assert.is(env.TMPDIR, join(store.paths.sessions, 'a', 'tmp'));
  assert.is(env.PDB_ENV_ROOT, join(store.paths.sessions, 'a', 'root'));
  assert.is(env.GIT_CEILING_DIRECTORIES, join(store.paths.sessions, 'a'), 'git stops below the session directory');
  assert.is(runtimeEnv(store, 'a', rts[0]!, '/x:/y').GIT_CEILING_DIRECTORIES, `/x:/y:${join(store.paths.sessions, 'a')}`);
  mkdirSync(join(store.paths.sessions, 'g'));
  try {
    await ensureRuntime(store, 'g', async () => true);
    assert.unreachable('the range is full');
  } catch (err) {
    assert.is((err as { code?: string }).code, 'E_PORTS_EXHAUSTED');
  }
  delete process.env.PDB_ENV_PORT_RANGE;
  delete process.env.PDB_ENV_PORT_BLOCK;
});

test.run();
