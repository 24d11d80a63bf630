// The executable (cli/pdb-env.cts), which bin/pdb-env, the tests and the harness all run: it starts
// in CommonJS and looks the command up in the table, so a plain checkpoint runs the checkpoint
// bundle and anything else the cli bundle before any ES module of pdb-env is loaded; the modules
// where no bundle runs. The package npm installs (every file with a new mtime) runs its bundles.
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { bundleFiles } from '../../cli/bundle.cjs';
import { cliEntry } from '../../model/paths.js';
import { CLI, REPO_ROOT, cli, tempDir, writeTree } from '../helpers/index.js';
import { modulesLoaded } from '../helpers/modules-loaded.js';

const t = tempDir('pdb-entry-');
test.after(() => t.cleanup());
const store = join(t.dir, 'store');
const CHECKPOINT = bundleFiles('checkpoint').file;

test('every caller runs one file: bin/pdb-env, the tests and the harness (cliEntry)', () => {
  assert.is(CLI, cliEntry());
  assert.ok(cliEntry().endsWith('/dist/cli/pdb-env.cjs'));
  assert.match(readFileSync(join(REPO_ROOT, 'bin', 'pdb-env'), 'utf8'), /exec node "\$\{self%\/\*\}\/\.\.\/dist\/cli\/pdb-env\.cjs" "\$@"/);
  assert.match(readFileSync(join(REPO_ROOT, 'harness', 'block-runner.ts'), 'utf8'), /cliPath: cliEntry\(\)/);
});

test('it starts in CommonJS: a plain checkpoint and a list run their bundles before any ES module of pdb-env is loaded', () => {
  writeTree(join(t.dir, 'src3'), { 'a.txt': 'a\n', lib: { 'b.txt': 'b\n' } });
  assert.is(cli(['create', 'c', '--from', join(t.dir, 'src3'), '--store', store]).code, 0);
  const root = cli(['path', 'c', '--store', store]).stdout.trim();
  appendFileSync(join(root, 'a.txt'), 'more\n');
  const loaded = (args: string[], env: Record<string, string> = {}) => modulesLoaded(t.dir, args, env);
  // (With --import, node resolves the entry itself through the loader too: it is no ES module.)
  const ours = (urls: string[]) => urls.filter((u) => u.includes('/dist/') && u.endsWith('.js'));
  const fast = loaded(['checkpoint', 'c', '--store', store, '--json']);
  assert.is(fast.code, 0, fast.stderr);
  assert.ok(
    fast.required.some((f) => f.endsWith(`/cli/${CHECKPOINT}`)),
    'the executable did not run the checkpoint bundle',
  );
  assert.equal(ours(fast.urls), [], 'a plain checkpoint loaded ES modules of pdb-env');
  assert.is(JSON.parse(fast.stdout).changes, 1);
  // Anything else runs the cli bundle, also before any ES module of pdb-env; without bundles, the modules.
  const list = loaded(['list', '--store', store, '--json']);
  assert.is(list.code, 0, list.stderr);
  assert.ok(
    list.required.some((f) => f.endsWith(`/cli/${bundleFiles('cli').file}`)),
    'the executable did not run the cli bundle',
  );
  assert.equal(ours(list.urls), [], 'a list loaded ES modules of pdb-env');
  assert.ok((JSON.parse(list.stdout) as { sessions: Array<{ name: string }> }).sessions.some((s) => s.name === 'c'));
  const listModules = loaded(['list', '--store', store, '--json'], { PDB_ENV_NO_BUNDLE: '1' });
  assert.is(listModules.code, 0, listModules.stderr);
  assert.ok(listModules.urls.some((u) => u.endsWith('/dist/cli/main.js')));
  assert.equal(JSON.parse(listModules.stdout), JSON.parse(list.stdout));
  const modules = loaded(['checkpoint', 'c', '--store', store, '--json'], { PDB_ENV_NO_BUNDLE: '1' });
  assert.is(modules.code, 0, modules.stderr);
  assert.not.ok(
    modules.required.some((f) => f.endsWith(`/cli/${CHECKPOINT}`)),
    'PDB_ENV_NO_BUNDLE=1 still ran the bundle',
  );
  assert.ok(modules.urls.some((u) => u.endsWith('/dist/cli/cheap-path.js')));
  assert.not.ok(
    modules.urls.some((u) => u.endsWith('/dist/cli/main.js')),
    'a plain checkpoint from the modules loaded the command line',
  );
  const help = loaded(['checkpoint', '--help']);
  assert.is(help.code, 0);
  assert.match(help.stdout, /pdb-env checkpoint/);
  // NODE_EXTRA_CA_CERTS is back for what pdb-env runs (test/cli/bin.test.ts looks at a child).
  const env = spawnSync(join(REPO_ROOT, 'bin', 'pdb-env'), ['checkpoint', 'c', '--store', store, '--json'], {
    encoding: 'utf8',
    env: { ...process.env, NODE_EXTRA_CA_CERTS: '/nonexistent-ca.pem' },
  });
  assert.is(env.status, 0, env.stderr);
});

/** Give every file under `dir` the same new mtime, as an install may. */
function touchAll(dir: string, when: Date): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) touchAll(p, when);
    else if (e.isFile()) utimesSync(p, when, when);
  }
}

test('the package npm installs runs its bundles, and doctor says so', () => {
  // What `npm pack` makes of this tree (its prepare, the build, is what npm test just ran).
  const pack = spawnSync('npm', ['pack', '--ignore-scripts', '--pack-destination', t.dir, '--json'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  });
  assert.is(pack.status, 0, pack.stderr);
  const tarball = join(t.dir, (JSON.parse(pack.stdout) as Array<{ filename: string }>)[0]!.filename);
  const prefix = join(t.dir, 'installed');
  // Installed by npm from its cache when it can (no network); otherwise the tarball unpacked by hand
  // beside this tree's node_modules, every file given a new mtime.
  const install = spawnSync(
    'npm',
    ['install', '--prefix', prefix, tarball, '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'],
    { encoding: 'utf8' },
  );
  const pkg = join(prefix, 'node_modules', 'pdb-env');
  if (install.status !== 0) {
    console.log(`npm install --offline failed (${install.stderr.trim().split('\n').pop()}): the tarball is unpacked by hand instead`);
    mkdirSync(pkg, { recursive: true });
    assert.is(spawnSync('tar', ['xzf', tarball, '-C', pkg, '--strip-components=1']).status, 0);
    touchAll(pkg, new Date(Date.now() + 60_000));
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(pkg, 'node_modules'));
  }
  assert.ok(existsSync(join(pkg, 'dist', 'cli', CHECKPOINT)), 'the package holds the bundles');
  const bin = join(pkg, 'bin', 'pdb-env');
  const doctor = spawnSync(bin, ['doctor', '--store', join(t.dir, 'installed-store')], { encoding: 'utf8' });
  assert.is(doctor.status, 0, doctor.stderr);
  assert.match(doctor.stdout, /^commands: bundle \(dist\/cli\/cli-bundle\.cjs, build [0-9a-f]{8}\)$/m);
  assert.match(doctor.stdout, /^checkpoint: bundle \(dist\/cli\/checkpoint-bundle\.cjs, build [0-9a-f]{8}\)$/m);
  // And it runs them: a plain checkpoint of the installed package loads its bundle.
  writeTree(join(t.dir, 'src5'), { 'a.txt': 'a\n' });
  const made = spawnSync(bin, ['create', 'p', '--from', join(t.dir, 'src5'), '--store', join(t.dir, 'installed-store')], {
    encoding: 'utf8',
  });
  assert.is(made.status, 0, made.stderr);
  const run = modulesLoaded(
    t.dir,
    ['checkpoint', 'p', '--store', join(t.dir, 'installed-store'), '--json'],
    {},
    join(pkg, 'dist', 'cli', 'pdb-env.cjs'),
  );
  assert.is(run.code, 0, run.stderr);
  assert.ok(run.required.some((f) => f === join(pkg, 'dist', 'cli', CHECKPOINT)));
});

test.run();
