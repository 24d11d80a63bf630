// The command line's parsing, as users meet it: global options anywhere, suggestions for typos,
// usage errors in pdb-env's format (never Node's parser text), and commands that load lazily.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CLI, REPO_ROOT, cli, cliJson, tempDir, writeTree } from '../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());
const store = join(t.dir, 'store');
const src = join(t.dir, 'src');
writeTree(src, { 'a.txt': 'A\n' });

test('global options go before or after the command, and after its own options', () => {
  cliJson(['create', 'g1', '--from', src, '--store', store]);
  const forms = [
    ['--store', store, 'list', '--json'],
    ['list', '--store', store, '--json'],
    ['--json', 'list', '--store', store],
    ['--store', store, '--json'],
    [`--store=${store}`, '--json'],
  ];
  for (const args of forms) {
    const r = cli(args);
    assert.is(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(
      JSON.parse(r.stdout).sessions.map((s: { name: string }) => s.name),
      ['g1'],
      args.join(' '),
    );
  }
  // --json after a command's own option still reaches the command.
  const created = cli(['create', 'g2', '--from', src, '--store', store, '--json']);
  assert.is(created.code, 0, created.stderr);
  assert.is(JSON.parse(created.stdout).session, 'g2');
});

test('unknown commands and options are usage errors with a suggestion', () => {
  const cmd = cli(['lst', '--store', store]);
  assert.is(cmd.code, 2);
  assert.match(cmd.stderr, /^pdb-env: E_USAGE: unknown command 'lst'\n/);
  assert.match(cmd.stderr, /Did you mean list\?/);
  const opt = cli(['create', 'x', '--frm', src, '--store', store]);
  assert.is(opt.code, 2);
  assert.match(opt.stderr, /^pdb-env: E_USAGE: create: unknown option '--frm'\n/);
  assert.match(opt.stderr, /Did you mean --from\?/);
  const json = cli(['create', 'x', '--frm', src, '--json']);
  assert.is(json.code, 2);
  const err = JSON.parse(json.stdout).error;
  assert.is(err.code, 'E_USAGE');
  assert.match(err.hint, /--from/);
  for (const r of [cmd, opt, json]) assert.not.match(r.stdout + r.stderr, /ERR_PARSE_ARGS|TypeError|error: /);
});

test('a missing argument or option value is a usage error naming the command', () => {
  const r = cli(['diff', '--store', store]);
  assert.is(r.code, 2);
  assert.match(r.stderr, /E_USAGE: diff: missing required argument 'name'/);
  assert.match(r.stderr, /pdb-env diff --help/);
  const v = cli(['bench', '--plan']);
  assert.is(v.code, 2);
  assert.match(v.stderr, /E_USAGE: bench: option '--plan <file>' argument missing/);
  assert.is(cli(['path', 'a', 'b', '--store', store]).code, 2);
});

test('--version and help COMMAND', () => {
  const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  assert.is(cli(['--version']).stdout.trim(), version);
  assert.is(cli(['-v']).stdout.trim(), version);
  const help = cli(['help', 'create']);
  assert.is(help.code, 0);
  assert.match(help.stdout, /pdb-env create/);
  assert.match(help.stdout, /--backend/);
});

let logs = 0;

/** The files of this package that running `args` loads (dist-relative), and the dependencies. */
function loaded(args: string[], env: Record<string, string> = {}): { own: string[]; deps: string[] } {
  const log = join(t.dir, `modules-${args.join('-')}-${Object.keys(env).join('-')}-${logs++}.log`);
  const r = spawnSync(
    process.execPath,
    ['--import', pathToFileURL(join(REPO_ROOT, 'test', 'fixtures', 'module-log.mjs')).href, CLI, ...args],
    {
      env: { ...process.env, MODULE_LOG: log, PDB_ENV_STORE: store, ...env },
      encoding: 'utf8',
    },
  );
  assert.is(r.status, 0, r.stderr);
  const urls = [
    ...new Set(
      readFileSync(log, 'utf8')
        .split('\n')
        .filter((u) => u.startsWith('file:')),
    ),
  ];
  const dist = pathToFileURL(join(REPO_ROOT, 'dist')).href + '/';
  return {
    own: urls.filter((u) => u.startsWith(dist)).map((u) => u.slice(dist.length)),
    deps: urls.filter((u) => u.includes('/node_modules/')),
  };
}

test('list and --help load no harness, workload, report, agent or ACP SDK module', () => {
  // The modules themselves (the cli bundle keeps their lazy imports: below).
  const modules = { PDB_ENV_NO_BUNDLE: '1' };
  for (const args of [['list'], ['--help']]) {
    const { own, deps } = loaded(args, modules);
    assert.ok(own.includes('cli/program.js'), own.join(', '));
    const heavy = own.filter((f) => /^(harness|workloads|reports|agents)\//.test(f));
    assert.equal(heavy, [], `${args.join(' ')} loaded ${heavy.join(', ')}`);
    assert.equal(
      deps.filter((u) => /@agentclientprotocol|\/ajv\/|simple-statistics/.test(u)),
      [],
      args.join(' '),
    );
  }
  assert.not.ok(
    loaded(['--help'], modules).own.some((f) => f.startsWith('sessions/')),
    '--help loads no session code',
  );
  // list loads what it uses: no process runner, no backends, no scanner, no create or gc.
  const list = loaded(['list'], modules);
  assert.equal(
    list.deps.filter((u) => /\/(execa|zx)\//.test(u)),
    [],
    'list starts no process',
  );
  const unused = list.own.filter((f) =>
    /^(backends\/registry|model\/scan\/scan|sessions\/(lifecycle\/(create|checkpoint|import|run)|health\/(gc|sweep)))\.js$/.test(f),
  );
  assert.equal(unused, [], `list loaded ${unused.join(', ')}`);
  assert.ok(list.own.length + list.deps.length < 60, `list loaded ${list.own.length + list.deps.length} modules`);
  // The negative control: bench does load the harness.
  const bench = loaded(['bench', '--help'], modules).own;
  assert.ok(bench.includes('harness/bench.js'), bench.join(', '));
  // The cli bundle: list and --help load nothing of pdb-env but the executable, the table, the
  // bundle's loader and the bundle, and no heavy dependency; bench loads the harness from its modules.
  const entry = ['cli/pdb-env.cjs', 'cli/command-table.cjs', 'cli/bundle.cjs', 'model/os/native-addon-file.cjs', 'cli/cli-bundle.cjs'];
  for (const args of [['list'], ['--help']]) {
    const { own, deps } = loaded(args);
    assert.ok(own.includes('cli/cli-bundle.cjs'), `${args.join(' ')}: ${own.join(', ')}`);
    assert.equal(
      own.filter((f) => !entry.includes(f)),
      [],
      `${args.join(' ')} loaded modules the bundle holds, or heavy ones`,
    );
    assert.equal(
      deps.filter((u) => /@agentclientprotocol|\/ajv\/|simple-statistics|\/(execa|zx)\//.test(u)),
      [],
      args.join(' '),
    );
  }
  const bundledBench = loaded(['bench', '--help']).own;
  assert.ok(bundledBench.includes('harness/bench.js'), bundledBench.join(', '));
});

test("a reader that goes away (| head) ends the output quietly: no stack, the command's own status", () => {
  // The shell closes the pipe before pdb-env writes: `pdb-env backends --json | true`.
  const r = spawnSync('bash', ['-c', `set -o pipefail; "${process.execPath}" "${CLI}" backends --json | true; echo "status $?"`], {
    env: { ...process.env, PDB_ENV_STORE: store },
    encoding: 'utf8',
  });
  assert.not.match(r.stderr, /EPIPE|Unhandled/, r.stderr);
  assert.match(r.stdout, /^status 0\n$/);
});

test('importing cli/main.js runs nothing', () => {
  const main = pathToFileURL(join(REPO_ROOT, 'dist', 'cli', 'main.js')).href;
  const r = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', `const m = await import(${JSON.stringify(main)}); console.log(typeof m.main);`],
    {
      env: { ...process.env, PDB_ENV_STORE: store },
      encoding: 'utf8',
    },
  );
  assert.is(r.status, 0, r.stderr);
  assert.is(r.stdout, 'function\n');
});

test.run();
