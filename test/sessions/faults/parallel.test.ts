// The concurrency contract, through the real CLI with eight commands at once: creates of
// different names all succeed; publishes with one --expect give one winner and E_HEAD_MOVED for
// the rest; discards of one session all exit 0; a gc running during a create never harms it.
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SessionService } from '../../../sessions/service.js';
import { tempDir, writeTree } from '../../helpers/index.js';
import { json, pdb, pdbAsync, writeSource, type Run } from '../../helpers/faults/fault-helpers.js';

const t = tempDir('pdb-parallel-');
test.after(() => t.cleanup());

const PARALLEL = 8;
const ROUNDS = 3;
const code = (r: Run) => (r.code === 0 ? 'ok' : (/E_[A-Z_]+/.exec(r.stdout + r.stderr)?.[0] ?? `exit ${r.code}`));

let n = 0;
function setup() {
  const dir = join(t.dir, `case${n++}`);
  const src = join(dir, 'src');
  writeSource(src);
  return { dir, src, store: join(dir, 'store') };
}

test(`${PARALLEL} parallel creates of different names all succeed (${ROUNDS} rounds, the first on a new store)`, async () => {
  const { src, store } = setup();
  for (let round = 0; round < ROUNDS; round++) {
    const runs = await Promise.all(
      Array.from({ length: PARALLEL }, (_, i) => pdbAsync(store, ['create', `r${round}-${i}`, '--from', src, '--json'])),
    );
    assert.equal(runs.map(code), Array(PARALLEL).fill('ok'), runs.map((r) => r.stderr).join(''));
  }
  const sessions = json(pdb(store, ['list', '--json'])).sessions as Array<{ state: string }>;
  assert.is(sessions.length, PARALLEL * ROUNDS);
  assert.ok(sessions.every((s) => s.state === 'ready'));
  assert.is(json(pdb(store, ['envs', '--json'])).envs.length, 1);
  assert.equal(json(pdb(store, ['doctor', '--json'])).findings, []);
});

test(`${PARALLEL} parallel publishes with one --expect: exactly one winner, E_HEAD_MOVED for the rest (${ROUNDS} rounds)`, async () => {
  const { src, store } = setup();
  const svc = await SessionService.open(store, { create: true });
  await svc.create('seed', { from: src }); // makes main
  for (let round = 0; round < ROUNDS; round++) {
    const names = Array.from({ length: PARALLEL }, (_, i) => `p${round}-${i}`);
    for (const name of names) {
      // Built on the current head: a checkpoint built on an older one is E_STALE_BASE (issue 11).
      const s = await svc.create(name, { env: 'main' });
      writeFileSync(join(s.root, 'a.txt'), `${name}\n`);
      await svc.checkpoint(name);
    }
    const head = await svc.envHead('main');
    const runs = await Promise.all(names.map((name) => pdbAsync(store, ['publish', name, '--expect', head, '--json'])));
    const outcomes = runs.map(code);
    assert.is(outcomes.filter((c) => c === 'ok').length, 1, outcomes.join(' '));
    assert.is(outcomes.filter((c) => c === 'E_HEAD_MOVED').length, PARALLEL - 1, outcomes.join(' '));
    const winner = names[outcomes.indexOf('ok')]!;
    assert.is(await svc.envHead('main'), (await svc.readSession(winner)).lastCheckpoint!.snapshot);
  }
  assert.equal(await svc.doctor(), []);
});

test(`${PARALLEL} parallel discards of one session all exit 0 (${ROUNDS} rounds)`, async () => {
  const { src, store } = setup();
  for (let round = 0; round < ROUNDS; round++) {
    json(pdb(store, ['create', 'gone', '--from', src, '--json']));
    const runs = await Promise.all(Array.from({ length: PARALLEL }, () => pdbAsync(store, ['discard', 'gone', '--json'])));
    assert.equal(runs.map(code), Array(PARALLEL).fill('ok'), runs.map((r) => r.stdout + r.stderr).join(''));
    assert.is(runs.filter((r) => JSON.parse(r.stdout).discarded === true).length >= 1, true);
    assert.not.ok(existsSync(join(store, 'sessions', 'gone')));
  }
  assert.equal(readdirSync(join(store, 'tmp')), []);
  assert.equal(json(pdb(store, ['doctor', '--json'])).findings, []);
});

test('gc, doctor and verify running again and again during creates never harm them', async () => {
  const { src, store } = setup();
  const files: Record<string, string> = {};
  for (let i = 0; i < 3000; i++) files[`f${i}.txt`] = `file ${i}\n`;
  writeTree(join(src, 'many'), files);
  json(pdb(store, ['create', 'first', '--from', src, '--json']));
  let done = false;
  const creates = Promise.all(
    ['g1', 'g2', 'g3'].map((name, i) =>
      pdbAsync(store, i === 2 ? ['create', name, '--env', 'main', '--json'] : ['create', name, '--from', src, '--json']),
    ),
  ).finally(() => (done = true));
  let gcs = 0;
  while (!done) {
    const [gc, doctor] = await Promise.all([pdbAsync(store, ['gc', '--json']), pdbAsync(store, ['doctor', '--json'])]);
    assert.is(gc.code, 0, gc.stderr);
    assert.is(doctor.code, 0, doctor.stderr);
    assert.equal(JSON.parse(gc.stdout).actions, [], `gc acted on live work: ${gc.stdout}`);
    gcs++;
  }
  const runs = await creates;
  assert.equal(runs.map(code), ['ok', 'ok', 'ok'], runs.map((r) => r.stderr).join(''));
  assert.ok(gcs >= 1);
  const svc = await SessionService.open(store);
  for (const name of ['g1', 'g2', 'g3']) assert.is((await svc.scanEntries(name)).length, 3000 + 5, name);
  assert.equal(await svc.doctor(), []);
});

test.run();
