// The fast path (cli/fast-path.ts): a plain `checkpoint` call runs without commander; every other
// command line goes to commander. Both run the same action, so a plain call and the same call
// spelled for commander (a global option before the command) must print the same results and
// the same errors, with the same exit status. The bundles (scripts/build-bundles.mjs: the fast path,
// and the whole command line) run while they are fresh and give what the modules give; a stale one
// is never run.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, copyFileSync, mkdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';
import { Script } from 'node:vm';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fastCheckpointArgs } from '../../cli/fast-args.js';
import { BUNDLE_FILE, BUNDLE_MANIFEST, BUNDLE_NAMES, bundleFiles, bundleIsFresh } from '../../cli/fast-entry.js';
import { BUNDLE_CACHE, BUNDLE_IMPORT, bundleHead, loadBundle } from '../../cli/bundle-state.cjs';
import { CLI, REPO_ROOT, cli, tempDir, writeTree } from '../helpers/index.js';

const t = tempDir('pdb-fast-');
test.after(() => t.cleanup());
const store = join(t.dir, 'store');

test('plain checkpoint calls take the fast path; anything else goes to commander', () => {
  const plain: Array<[string[], ReturnType<typeof fastCheckpointArgs>]> = [
    [['checkpoint', 'a'], { name: 'a', store: undefined, json: false, verify: false }],
    [['checkpoint'], { name: undefined, store: undefined, json: false, verify: false }],
    [['checkpoint', '--json', 'a', '--verify'], { name: 'a', store: undefined, json: true, verify: true }],
    [['checkpoint', 'a', '--store', '/s'], { name: 'a', store: '/s', json: false, verify: false }],
    [['checkpoint', '--store=/s', 'a'], { name: 'a', store: '/s', json: false, verify: false }],
  ];
  for (const [argv, want] of plain) assert.equal(fastCheckpointArgs(argv), want, argv.join(' '));
  const others = [
    ['list'],
    ['diff', 'a'],
    ['--store', '/s', 'checkpoint', 'a'],
    ['checkpoint', 'a', 'b'],
    ['checkpoint', '--help'],
    ['checkpoint', '-h'],
    ['checkpoint', 'a', '--json', '--json'],
    ['checkpoint', 'a', '--store'],
    ['checkpoint', 'a', '--store', '--json'],
    ['checkpoint', 'a', '--store='],
    ['checkpoint', 'a', '--store', '/s', '--store', '/t'],
    ['checkpoint', 'a', '--verfy'],
    ['checkpoint', '--', 'a'],
    ['checkpoint', ''],
  ];
  for (const argv of others) assert.is(fastCheckpointArgs(argv), null, argv.join(' '));
});

/** Whether a CLI run loaded commander (a CommonJS module, alone or in the cli bundle), through a preloaded hook. */
function loadsCommander(args: string[]): { loaded: boolean; code: number | null; stdout: string } {
  // commander is in node_modules, or in the cli bundle, which holds it.
  const hook = `import { createRequire } from 'node:module'; const r = createRequire(process.cwd() + '/'); process.on('exit', () => process.stderr.write('COMMANDER=' + Object.keys(r.cache).some((f) => f.includes('/commander/') || f.endsWith('/cli/${bundleFiles('cli').file}')) + '\\n'));`;
  const run = spawnSync(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(hook)}`, CLI, ...args], {
    encoding: 'utf8',
  });
  const m = /COMMANDER=(true|false)/.exec(run.stderr);
  assert.ok(m, `the hook reported nothing: ${run.stderr}`);
  return { loaded: m[1] === 'true', code: run.status, stdout: run.stdout };
}

test('the fast path gives what commander gives: results, errors and exit statuses', () => {
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

  // Text output: the same lines.
  assert.is(cli(['checkpoint', 's', '--store', store]).stdout, cli(['--store', store, 'checkpoint', 's']).stdout);

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

/**
 * The files a CLI run loaded: every ES module Node's loader resolved (a module hook appends each
 * URL to a file) and every CommonJS file require() loaded (the require cache at exit). `entry`:
 * the file node runs (bin.js, or start.cjs as bin/pdb-env runs it).
 */
function modulesLoaded(
  args: string[],
  env: Record<string, string> = {},
  entry = CLI,
): { urls: string[]; required: string[]; code: number | null; stdout: string; stderr: string } {
  const log = join(t.dir, `loaded-${Math.random().toString(36).slice(2)}.txt`);
  writeFileSync(log, '');
  const hooks = `import { appendFileSync } from 'node:fs'; export async function resolve(s, c, next) { const r = await next(s, c); if (r.url.startsWith('file:')) appendFileSync(${JSON.stringify(log)}, r.url + '\\n'); return r; }`;
  const preload = `import { register, createRequire } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)}); const r = createRequire(process.cwd() + '/'); process.on('exit', () => process.stderr.write('REQUIRED=' + JSON.stringify(Object.keys(r.cache)) + '\\n'));`;
  const run = spawnSync(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(preload)}`, entry, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  const m = /REQUIRED=(.*)/.exec(run.stderr);
  assert.ok(m, `the hook reported nothing: ${run.stderr}`);
  return {
    urls: readFileSync(log, 'utf8').split('\n').filter(Boolean),
    required: JSON.parse(m[1]!) as string[],
    code: run.status,
    stdout: run.stdout,
    stderr: run.stderr.replace(/REQUIRED=.*\n/, ''),
  };
}

test('npm test built the checkpoint bundle; a plain checkpoint runs it, and it gives what the modules give', () => {
  const cliDir = dirname(CLI);
  assert.ok(
    bundleIsFresh(cliDir, join(cliDir, '..')),
    'dist/cli/checkpoint-bundle.cjs is missing or stale: npm test (and npm run build) run node scripts/build-bundles.mjs after tsc',
  );
  writeTree(join(t.dir, 'src2'), { 'a.txt': 'a\n', lib: { 'b.txt': 'b\n' } });
  assert.is(cli(['create', 'b', '--from', join(t.dir, 'src2'), '--store', store]).code, 0);
  const root = cli(['path', 'b', '--store', store]).stdout.trim();
  appendFileSync(join(root, 'a.txt'), 'more\n');
  const bundled = modulesLoaded(['checkpoint', 'b', '--store', store, '--json']);
  assert.is(bundled.code, 0);
  assert.ok(
    bundled.required.some((f) => f.endsWith(`/cli/${BUNDLE_FILE}`)),
    'the bundle did not run',
  );
  assert.not.ok(
    bundled.urls.some((u) => u.endsWith('/sessions/checkpoint.js')),
    'a plain checkpoint still loaded the modules the bundle holds',
  );
  writeFileSync(join(root, 'new.txt'), 'new\n');
  const modules = modulesLoaded(['checkpoint', 'b', '--store', store, '--json'], { PDB_ENV_NO_BUNDLE: '1' });
  assert.is(modules.code, 0);
  assert.not.ok(
    modules.required.some((f) => f.endsWith(`/cli/${BUNDLE_FILE}`)),
    'PDB_ENV_NO_BUNDLE=1 still ran the bundle',
  );
  assert.ok(modules.urls.some((u) => u.endsWith('/sessions/checkpoint.js')));
  const [a, b] = [JSON.parse(bundled.stdout), JSON.parse(modules.stdout)];
  assert.is(a.changes, 1);
  assert.is(b.changes, 2, 'the modules saw the file added after the bundled checkpoint');
  assert.is(b.base, a.base);
  // The same tree checkpointed by each gives one Snapshot.
  const again = JSON.parse(cli(['checkpoint', 'b', '--store', store, '--json']).stdout);
  assert.is(again.snapshot, b.snapshot);
  // doctor says which one a plain checkpoint runs.
  assert.equal(JSON.parse(cli(['doctor', '--store', store, '--json']).stdout).checkpointBundle.bundled, true);
  const off = cli(['doctor', '--store', store], { env: { PDB_ENV_NO_BUNDLE: '1' } }).stdout;
  assert.match(off, /^checkpoint: modules \(PDB_ENV_NO_BUNDLE=1\)$/m);
  // Errors on the bundled path are typed as before (across module copies: test/model/errors.test.ts).
  const busy = cli(['checkpoint', 'nope', '--store', store]);
  assert.is(busy.code, 1);
  assert.match(busy.stderr, /E_SESSION_NOT_FOUND/);
});

test('bin/pdb-env starts in CommonJS: a plain checkpoint runs the bundle before any ES module of pdb-env is loaded', () => {
  const start = join(dirname(CLI), 'start.cjs');
  assert.match(readFileSync(join(REPO_ROOT, 'bin', 'pdb-env'), 'utf8'), /dist\/cli\/start\.cjs/, 'bin/pdb-env runs start.cjs');
  writeTree(join(t.dir, 'src3'), { 'a.txt': 'a\n', lib: { 'b.txt': 'b\n' } });
  assert.is(cli(['create', 'c', '--from', join(t.dir, 'src3'), '--store', store]).code, 0);
  const root = cli(['path', 'c', '--store', store]).stdout.trim();
  appendFileSync(join(root, 'a.txt'), 'more\n');
  // (With --import, node resolves the entry itself through the loader too: start.cjs is no ES module.)
  const ours = (urls: string[]) => urls.filter((u) => u.includes('/dist/') && u.endsWith('.js'));
  const fast = modulesLoaded(['checkpoint', 'c', '--store', store, '--json'], {}, start);
  assert.is(fast.code, 0, fast.stderr);
  assert.ok(
    fast.required.some((f) => f.endsWith(`/cli/${BUNDLE_FILE}`)),
    'start.cjs did not run the bundle',
  );
  assert.equal(ours(fast.urls), [], 'a plain checkpoint from start.cjs loaded ES modules of pdb-env');
  assert.is(JSON.parse(fast.stdout).changes, 1);
  // Its text and its errors are what bin.js prints (write(2) on the fds instead of the streams).
  for (const args of [
    ['checkpoint', 'c', '--store', store],
    ['checkpoint', 'nope', '--store', store],
    ['checkpoint', 'nope', '--store', store, '--json'],
  ]) {
    const a = modulesLoaded(args, {}, start);
    const b = cli(args);
    assert.equal([a.code, a.stdout, a.stderr], [b.code, b.stdout, b.stderr], args.join(' '));
  }
  // Anything else runs the cli bundle, also before any ES module of pdb-env; without fresh bundles, bin.js.
  const list = modulesLoaded(['list', '--store', store, '--json'], {}, start);
  assert.is(list.code, 0, list.stderr);
  assert.ok(
    list.required.some((f) => f.endsWith(`/cli/${bundleFiles('cli').file}`)),
    'start.cjs did not run the cli bundle',
  );
  assert.equal(ours(list.urls), [], 'a list from start.cjs loaded ES modules of pdb-env');
  assert.ok((JSON.parse(list.stdout) as { sessions: Array<{ name: string }> }).sessions.some((s) => s.name === 'c'));
  const listModules = modulesLoaded(['list', '--store', store, '--json'], { PDB_ENV_NO_BUNDLE: '1' }, start);
  assert.is(listModules.code, 0, listModules.stderr);
  assert.ok(listModules.urls.some((u) => u.endsWith('/dist/cli/bin.js')));
  assert.equal(JSON.parse(listModules.stdout), JSON.parse(list.stdout));
  const modules = modulesLoaded(['checkpoint', 'c', '--store', store, '--json'], { PDB_ENV_NO_BUNDLE: '1' }, start);
  assert.is(modules.code, 0, modules.stderr);
  assert.not.ok(
    modules.required.some((f) => f.endsWith(`/cli/${BUNDLE_FILE}`)),
    'PDB_ENV_NO_BUNDLE=1 still ran the bundle',
  );
  assert.ok(modules.urls.some((u) => u.endsWith('/sessions/checkpoint.js')));
  const help = modulesLoaded(['checkpoint', '--help'], {}, start);
  assert.is(help.code, 0);
  assert.match(help.stdout, /checkpoint/);
  // NODE_EXTRA_CA_CERTS is back for what pdb-env runs.
  const env = spawnSync(join(REPO_ROOT, 'bin', 'pdb-env'), ['checkpoint', 'c', '--store', store, '--json'], {
    encoding: 'utf8',
    env: { ...process.env, NODE_EXTRA_CA_CERTS: '/nonexistent-ca.pem' },
  });
  assert.is(env.status, 0, env.stderr);
});

/** How a bundle in `dir` compiles and whether it exports `fn`, loaded in a process of its own (V8 compiles a source it compiled before from its own cache, not the file's). */
function compiledIn(dir: string, name: 'checkpoint' | 'cli' = 'checkpoint', fn = 'runFast'): string {
  const r = spawnSync(
    process.execPath,
    [
      '-e',
      `const b = require(${JSON.stringify(join(dirname(CLI), 'bundle-state.cjs'))}).loadBundle(process.argv[1], process.argv[2]); console.log(b.compile, typeof b.exports[process.argv[3]])`,
      dir,
      name,
      fn,
    ],
    { encoding: 'utf8' },
  );
  assert.is(r.status, 0, r.stderr);
  return r.stdout.trim();
}

test('npm test built the cli bundle; every other command line runs it, and it gives what the modules give', () => {
  const cliDir = dirname(CLI);
  assert.ok(
    bundleIsFresh(cliDir, join(cliDir, '..'), 'cli'),
    'dist/cli/cli-bundle.cjs is missing or stale: npm test (and npm run build) run node scripts/build-bundles.mjs after tsc',
  );
  assert.is(compiledIn(cliDir, 'cli', 'runCli'), 'code cache function', 'npm test makes its code cache (scripts/warm-bundle-cache.mjs)');
  const bundled = modulesLoaded(['envs', '--store', store, '--json']);
  assert.ok(
    bundled.required.some((f) => f.endsWith(`/cli/${bundleFiles('cli').file}`)),
    'bin.js did not run the cli bundle',
  );
  assert.not.ok(
    bundled.urls.some((u) => u.endsWith('/cli/main.js')),
    'the cli bundle still loaded the modules it holds',
  );
  // The same command lines by the bundle and by the modules: the same output, errors and statuses
  // (a session made by each, so that both see one store; the timestamps differ).
  writeTree(join(t.dir, 'src4'), { 'a.txt': 'a\n', lib: { 'b.txt': 'b\n' } });
  const noBundle = { env: { PDB_ENV_NO_BUNDLE: '1' } };
  const made = [
    cli(['create', 'd1', '--from', join(t.dir, 'src4'), '--store', store, '--json']),
    cli(['create', 'd2', '--from', join(t.dir, 'src4'), '--store', store, '--json'], noBundle),
  ];
  assert.equal(
    made.map((r) => r.code),
    [0, 0],
    made.map((r) => r.stderr).join(''),
  );
  const [d1, d2] = made.map((r) => JSON.parse(r.stdout) as Record<string, unknown>);
  for (const k of ['backend', 'base', 'files']) assert.equal(d1![k], d2![k], k);
  for (const name of ['d1', 'd2']) appendFileSync(join(cli(['path', name, '--store', store]).stdout.trim(), 'a.txt'), 'more\n');
  for (const args of [
    ['diff', 'd1', '--store', store, '--json'],
    ['diff', 'd2', '--store', store],
    ['path', 'd2', '--store', store],
    ['envs', '--store', store, '--json'],
    ['list', '--store', store],
    ['nope', '--store', store],
    ['diff', 'missing', '--store', store, '--json'],
    ['create', 'bad name', '--store', store],
    ['list', '--no-such-option'],
    ['help', 'create'],
  ]) {
    const a = cli(args);
    const b = cli(args, noBundle);
    const stable = (text: string) => text.replace(/"(createdAt|at)": "[^"]+"/g, '"$1": "T"');
    assert.equal([a.code, stable(a.stdout), a.stderr], [b.code, stable(b.stdout), b.stderr], args.join(' '));
  }
  for (const name of ['d1', 'd2']) assert.is(cli(['discard', name, '--store', store], name === 'd1' ? {} : noBundle).code, 0);
  // doctor says which copy runs.
  const doctor = JSON.parse(cli(['doctor', '--store', store, '--json']).stdout);
  assert.equal([doctor.cliBundle.bundled, doctor.checkpointBundle.bundled], [true, true]);
  assert.match(cli(['doctor', '--store', store], noBundle).stdout, /^commands: modules \(PDB_ENV_NO_BUNDLE=1\)$/m);
});

test('the bundle is compiled with the code cache its build made, and only with that one', () => {
  const cliDir = dirname(CLI);
  const compiled = (dir: string) => compiledIn(dir);
  for (const name of BUNDLE_NAMES) assert.ok(statSync(join(cliDir, bundleFiles(name).cache)).size > 0, `${name}: no code cache`);
  assert.is(compiled(cliDir), 'code cache function', 'npm test makes the code cache after the bundle (scripts/warm-bundle-cache.mjs)');
  const source = readFileSync(join(cliDir, BUNDLE_FILE), 'utf8');
  // Every dynamic import of the bundle goes through the loader's import() (a vm script has none that does not warn).
  const lines = source.split('\n');
  assert.equal(
    lines.slice(0, 2),
    bundleHead(/"([0-9a-f]{32})"/.exec(lines[0]!)![1]!),
    'the bundle starts with its build id and its import()',
  );
  const body = lines.slice(2).join('\n');
  assert.not.match(body, /(?<![\w$.])import\(/);
  assert.ok(body.split(`${BUNDLE_IMPORT}("`).length > 1);
  // A copy of the bundle beside caches that do not fit it: each time it runs as it is, compiled.
  const copy = join(t.dir, 'cli-copy');
  mkdirSync(copy, { recursive: true });
  copyFileSync(join(cliDir, BUNDLE_FILE), join(copy, BUNDLE_FILE));
  const cache = readFileSync(join(cliDir, BUNDLE_CACHE));
  const other = Buffer.from(cache);
  other.write('0'.repeat(32), 0, 'latin1');
  writeFileSync(join(copy, BUNDLE_CACHE), other);
  assert.is(compiled(copy), 'no code cache function', 'a cache made for another build was used');
  // V8 would take a damaged cache (it checks lengths and versions, not bytes): its sha256 does not match.
  const damaged = Buffer.from(cache);
  for (let i = 100; i < damaged.length; i += 997) damaged[i] ^= 0x5a;
  writeFileSync(join(copy, BUNDLE_CACHE), damaged);
  assert.is(compiled(copy), 'no code cache function', 'a damaged cache was used');
  writeFileSync(join(copy, BUNDLE_CACHE), cache.subarray(0, cache.length >> 1));
  assert.is(compiled(copy), 'no code cache function', 'a cache cut short was used');
  // One that is whole but V8 rejects (made for other source, or under other flags).
  const alien = new Script('"a script of another length";').createCachedData();
  writeFileSync(join(copy, BUNDLE_CACHE), Buffer.concat([cache.subarray(0, 32), createHash('sha256').update(alien).digest(), alien]));
  assert.is(compiled(copy), 'code cache rejected function');
  writeFileSync(join(copy, BUNDLE_CACHE), cache);
  assert.is(compiled(copy), 'code cache function');
});

test('a bundle runs only while every file it was made from is as it was', () => {
  const dist = join(t.dir, 'fake-dist');
  mkdirSync(join(dist, 'cli'), { recursive: true });
  mkdirSync(join(dist, 'model'), { recursive: true });
  const files = ['model/a.js', `cli/${BUNDLE_FILE}`];
  for (const f of files) writeFileSync(join(dist, f), `// ${f}\n`);
  const record = () =>
    writeFileSync(
      join(dist, 'cli', BUNDLE_MANIFEST),
      JSON.stringify({ inputs: files.map((f) => [f, statSync(join(dist, f)).size, statSync(join(dist, f)).mtimeMs]) }),
    );
  const fresh = () => bundleIsFresh(join(dist, 'cli'), dist);
  assert.not.ok(fresh(), 'no manifest: not fresh');
  record();
  assert.ok(fresh());
  utimesSync(join(dist, 'model/a.js'), new Date(), new Date(Date.now() + 5000));
  assert.not.ok(fresh(), 'an input rebuilt (new mtime) after the bundle');
  record();
  assert.ok(fresh());
  const m = statSync(join(dist, 'model/a.js')).mtime;
  writeFileSync(join(dist, 'model/a.js'), '// longer than before\n');
  utimesSync(join(dist, 'model/a.js'), m, m);
  assert.not.ok(fresh(), 'same mtime, other size');
  record();
  writeFileSync(join(dist, 'cli', BUNDLE_MANIFEST), '{"inputs": [["model/a.js", 1');
  assert.not.ok(fresh(), 'a manifest cut short');
  writeFileSync(join(dist, 'cli', BUNDLE_MANIFEST), JSON.stringify({ inputs: [] }));
  assert.not.ok(fresh(), 'an empty manifest vouches for nothing');
  writeFileSync(join(dist, 'cli', BUNDLE_MANIFEST), JSON.stringify({ inputs: [['model/gone.js', 1, 1]] }));
  assert.not.ok(fresh(), 'an input that is gone');
});

test.run();
