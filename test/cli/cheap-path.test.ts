// The cheap path (cli/cheap-path.ts): a plain `checkpoint` or `restore` call runs without commander; every other
// command line goes to commander. Both run the same action, so a plain call and the same call
// spelled for commander (a global option before the command) must print the same results and
// the same errors, with the same exit status.
import { spawnSync } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { bundleFiles } from '../../cli/bundle.cjs';
import { CLI, cli, tempDir, writeTree } from '../helpers/index.js';

const t = tempDir('pdb-cheap-');
test.after(() => t.cleanup());
const store = join(t.dir, 'store');

/** Whether a CLI run loaded commander (a CommonJS module, alone or in the cli bundle), through a preloaded hook. */
function loadsCommander(args: string[], env: Record<string, string> = {}): { loaded: boolean; code: number | null; stdout: string } {
  // commander is in node_modules, or in the cli bundle, which holds it.
  const hook = `import { createRequire } from 'node:module'; const r = createRequire(process.cwd() + '/'); process.on('exit', () => process.stderr.write('COMMANDER=' + Object.keys(r.cache).some((f) => f.includes('/commander/') || f.endsWith('/cli/${bundleFiles('cli').file}')) + '\\n'));`;
  const run = spawnSync(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(hook)}`, CLI, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  const m = /COMMANDER=(true|false)/.exec(run.stderr);
  assert.ok(m, `the hook reported nothing: ${run.stderr}`);
  return { loaded: m[1] === 'true', code: run.status, stdout: run.stdout };
}

test('the cheap path gives what commander gives: results, errors and exit statuses', () => {
  writeTree(join(t.dir, 'src'), { 'a.txt': 'a\n', lib: { 'b.txt': 'b\n' } });
  assert.is(cli(['create', 's', '--from', join(t.dir, 'src'), '--store', store]).code, 0);
  const root = cli(['path', 's', '--store', store]).stdout.trim();
  appendFileSync(join(root, 'a.txt'), 'more\n');

  const fast = loadsCommander(['checkpoint', 's', '--store', store, '--json']);
  assert.is(fast.loaded, false, 'a plain checkpoint loaded commander');
  assert.is(fast.code, 0);
  const slow = loadsCommander(['--store', store, 'checkpoint', 's', '--json']);
  assert.is(slow.loaded, true, 'a global option before the command must go through commander');
  const [a, b] = [JSON.parse(fast.stdout), JSON.parse(slow.stdout)];
  for (const k of ['session', 'base', 'snapshot', 'changeset', 'changes', 'files', 'bytes', 'scanner']) assert.equal(a[k], b[k], k);
  assert.is(a.changes, 1);
  // The modules take the same path: no commander for a plain call.
  assert.is(loadsCommander(['checkpoint', 's', '--store', store], { PDB_ENV_NO_BUNDLE: '1' }).loaded, false);

  // Text output: the same lines.
  // (Each call is a new checkpoint of the log: its number is the one difference.)
  const numberless = (out: string) => out.replace(/^checkpoint \d+ of/, 'checkpoint N of');
  assert.is(numberless(cli(['checkpoint', 's', '--store', store]).stdout), numberless(cli(['--store', store, 'checkpoint', 's']).stdout));

  // Errors: no name (and no PDB_ENV_SESSION), an unknown session, each as text and as JSON.
  const env = { PDB_ENV_SESSION: '' };
  for (const [fastArgs, slowArgs] of [
    [
      ['checkpoint', '--store', store],
      ['--store', store, 'checkpoint'],
    ],
    [
      ['checkpoint', 'nope', '--store', store],
      ['--store', store, 'checkpoint', 'nope'],
    ],
    [
      ['checkpoint', 'nope', '--store', store, '--json'],
      ['--store', store, 'checkpoint', 'nope', '--json'],
    ],
  ]) {
    const x = cli(fastArgs!, { env });
    const y = cli(slowArgs!, { env });
    assert.ok(x.code !== 0, `${fastArgs!.join(' ')} succeeded`);
    assert.equal([x.code, x.stdout, x.stderr], [y.code, y.stdout, y.stderr], fastArgs!.join(' '));
  }
  assert.match(cli(['checkpoint', '--store', store], { env }).stderr, /E_USAGE: checkpoint needs a session name/);
});

test('a plain restore takes the cheap path too, with the same results and errors as through commander', () => {
  const root = cli(['path', 's', '--store', store]).stdout.trim();
  const last = () => JSON.parse(cli(['log', 's', '--store', store, '--json']).stdout).checkpoints.length as number;
  appendFileSync(join(root, 'a.txt'), 'again\n');
  assert.is(cli(['checkpoint', 's', '--store', store]).code, 0);
  appendFileSync(join(root, 'a.txt'), 'and again\n');
  assert.is(cli(['checkpoint', 's', '--store', store]).code, 0);
  const n = last();
  const fast = loadsCommander(['restore', 's', '--to', String(n - 1), '--store', store, '--json']);
  assert.is(fast.loaded, false, 'a plain restore loaded commander');
  assert.is(fast.code, 0);
  const slow = loadsCommander(['--store', store, 'restore', 's', '--to', String(n), '--json']);
  assert.is(slow.loaded, true);
  const [a, b] = [JSON.parse(fast.stdout), JSON.parse(slow.stdout)];
  assert.equal([a.from, a.written, a.removed], [n - 1, 1, 0]);
  assert.equal([b.from, b.written, b.removed], [n, 1, 0]);
  assert.equal(Object.keys(a).sort(), Object.keys(b).sort());
  // The text: the same lines but the numbers and digests.
  const plain = (out: string) => out.replace(/\d+/g, 'N').replace(/[0-9a-f]{7,}/g, 'D');
  assert.is(
    plain(cli(['restore', 's', '--to', '1', '--store', store]).stdout),
    plain(cli(['--store', store, 'restore', 's', '--to', '1']).stdout),
  );
  // A required --to missing goes to commander, which explains it; errors are the same on both paths.
  assert.is(loadsCommander(['restore', 's', '--store', store]).loaded, true);
  for (const [fastArgs, slowArgs] of [
    [
      ['restore', 'nope', '--to', '1', '--store', store],
      ['--store', store, 'restore', 'nope', '--to', '1'],
    ],
    [
      ['restore', 's', '--to', '999', '--store', store, '--json'],
      ['--store', store, 'restore', 's', '--to', '999', '--json'],
    ],
    [
      ['restore', '--to', '1', '--store', store],
      ['--store', store, 'restore', '--to', '1'],
    ],
  ]) {
    const x = cli(fastArgs!, { env: { PDB_ENV_SESSION: '' } });
    const y = cli(slowArgs!, { env: { PDB_ENV_SESSION: '' } });
    assert.ok(x.code !== 0, `${fastArgs!.join(' ')} succeeded`);
    assert.equal([x.code, x.stdout, x.stderr], [y.code, y.stdout, y.stderr], fastArgs!.join(' '));
  }
});

test.run();
