import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cassetteDigest, loadCassette, parseCassette, type Cassette } from '../../../agents/cassette/cassette.js';
import { replayCassette } from '../../../agents/cassette/replay.js';
import { isPdbError } from '../../../model/errors.js';
import { REPO_ROOT, cli, tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());

const cassette = (steps: unknown[]): unknown => ({ kind: 'pdb-env-cassette', version: 1, steps, final: 'done' });

test('a cassette with every action validates, and its digest is of its canonical JSON', () => {
  const doc = cassette([
    { action: 'write', path: 'dé/ü.txt', content: 'x\n' },
    { action: 'edit', path: 'a.txt', old: 'a', new: 'b' },
    { action: 'delete', path: 'b.txt' },
    { action: 'rename', from: 'c.txt', to: 'd/c.txt' },
    { action: 'symlink', path: 'l', target: '../x' },
    { action: 'chmod', path: 'run.sh', mode: '+x' },
    { action: 'mkdir', path: 'e/f' },
    { action: 'shell', command: 'true' },
    { action: 'write', path: '../out.txt', content: 'x', expect: 'denied' },
  ]);
  const c = parseCassette(doc);
  assert.is(c.cassette.steps.length, 9);
  assert.match(c.digest, /^sha256:[0-9a-f]{64}$/);
  // Key order does not change the digest; content does.
  const reordered = Object.fromEntries(Object.entries(doc as object).reverse()) as Cassette;
  assert.is(cassetteDigest(reordered), c.digest);
  assert.is.not(cassetteDigest({ ...(doc as Cassette), final: 'other' }), c.digest);
});

test('bad cassettes are E_CASSETTE_INVALID, naming what is wrong', () => {
  const bad: [unknown, RegExp][] = [
    [cassette([{ action: 'write', path: 'a' }]), /content/],
    [cassette([{ action: 'chmod', path: 'a', mode: '755' }]), /\/steps\/0\/mode must be one of/],
    [cassette([{ action: 'teleport', path: 'a' }]), /\/steps\/0\/action must be one of/],
    [{ kind: 'pdb-env-cassette', version: 2, steps: [], final: 'x' }, /version/],
    [cassette([{ action: 'write', path: '../a', content: 'x' }]), /step 1 .*"\.\.\/a" has an empty, "\." or "\.\." component/],
    [cassette([{ action: 'delete', path: '/etc/passwd' }]), /is absolute/],
    [cassette([{ action: 'rename', from: 'a', to: 'b//c' }]), /empty/],
  ];
  for (const [doc, re] of bad) {
    try {
      parseCassette(doc);
      assert.unreachable(`accepted ${JSON.stringify(doc)}`);
    } catch (err) {
      assert.ok(isPdbError(err, 'E_CASSETTE_INVALID'), String(err));
      assert.match((err as Error).message, re);
    }
  }
});

test('the shipped cassettes validate', async () => {
  const dir = join(REPO_ROOT, 'workloads', 'real-agents', 'cassettes');
  const names = (await readdir(dir)).filter((n) => n.endsWith('.json'));
  assert.ok(names.length >= 4);
  for (const n of names) assert.ok((await loadCassette(join(dir, n))).cassette.steps.length > 5, n);
});

test('replay gives every action its meaning on a real tree', async () => {
  const root = join(t.dir, 'replay');
  writeTree(root, {
    'multi.txt': 'one\ntwo\nthree\n',
    'exec.sh': { content: '#!/bin/sh\n', exec: true },
    'gone.txt': 'x',
    'old.txt': 'rename me',
    docs: { 'g.md': 'guide' },
  });
  const c = parseCassette(
    cassette([
      { action: 'write', path: 'n/ü/数据.txt', content: 'ünï\n' },
      { action: 'write', path: 'exec.sh', content: '#!/bin/sh\necho new\n' },
      { action: 'edit', path: 'multi.txt', old: 'two\n', new: '2a\n2b\n' },
      { action: 'delete', path: 'gone.txt' },
      { action: 'rename', from: 'old.txt', to: 'moved/new.txt' },
      { action: 'symlink', path: 'links/g.md', target: '../docs/g.md' },
      { action: 'chmod', path: 'multi.txt', mode: '+x' },
      { action: 'mkdir', path: 'empty/dir' },
      { action: 'shell', command: 'printf "%s" "$(cat moved/new.txt)" > shell.txt' },
      { action: 'write', path: '.env', content: 'S=1\n', expect: 'denied' },
    ]),
  );
  const r = await replayCassette(root, c.cassette);
  assert.equal(r, { applied: 9, failure: null });
  assert.is(readFileSync(join(root, 'n/ü/数据.txt'), 'utf8'), 'ünï\n');
  assert.ok(statSync(join(root, 'exec.sh')).mode & 0o100, 'a write keeps the exec bit of an existing file');
  assert.is(readFileSync(join(root, 'multi.txt'), 'utf8'), 'one\n2a\n2b\nthree\n');
  assert.ok(statSync(join(root, 'multi.txt')).mode & 0o111);
  assert.not.ok(existsSync(join(root, 'gone.txt')));
  assert.is(readFileSync(join(root, 'moved/new.txt'), 'utf8'), 'rename me');
  assert.is(readlinkSync(join(root, 'links/g.md')), '../docs/g.md');
  assert.ok(lstatSync(join(root, 'empty/dir')).isDirectory());
  assert.is(readFileSync(join(root, 'shell.txt'), 'utf8'), 'rename me');
  assert.not.ok(existsSync(join(root, '.env')), 'a step expected to be denied changes nothing');
});

test('replay stops at the first step that cannot be done, and says which', async () => {
  const root = join(t.dir, 'fails');
  writeTree(root, { 'a.txt': 'aaa', 'b.txt': 'b' });
  const cases: [unknown, RegExp][] = [
    [{ action: 'edit', path: 'a.txt', old: 'a', new: 'x' }, /occurs 3 times/],
    [{ action: 'edit', path: 'a.txt', old: 'zzz', new: 'x' }, /occurs 0 times/],
    [{ action: 'delete', path: 'nope.txt' }, /does not exist/],
    [{ action: 'rename', from: 'a.txt', to: 'b.txt' }, /exists already/],
    [{ action: 'symlink', path: 'b.txt', target: 'a.txt' }, /exists already/],
    [{ action: 'shell', command: 'echo bad >&2; exit 3' }, /exited 3: bad/],
  ];
  for (const [step, re] of cases) {
    const r = await replayCassette(
      root,
      parseCassette(cassette([{ action: 'mkdir', path: 'ok' }, step, { action: 'mkdir', path: 'after' }])).cassette,
    );
    assert.is(r.applied, 1, JSON.stringify(step));
    assert.is(r.failure?.index, 1);
    assert.match(r.failure!.message, re);
    assert.not.ok(existsSync(join(root, 'after')), 'nothing after the failed step');
  }
});

test("steps never pass through a link: the cassette's own link is refused by parse and validate, a link in the tree by replay, before anything is written", async () => {
  const outside = join(t.dir, 'outside-link');
  writeTree(outside, { victim: 'keep\n' });
  const escape = [
    { action: 'symlink', path: 'esc', target: outside },
    { action: 'write', path: 'esc/pwned', content: 'x\n' },
    { action: 'delete', path: 'esc/victim' },
  ];
  for (const steps of [
    escape,
    [escape[0], { action: 'chmod', path: 'esc/victim', mode: '+x' }],
    [escape[0], { action: 'mkdir', path: 'esc/made' }],
    [escape[0], { action: 'rename', from: 'esc', to: 'd/esc' }, { action: 'write', path: 'd/esc/pwned', content: 'x' }],
  ]) {
    try {
      parseCassette(cassette(steps));
      assert.unreachable(`a step through the cassette's own link must be refused: ${JSON.stringify(steps)}`);
    } catch (err) {
      assert.ok(isPdbError(err, 'E_CASSETTE_INVALID'), String(err));
      assert.match((err as Error).message, /through the link/);
    }
  }
  const file = join(t.dir, 'escape.json');
  writeFileSync(file, JSON.stringify(cassette(escape)));
  const v = cli(['validate', file]);
  assert.is(v.code, 1, v.stdout);
  assert.match(v.stdout, /through the link/);
  // A link already in the tree (or made by a shell step): replay refuses the step, writes nothing there.
  const root = join(t.dir, 'linked-root');
  writeTree(root, { 'a.txt': 'a\n' });
  symlinkSync(outside, join(root, 'esc'));
  for (const step of [escape[1], escape[2], { action: 'chmod', path: 'esc/victim', mode: '+x' }, { action: 'mkdir', path: 'esc/made' }]) {
    const r = await replayCassette(root, parseCassette(cassette([step])).cassette);
    assert.ok(r.failure, JSON.stringify(step));
    assert.match(r.failure!.message, /E_CASSETTE_INVALID|through the link/);
  }
  symlinkSync(join(outside, 'victim'), join(root, 'file-link'));
  const w = await replayCassette(root, parseCassette(cassette([{ action: 'write', path: 'file-link', content: 'x' }])).cassette);
  assert.ok(w.failure);
  assert.equal(readdirSync(outside).sort(), ['victim']);
  assert.is(readFileSync(join(outside, 'victim'), 'utf8'), 'keep\n');
  assert.is(statSync(join(outside, 'victim')).mode & 0o111, 0);
});

test.run();
