import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CLI, cli, cliJson, tempDir, writeTree } from '../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());
const store = join(t.dir, 'store');
const src = join(t.dir, 'src');
writeTree(src, { 'a.txt': 'A\n', sub: { 'b.txt': 'B\n' } });
const env = { PDB_ENV_STORE: store };

test('every command answers --help', () => {
  const top = cli(['--help']);
  assert.is(top.code, 0);
  const names = [...top.stdout.matchAll(/^  ([a-z][a-z-]*)  /gm)].map((m) => m[1]!);
  assert.ok(names.length >= 14, names.join(','));
  for (const want of ['create', 'run', 'list', 'checkpoint', 'bench', 'report']) assert.ok(names.includes(want), want);
  for (const name of names) {
    const r = cli([name, '--help']);
    assert.is(r.code, 0, name);
    assert.match(r.stdout, new RegExp(`pdb-env ${name}`), name);
  }
});

test('create, run (exit code and PDB_ENV_SESSION), re-entry, path, list', () => {
  const c = cliJson(['create', 's1', '--from', src], { env });
  assert.is(c.session, 's1');
  assert.match(c.base, /^sha256:[0-9a-f]{64}$/);
  const r = cli(['run', 's1', '--', 'sh', '-c', 'echo "$PDB_ENV_SESSION" > who.txt; pwd > pwd.txt; exit 7'], { env });
  assert.is(r.code, 7, 'exit code passes through');
  const root = cli(['path', 's1'], { env }).stdout.trim();
  assert.is(readFileSync(join(root, 'who.txt'), 'utf8').trim(), 's1');
  const again = cli(['run', 's1', '--', 'cat', 'who.txt'], { env });
  assert.is(again.stdout.trim(), 's1', 'a second run sees the first run’s writes');
  const list = cliJson(['list'], { env, cwd: join(root) });
  assert.equal(
    list.sessions.map((s: any) => [s.name, s.current]),
    [['s1', true]],
  );
  const bare = cli([], { env, cwd: root });
  assert.match(bare.stdout, /\*\s+s1\s+full-copy/);
});

test('checkpoint --json has the documented fields and is stable', () => {
  cliJson(['create', 's2', '--from', src], { env });
  const one = cliJson(['checkpoint', 's2'], { env });
  for (const k of ['session', 'base', 'snapshot', 'changeset'])
    assert.match(String(one[k]), k === 'session' ? /s2/ : /^sha256:[0-9a-f]{64}$/);
  assert.is(one.changes, 0);
  assert.is(cliJson(['checkpoint', 's2'], { env }).snapshot, one.snapshot);
  const diff = cliJson(['diff', 's2'], { env });
  assert.equal(diff.changes, []);
});

test('checkpoint while run is active fails fast with E_LEASE_BUSY, then succeeds', async () => {
  cliJson(['create', 'busy', '--from', src], { env });
  const root = cli(['path', 'busy'], { env }).stdout.trim();
  const gate = join(t.dir, 'gate');
  const child = spawn(
    process.execPath,
    [CLI, 'run', 'busy', '--', 'sh', '-c', `touch started; while [ ! -e ${gate} ]; do sleep 0.05; done`],
    { env: { ...process.env, ...env }, stdio: 'ignore' },
  );
  while (!existsSync(join(root, 'started'))) await new Promise((r) => setTimeout(r, 20));
  const r = cli(['checkpoint', 'busy', '--json'], { env });
  assert.is(r.code, 1);
  assert.is(JSON.parse(r.stdout).error.code, 'E_LEASE_BUSY');
  writeFileSync(gate, '');
  await once(child, 'exit');
  const ok = cliJson(['checkpoint', 'busy'], { env });
  assert.is(ok.changes, 1);
});

test('a lease left by a dead process is released', () => {
  cliJson(['create', 'stale', '--from', src], { env });
  const leaseDir = join(store, 'sessions', 'stale', 'lease');
  mkdirSync(leaseDir, { recursive: true });
  writeFileSync(
    join(leaseDir, 'writer-1-dead.json'),
    JSON.stringify({ kind: 'writer', pid: 2 ** 22 + 3, pidStart: null, purpose: 'run', acquiredAt: '' }),
  );
  assert.is(cliJson(['checkpoint', 'stale'], { env }).changes, 0);
  assert.equal(readdirSync(leaseDir), []);
});

test('bad input: fifo and non-UTF-8 names are typed errors, nothing is left', () => {
  const bad = join(t.dir, 'bad-fifo');
  writeTree(bad, { ok: 'x' });
  execFileSync('mkfifo', [join(bad, 'pipe')]);
  const r = cli(['create', 'f1', '--from', bad], { env });
  assert.is(r.code, 1);
  assert.match(r.stderr, /E_UNSUPPORTED_ENTRY: "pipe" is a fifo/);
  assert.not.ok(existsSync(join(store, 'sessions', 'f1')));
  const bad2 = join(t.dir, 'bad-utf8');
  mkdirSync(bad2);
  writeFileSync(Buffer.concat([Buffer.from(`${bad2}/x-`), Buffer.from([0xc3, 0x28])]), '');
  const j = JSON.parse(cli(['create', 'f2', '--from', bad2, '--json'], { env }).stdout);
  assert.is(j.error.code, 'E_NON_UTF8_NAME');
  assert.ok(j.error.message.length > 10);
  assert.not.ok(existsSync(join(store, 'sessions', 'f2')));
});

test('usage errors exit 2 with a code; unknown commands too', () => {
  const r = cli(['create'], { env });
  assert.is(r.code, 2);
  assert.match(r.stderr, /E_USAGE/);
  assert.is(cli(['frobnicate'], { env }).code, 2);
  assert.is(cli(['run', 's1'], { env }).code, 2);
  assert.is(cli(['create', 'x', '--bogus'], { env }).code, 2);
});

test('run without -- says that run needs it', () => {
  cliJson(['create', 'dd', '--from', src], { env });
  const r = cli(['run', 'dd', 'ls', '-la'], { env });
  assert.is(r.code, 2);
  assert.match(r.stderr, /E_USAGE: run needs -- before the command: "ls -la" came without it/);
  assert.match(r.stderr, /pdb-env run dd -- ls -la/);
  assert.not.match(r.stderr, /argument/);
  const noName = cli(['run', '--', 'ls'], { env });
  assert.is(noName.code, 2);
  assert.match(noName.stderr, /missing the session name/);
  const bogus = cli(['run', 'dd', '--bogus', '--', 'ls'], { env });
  assert.is(bogus.code, 2);
  assert.match(bogus.stderr, /E_USAGE: run: unknown option '--bogus'/);
  // Words after -- belong to the command, options included.
  const ok = cli(['run', 'dd', '--', 'sh', '-c', 'echo "$1"', 'sh', '--json'], { env });
  assert.is(ok.code, 0, ok.stderr);
  assert.is(ok.stdout, '--json\n');
});

test('a program that cannot start exits 127 (not found) or 126 (not executable), like a shell', () => {
  cliJson(['create', 'cx', '--from', src], { env });
  const root = cli(['path', 'cx'], { env }).stdout.trim();
  const missing = cli(['run', 'cx', '--', 'pdb-env-no-such-command'], { env });
  assert.is(missing.code, 127);
  assert.match(missing.stderr, /^pdb-env: E_COMMAND_NOT_FOUND: command not found: "pdb-env-no-such-command"/);
  const json = cli(['run', 'cx', '--json', '--', './nope.sh'], { env });
  assert.is(json.code, 127);
  assert.is(JSON.parse(json.stdout).error.code, 'E_COMMAND_NOT_FOUND');
  writeFileSync(join(root, 'plain.sh'), '#!/bin/sh\necho hi\n', { mode: 0o644 });
  const plain = cli(['run', 'cx', '--', './plain.sh'], { env });
  assert.is(plain.code, 126);
  assert.match(plain.stderr, /E_COMMAND_NOT_EXECUTABLE: cannot execute "\.\/plain\.sh"/);
  chmodSync(join(root, 'plain.sh'), 0o755);
  const runs = cli(['run', 'cx', '--', './plain.sh'], { env });
  assert.is(runs.code, 0, runs.stderr);
  assert.is(runs.stdout, 'hi\n');
  const shell = cli(['enter', 'cx'], { env: { ...env, SHELL: join(t.dir, 'no-shell') } });
  assert.is(shell.code, 127);
  assert.match(shell.stderr, /E_COMMAND_NOT_FOUND/);
});

test('verify finds a flipped byte in an object', () => {
  assert.is(cli(['verify'], { env }).code, 0);
  const objects = join(store, 'objects', 'sha256');
  const prefix = readdirSync(objects).find((p) => readdirSync(join(objects, p)).length > 0)!;
  const file = join(objects, prefix, readdirSync(join(objects, prefix))[0]!);
  chmodSync(file, 0o644);
  const bytes = readFileSync(file);
  bytes[0] ^= 1;
  writeFileSync(file, bytes);
  const r = cli(['verify', '--json'], { env });
  assert.is(r.code, 1);
  assert.equal(JSON.parse(r.stdout).corrupt, [`sha256:${prefix}${file.split('/').pop()}`]);
});

test('backends --json lists all seven with securityIsolation false', () => {
  const r = cliJson(['backends'], { env });
  assert.equal(
    r.backends.map((b: any) => b.name),
    ['full-copy', 'reflink', 'btrfs-snapshot', 'overlay', 'apfs-clone', 'git-worktree', 'agentfs'],
  );
  for (const b of r.backends) {
    assert.is(b.securityIsolation, false);
    assert.is(typeof b.available, 'boolean');
    if (!b.available) assert.match(b.reason, /^E_[A-Z_]+$/);
  }
  assert.is(r.backends[0].available, true);
});

test.run();
