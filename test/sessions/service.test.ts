import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
  chmodSync,
  appendFileSync,
  readlinkSync,
} from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isPdbError } from '../../model/errors.js';
import { scanTree } from '../../model/scan/scan.js';
import { createSnapshot, snapshotDigest, type Changeset } from '../../model/snapshot.js';
import { SessionService } from '../../sessions/service.js';
import { tempDir, writeTree } from '../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());

let n = 0;
async function setup() {
  const dir = join(t.dir, `case${n++}`);
  const src = join(dir, 'src');
  writeTree(src, {
    'shared.txt': 'base\n',
    'remove-me.txt': 'x\n',
    'rename-me.txt': 'r\n',
    'tool.sh': '#!/bin/sh\necho hi\n',
    lib: { 'a.ts': 'export const a = 1;\n' },
    '.env': 'SECRET=1\n',
  });
  const svc = await SessionService.open(join(dir, 'store'), { create: true });
  return { dir, src, svc };
}

async function expectCode(p: Promise<unknown>, code: string) {
  try {
    await p;
  } catch (err) {
    assert.ok(isPdbError(err), `expected PdbError, got ${String(err)}`);
    assert.is((err as { code: string }).code, code);
    return err;
  }
  assert.unreachable(`expected ${code}`);
}

test('two sessions from one base stay private; source and base unchanged; changesets list exactly their own changes', async () => {
  const { src, svc } = await setup();
  const srcBefore = snapshotDigest(createSnapshot((await scanTree(src, { excludes: [] })).entries, []));
  const a = await svc.create('a', { from: src });
  const b = await svc.create('b', { from: src });
  assert.is(a.base, b.base);

  // a: edit, delete, rename, relative symlink, exec bit, nested files
  writeFileSync(join(a.root, 'shared.txt'), 'from a\n');
  unlinkSync(join(a.root, 'remove-me.txt'));
  renameSync(join(a.root, 'rename-me.txt'), join(a.root, 'renamed-by-a.txt'));
  symlinkSync('../shared.txt', join(a.root, 'lib', 'link-a'));
  chmodSync(join(a.root, 'tool.sh'), 0o755);
  mkdirSync(join(a.root, 'out', 'a', 'deep'), { recursive: true });
  writeFileSync(join(a.root, 'out', 'a', 'deep', 'n.txt'), 'a');
  // b: the same paths, differently
  writeFileSync(join(b.root, 'shared.txt'), 'from b\n');
  unlinkSync(join(b.root, 'rename-me.txt'));
  renameSync(join(b.root, 'remove-me.txt'), join(b.root, 'renamed-by-b.txt'));
  symlinkSync('a.ts', join(b.root, 'lib', 'link-b'));
  appendFileSync(join(b.root, 'lib', 'a.ts'), 'export const b = 2;\n');

  assert.is(readFileSync(join(a.root, 'shared.txt'), 'utf8'), 'from a\n');
  assert.is(readFileSync(join(b.root, 'shared.txt'), 'utf8'), 'from b\n');
  assert.not.ok(existsSync(join(b.root, 'out')));
  assert.not.ok(existsSync(join(a.root, 'lib', 'link-b')));
  assert.is(statSync(join(b.root, 'tool.sh')).mode & 0o111, 0);

  const ca = await svc.checkpoint('a');
  const cb = await svc.checkpoint('b');
  const changesA = svc.store.getDocument<Changeset>(ca.changeset).changes.map((c) => `${c.kind} ${c.path}`);
  const changesB = svc.store.getDocument<Changeset>(cb.changeset).changes.map((c) => `${c.kind} ${c.path}`);
  assert.equal(changesA, [
    'add lib/link-a',
    'add out',
    'add out/a',
    'add out/a/deep',
    'add out/a/deep/n.txt',
    'delete remove-me.txt',
    'delete rename-me.txt',
    'add renamed-by-a.txt',
    'modify shared.txt',
    'mode tool.sh',
  ]);
  assert.equal(changesB, [
    'modify lib/a.ts',
    'add lib/link-b',
    'delete remove-me.txt',
    'delete rename-me.txt',
    'add renamed-by-b.txt',
    'modify shared.txt',
  ]);
  assert.is(readlinkSync(join(a.root, 'lib', 'link-a')), '../shared.txt');

  // The source did not change, and the base Snapshot in the store is what was imported.
  const srcAfter = snapshotDigest(createSnapshot((await scanTree(src, { excludes: [] })).entries, []));
  assert.is(srcAfter, srcBefore);
  const base = svc.readSnapshot(a.base);
  assert.is(snapshotDigest(base), a.base);
  assert.is(snapshotDigest(createSnapshot((await scanTree(src, { excludes: [] })).entries, [], null)), a.base);
});

test('checkpointing an unchanged session twice gives the same snapshot; diff agrees with the changeset', async () => {
  const { src, svc } = await setup();
  const s = await svc.create('s', { from: src });
  const one = await svc.checkpoint('s');
  const two = await svc.checkpoint('s');
  assert.is(one.snapshot, two.snapshot);
  assert.is(one.changes, 0);
  writeFileSync(join(s.root, 'new.txt'), 'n');
  const d = await svc.diff('s');
  assert.equal(
    d.changes.map((c) => `${c.kind} ${c.path}`),
    ['add new.txt'],
  );
});

test('names: duplicates and unsafe names are refused; discard is idempotent', async () => {
  const { src, svc } = await setup();
  await svc.create('dup', { from: src });
  await expectCode(svc.create('dup', { from: src }), 'E_SESSION_EXISTS');
  for (const bad of ['..', '.', '', 'a/b', '/abs', '-x', 'x'.repeat(65)]) await expectCode(svc.create(bad, { from: src }), 'E_BAD_NAME');
  assert.equal(await svc.discard('dup'), { session: 'dup', discarded: true });
  assert.equal(await svc.discard('dup'), { session: 'dup', discarded: false });
  await expectCode(svc.checkpoint('dup'), 'E_SESSION_NOT_FOUND');
});

test('a source changed during prepare fails with E_SOURCE_CHANGED and leaves nothing half-made', async () => {
  const { src, svc } = await setup();
  await expectCode(
    svc.create('racy', { from: src, afterMaterialize: async () => writeFileSync(join(src, 'shared.txt'), 'changed underneath\n') }),
    'E_SOURCE_CHANGED',
  );
  assert.not.ok(existsSync(svc.sessionDir('racy')));
  assert.equal(readdirSync(svc.store.paths.journal), []);
  assert.equal(await svc.doctor(), []);
});

test('the race check also sees a file added, a file removed and an exclude changed during prepare', async () => {
  const { src, svc } = await setup();
  for (const [name, change] of [
    ['added', () => writeFileSync(join(src, 'late.txt'), 'late')],
    ['removed', () => unlinkSync(join(src, 'late.txt'))],
    ['config', () => writeFileSync(join(src, 'pdb-env.json'), '{"excludes":["lib"]}')],
  ] as const) {
    const err = await expectCode(svc.create(`race-${name}`, { from: src, afterMaterialize: async () => change() }), 'E_SOURCE_CHANGED');
    assert.match(String((err as Error).message), name === 'config' ? /pdb-env\.json/ : /late\.txt/);
    assert.not.ok(existsSync(svc.sessionDir(`race-${name}`)));
  }
});

test('discard never follows a symlink out of the store', async () => {
  const { dir, src, svc } = await setup();
  const outside = join(dir, 'outside');
  writeTree(outside, { 'precious.txt': 'keep' });
  const s = await svc.create('linky', { from: src });
  symlinkSync(outside, join(s.root, 'escape'));
  await svc.discard('linky');
  assert.is(readFileSync(join(outside, 'precious.txt'), 'utf8'), 'keep');
  // A symlink planted in place of a session directory is removed, its target kept.
  symlinkSync(outside, svc.sessionDir('planted'));
  await svc.discard('planted');
  assert.not.ok(existsSync(svc.sessionDir('planted')));
  assert.ok(lstatSync(outside).isDirectory());
  assert.is(readFileSync(join(outside, 'precious.txt'), 'utf8'), 'keep');
});

test('publish is an expected-head compare-and-set', async () => {
  const { src, svc } = await setup();
  const s = await svc.create('p', { from: src });
  const head = await svc.envHead('main');
  assert.is(head, s.base);
  await expectCode(svc.publish('p', 'main', head), 'E_USAGE'); // no checkpoint yet
  writeFileSync(join(s.root, 'shared.txt'), 'published\n');
  const cp = await svc.checkpoint('p');
  const r = await svc.publish('p', 'main', head);
  assert.equal(r, { env: 'main', previous: head, head: cp.snapshot });
  await expectCode(svc.publish('p', 'main', head), 'E_HEAD_MOVED');
  await expectCode(svc.publish('p', 'main', 'nope'), 'E_USAGE');
  // A session from the published head sees the published change.
  const next = await svc.create('from-env', { env: 'main' });
  assert.is(readFileSync(join(next.root, 'shared.txt'), 'utf8'), 'published\n');
});

test('create --base starts from a Snapshot already in the store, without importing the source', async () => {
  const { src, svc } = await setup();
  const s = await svc.create('orig', { from: src });
  writeFileSync(join(s.root, 'shared.txt'), 'checkpointed\n');
  const cp = await svc.checkpoint('orig');
  writeFileSync(join(src, 'shared.txt'), 'source moved on\n'); // not imported: --base ignores the source
  const next = await svc.create('from-base', { from: src, base: cp.snapshot });
  assert.is(next.base, cp.snapshot);
  assert.is(next.import, null);
  assert.is(readFileSync(join(next.root, 'shared.txt'), 'utf8'), 'checkpointed\n');
  await expectCode(svc.create('bad-base', { from: src, base: 'sha256:nope' as never }), 'E_USAGE');
  await expectCode(svc.create('gone-base', { from: src, base: `sha256:${'0'.repeat(64)}` }), 'E_OBJECT_MISSING');
  assert.not.ok(existsSync(svc.sessionDir('gone-base')));
});

test('an abandoned create is listed by doctor and removed by gc', async () => {
  const { src, svc } = await setup();
  await svc.create('crashed', { from: src });
  // Simulate a crash mid-create: state "creating" and an intent from a process that is gone.
  const file = join(svc.sessionDir('crashed'), 'session.json');
  const rec = JSON.parse(readFileSync(file, 'utf8'));
  writeFileSync(file, JSON.stringify({ ...rec, state: 'creating' }));
  writeFileSync(
    join(svc.store.paths.journal, 'x-dead.json'),
    JSON.stringify({
      id: 'x-dead',
      op: 'create',
      session: 'crashed',
      pid: 2 ** 22 + 1,
      pidStart: null,
      startedAt: new Date().toISOString(),
      detail: {},
    }),
  );
  writeFileSync(join(svc.store.paths.tmp, `obj.${2 ** 22 + 1}.x.abc`), 'partial');
  const findings = await svc.doctor();
  assert.equal(findings.map((f) => f.kind).sort(), ['abandoned-intent', 'temp-file', 'unfinished-session']);
  const dry = await svc.gc({ dryRun: true });
  assert.ok(dry.actions.length >= 3);
  assert.ok(existsSync(svc.sessionDir('crashed')), 'dry run changes nothing');
  await svc.gc();
  assert.not.ok(existsSync(svc.sessionDir('crashed')));
  assert.equal(await svc.doctor(), []);
});

test('an unavailable or unknown backend fails closed before anything is made', async () => {
  const { src, svc } = await setup();
  await expectCode(svc.create('nb', { from: src, backend: 'no-such' }), 'E_BACKEND_UNKNOWN');
  await expectCode(svc.create('nb', { from: src, backend: 'apfs-clone' }), 'E_BACKEND_UNAVAILABLE');
  assert.not.ok(existsSync(svc.sessionDir('nb')));
});

test.run();
