// bin/pdb-env, the command npm installs: it runs the CLI through a symlink (as npm links bins),
// starts pdb-env's own node without NODE_EXTRA_CA_CERTS (Node 20 parses that bundle at every
// start), and hands the variable back, unchanged, to what pdb-env runs.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { REPO_ROOT, skipTest, tempDir, writeTree } from '../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());
const BIN = join(REPO_ROOT, 'bin', 'pdb-env');
const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string>; version: string };

const run = (cmd: string, args: string[], env: Record<string, string | undefined> = {}) =>
  spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, ...env } });

test('package.json installs bin/pdb-env; it runs the CLI, also through a chain of symlinks', () => {
  assert.equal(pkg.bin, { 'pdb-env': 'bin/pdb-env' });
  symlinkSync(BIN, join(t.dir, 'one'));
  symlinkSync('one', join(t.dir, 'two')); // relative, as npm's .bin links are
  for (const cmd of [BIN, join(t.dir, 'two')]) {
    const r = run(cmd, ['--version']);
    assert.is(r.status, 0, r.stderr);
    assert.is(r.stdout.trim(), pkg.version);
  }
});

test('pdb-env runs without NODE_EXTRA_CA_CERTS itself; the programs it runs get it back unchanged', () => {
  if (!existsSync('/proc/self/environ'))
    return skipTest('NODE_EXTRA_CA_CERTS handed back', 'procfs', 'no /proc to read the parent environment from');
  const store = join(t.dir, 'store');
  writeTree(join(t.dir, 'src'), { 'a.txt': 'a\n' });
  assert.is(run(BIN, ['create', 's', '--from', join(t.dir, 'src'), '--store', store]).status, 0);
  const probe =
    'printf "child=%s saved=%s parent=" "$NODE_EXTRA_CA_CERTS" "${PDB_ENV_NODE_EXTRA_CA_CERTS:-none}"; tr "\\0" "\\n" < /proc/$PPID/environ | grep -c "^NODE_EXTRA_CA_CERTS=" || true';
  const bundle = join(t.dir, 'a bundle.pem');
  const r = run(BIN, ['run', 's', '--store', store, '--', 'sh', '-c', probe], { NODE_EXTRA_CA_CERTS: bundle });
  assert.is(r.status, 0, r.stderr);
  assert.is(r.stdout.trim(), `child=${bundle} saved=none parent=0`);
  // Unset, it stays unset.
  const none = run(BIN, ['run', 's', '--store', store, '--', 'sh', '-c', probe], { NODE_EXTRA_CA_CERTS: undefined });
  assert.is(none.stdout.trim(), 'child= saved=none parent=0');
});

test.run();
