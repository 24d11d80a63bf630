// The bundles (cli/bundle.cts, made by scripts/build-bundles.mjs): npm test builds both with their
// code caches; each gives what the modules give; a code cache is used only for its own build; and
// a bundle runs only when it is of the build id the build wrote into bundle.cjs, which tsc writes
// without one (so a bare tsc runs the modules, never a bundle of older sources).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Script } from 'node:vm';
import ts from 'typescript';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BUNDLE_IMPORT, BUNDLE_NAMES, bundleFiles, bundleHead, bundleState } from '../../cli/bundle.cjs';
import { CLI, REPO_ROOT, cli, tempDir, writeTree } from '../helpers/index.js';
import { modulesLoaded } from '../helpers/modules-loaded.js';

const t = tempDir('pdb-bundle-');
test.after(() => t.cleanup());
const store = join(t.dir, 'store');
const cliDir = dirname(CLI);
const CHECKPOINT = bundleFiles('checkpoint');
const loaded = (args: string[], env: Record<string, string> = {}) => modulesLoaded(t.dir, args, env);

test('npm test built the checkpoint bundle; a plain checkpoint runs it, and it gives what the modules give', () => {
  assert.ok(
    bundleState('checkpoint').bundled,
    `dist/cli/${CHECKPOINT.file} does not run (${bundleState('checkpoint').reason}): npm test (and npm run build) run node scripts/build-bundles.mjs after tsc`,
  );
  writeTree(join(t.dir, 'src2'), { 'a.txt': 'a\n', lib: { 'b.txt': 'b\n' } });
  assert.is(cli(['create', 'b', '--from', join(t.dir, 'src2'), '--store', store]).code, 0);
  const root = cli(['path', 'b', '--store', store]).stdout.trim();
  appendFileSync(join(root, 'a.txt'), 'more\n');
  const bundled = loaded(['checkpoint', 'b', '--store', store, '--json']);
  assert.is(bundled.code, 0);
  assert.ok(
    bundled.required.some((f) => f.endsWith(`/cli/${CHECKPOINT.file}`)),
    'the bundle did not run',
  );
  assert.not.ok(
    bundled.urls.some((u) => u.endsWith('/sessions/lifecycle/checkpoint.js') || u.endsWith('/cli/commands/checkpoint.js')),
    'a plain checkpoint still loaded the modules the bundle holds',
  );
  writeFileSync(join(root, 'new.txt'), 'new\n');
  const modules = loaded(['checkpoint', 'b', '--store', store, '--json'], { PDB_ENV_NO_BUNDLE: '1' });
  assert.is(modules.code, 0);
  assert.not.ok(
    modules.required.some((f) => f.endsWith(`/cli/${CHECKPOINT.file}`)),
    'PDB_ENV_NO_BUNDLE=1 still ran the bundle',
  );
  assert.ok(modules.urls.some((u) => u.endsWith('/cli/commands/checkpoint.js')));
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

/** How a bundle in `dir` compiles and whether it exports `fn`, loaded in a process of its own (V8 compiles a source it compiled before from its own cache, not the file's). */
function compiledIn(dir: string, name: 'checkpoint' | 'cli' = 'checkpoint', fn = 'runCheap'): string {
  const r = spawnSync(
    process.execPath,
    [
      '-e',
      `const b = require(${JSON.stringify(join(cliDir, 'bundle.cjs'))}).loadBundle(process.argv[1], process.argv[2]); console.log(b.compile, typeof b.exports[process.argv[3]])`,
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
  assert.ok(
    bundleState('cli').bundled,
    `dist/cli/cli-bundle.cjs does not run (${bundleState('cli').reason}): npm test (and npm run build) run node scripts/build-bundles.mjs after tsc`,
  );
  assert.is(compiledIn(cliDir, 'cli', 'runCli'), 'code cache function', 'npm test makes its code cache (scripts/warm-bundle-cache.mjs)');
  const bundled = loaded(['envs', '--store', store, '--json']);
  assert.ok(
    bundled.required.some((f) => f.endsWith(`/cli/${bundleFiles('cli').file}`)),
    'the executable did not run the cli bundle',
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
  const compiled = (dir: string) => compiledIn(dir);
  for (const name of BUNDLE_NAMES) assert.ok(statSync(join(cliDir, bundleFiles(name).cache)).size > 0, `${name}: no code cache`);
  assert.is(compiled(cliDir), 'code cache function', 'npm test makes the code cache after the bundle (scripts/warm-bundle-cache.mjs)');
  const source = readFileSync(join(cliDir, CHECKPOINT.file), 'utf8');
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
  copyFileSync(join(cliDir, CHECKPOINT.file), join(copy, CHECKPOINT.file));
  const cache = readFileSync(join(cliDir, CHECKPOINT.cache));
  const other = Buffer.from(cache);
  other.write('0'.repeat(32), 0, 'latin1');
  writeFileSync(join(copy, CHECKPOINT.cache), other);
  assert.is(compiled(copy), 'no code cache function', 'a cache made for another build was used');
  // V8 would take a damaged cache (it checks lengths and versions, not bytes): its sha256 does not match.
  const damaged = Buffer.from(cache);
  for (let i = 100; i < damaged.length; i += 997) damaged[i] ^= 0x5a;
  writeFileSync(join(copy, CHECKPOINT.cache), damaged);
  assert.is(compiled(copy), 'no code cache function', 'a damaged cache was used');
  writeFileSync(join(copy, CHECKPOINT.cache), cache.subarray(0, cache.length >> 1));
  assert.is(compiled(copy), 'no code cache function', 'a cache cut short was used');
  // One that is whole but V8 rejects (made for other source, or under other flags).
  const alien = new Script('"a script of another length";').createCachedData();
  writeFileSync(join(copy, CHECKPOINT.cache), Buffer.concat([cache.subarray(0, 32), createHash('sha256').update(alien).digest(), alien]));
  assert.is(compiled(copy), 'code cache rejected function');
  writeFileSync(join(copy, CHECKPOINT.cache), cache);
  assert.is(compiled(copy), 'code cache function');
});

test('a bundle runs only when it is of the build id in bundle.cjs; tsc writes none, so a bare tsc runs the modules', () => {
  // tsc's own output of cli/bundle.cts holds the line the build writes the id into, with no id.
  const compiled = ts.transpileModule(readFileSync(join(REPO_ROOT, 'cli', 'bundle.cts'), 'utf8'), {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
  }).outputText;
  assert.match(compiled, /^const BUILD_ID = null;$/m);
  const built = readFileSync(join(cliDir, 'bundle.cjs'), 'utf8');
  const id = /^const BUILD_ID = "([0-9a-f]{32})";$/m.exec(built)?.[1];
  assert.ok(id, 'npm test wrote the build id into dist/cli/bundle.cjs');
  // A copy of dist/cli's loader and checkpoint bundle beside it (in dist, so that what they require is found as from dist/cli).
  const dir = mkdtempSync(join(REPO_ROOT, 'dist', 'bundle-test-'));
  try {
    const state = (env: Record<string, string> = {}) => {
      const r = spawnSync(
        process.execPath,
        [
          '-e',
          `const b = require(${JSON.stringify(join(dir, 'bundle.cjs'))}); const run = b.bundleToRun('checkpoint'); console.log(JSON.stringify([run !== null && typeof run.exports.runCheap, b.bundleState('checkpoint')]))`,
        ],
        { encoding: 'utf8', env: { ...process.env, ...env } },
      );
      assert.is(r.status, 0, r.stderr);
      return JSON.parse(r.stdout) as [string | false, { bundled: boolean; reason: string }];
    };
    writeFileSync(join(dir, 'bundle.cjs'), built);
    copyFileSync(join(cliDir, CHECKPOINT.file), join(dir, CHECKPOINT.file));
    assert.equal(state(), ['function', { bundled: true, reason: `dist/cli/${CHECKPOINT.file}, build ${id.slice(0, 8)}` }]);
    assert.equal(state({ PDB_ENV_NO_BUNDLE: '1' }), [false, { bundled: false, reason: 'PDB_ENV_NO_BUNDLE=1' }]);
    // The bundle of another build (the build replaced it, or a copy mixed two).
    const source = readFileSync(join(cliDir, CHECKPOINT.file), 'utf8');
    writeFileSync(join(dir, CHECKPOINT.file), source.replace(id, 'f'.repeat(32)));
    assert.equal(state(), [false, { bundled: false, reason: `dist/cli/${CHECKPOINT.file} is of another build` }]);
    rmSync(join(dir, CHECKPOINT.file));
    assert.equal(state(), [false, { bundled: false, reason: `dist/cli/${CHECKPOINT.file} is missing` }]);
    // tsc wrote the loader again (no id): the modules, whatever bundle lies beside it.
    copyFileSync(join(cliDir, CHECKPOINT.file), join(dir, CHECKPOINT.file));
    writeFileSync(join(dir, 'bundle.cjs'), built.replace(`const BUILD_ID = "${id}";`, 'const BUILD_ID = null;'));
    assert.equal(state(), [false, { bundled: false, reason: 'dist was compiled without its bundles' }]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
