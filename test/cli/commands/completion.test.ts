// Shell completion as a shell runs it: bash with the printed script sourced and COMP_WORDS set
// completes commands, options, option values and session names (looked up at completion time,
// from the store on the line or the environment); zsh (on a pseudo-terminal, through compinit)
// and fish complete the same where they are installed.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { REPO_ROOT, cli, cliJson, hasCommand, skipTest, tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir('pdb-completion-');
test.after(() => t.cleanup());
const store = join(t.dir, 'store');
const other = join(t.dir, 'other-store');
const env = { PDB_ENV_STORE: store };
const src = join(t.dir, 'src');
writeTree(src, { 'a.txt': 'a\n' });
cliJson(['create', 'alpha', '--from', src], { env });
cliJson(['create', 'beta', '--from', src], { env });
cliJson(['create', 'gamma', '--from', src, '--store', other]);

function script(shell: string): string {
  const r = cli(['completion', shell]);
  assert.is(r.code, 0, r.stderr);
  const file = join(t.dir, `pdb-env.${shell}`);
  writeFileSync(file, r.stdout);
  return file;
}

const sh = (w: string) => `'${w.replace(/'/g, `'\\''`)}'`;

/** What bash offers for `line` (the last word is being completed; a trailing space starts a new one). */
function bash(file: string, line: string): string[] {
  const words = line.split(' ');
  const body = `source ${sh(file)}; COMP_WORDS=(${words.map(sh).join(' ')}); COMP_CWORD=${words.length - 1}; _pdb_env; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = spawnSync('bash', ['--norc', '-c', body], { env: { ...process.env, ...env }, encoding: 'utf8', cwd: t.dir });
  assert.is(r.status, 0, r.stderr);
  return r.stdout.split('\n').filter(Boolean).sort();
}

test('bash: commands, options, option values, session names', () => {
  const file = script('bash');
  assert.equal(bash(file, 'pdb-env cr'), ['create']);
  const all = bash(file, 'pdb-env ');
  for (const c of ['create', 'du', 'completion', 'list', 'bench', 'help']) assert.ok(all.includes(c), c);
  assert.not.ok(all.includes('__complete'), 'the helper is hidden');
  assert.equal(bash(file, 'pdb-env create --ba'), ['--backend', '--backend-module', '--base']);
  assert.equal(bash(file, 'pdb-env list --'), ['--du', '--help', '--json', '--store']);
  assert.equal(bash(file, 'pdb-env create x --backend re'), ['reflink']);
  assert.equal(bash(file, 'pdb-env path '), ['alpha', 'beta']);
  assert.equal(bash(file, 'pdb-env discard b'), ['beta']);
  assert.equal(bash(file, 'pdb-env create x --fork a'), ['alpha']);
  assert.equal(bash(file, 'pdb-env checkpoint --verify '), ['alpha', 'beta'], 'an option without a value is not an operand');
  assert.equal(bash(file, 'pdb-env completion z'), ['zsh']);
  assert.equal(bash(file, 'pdb-env help check'), ['check-path', 'checkpoint']);
  // The store named on the line, before or after the command, is the one asked.
  assert.equal(bash(file, `pdb-env --store ${other} path `), ['gamma']);
  assert.equal(bash(file, `pdb-env du --store ${other} `), ['gamma']);
  // After the session name, nothing more is a session; after run's --, a command.
  assert.equal(bash(file, 'pdb-env path alpha '), []);
  assert.ok(bash(file, 'pdb-env run alpha -- ech').includes('echo'));
});

test('__complete prints the names one a line and nothing (exit 0) where there is no store', () => {
  assert.equal(cli(['__complete', 'sessions'], { env }).stdout, 'alpha\nbeta\n');
  assert.equal(cli(['__complete', 'envs'], { env }).stdout, 'main\n');
  const none = cli(['__complete', 'sessions', '--store', join(t.dir, 'nowhere')]);
  assert.is(none.code, 0, none.stderr);
  assert.is(none.stdout, '');
  assert.not.match(cli(['--help']).stdout, /__complete/);
  assert.match(cli(['--help']).stdout, /completion/);
  const bad = cli(['completion', 'tcsh']);
  assert.is(bad.code, 2);
  assert.match(bad.stderr, /E_USAGE: completion: unknown shell 'tcsh'/);
});

test('zsh: the script parses, and compinit completes commands, options and session names', () => {
  if (!hasCommand('zsh')) return skipTest('zsh completion', 'zsh', 'zsh is not installed (the bash test covers the logic)');
  const file = script('zsh');
  const parse = spawnSync('zsh', ['-n', file], { encoding: 'utf8' });
  assert.is(parse.status, 0, parse.stderr);
  const capture = join(REPO_ROOT, 'test', 'fixtures', 'completion', 'zsh-capture.zsh');
  const zsh = (line: string) => {
    const r = spawnSync('zsh', ['-f', capture, file, line], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
    assert.is(r.status, 0, r.stderr);
    return r.stdout.split('\n').filter(Boolean);
  };
  assert.equal(zsh('pdb-env cr'), ['create']);
  assert.equal(zsh('pdb-env create --fr'), ['--from']);
  assert.equal(zsh('pdb-env discard '), ['alpha', 'beta']);
  assert.equal(zsh(`pdb-env --store ${other} path `), ['gamma']);
});

test('fish: the script parses, and complete -C offers commands, options and session names', () => {
  if (!hasCommand('fish')) return skipTest('fish completion', 'fish', 'fish is not installed (the bash test covers the logic)');
  const file = script('fish');
  const fish = (line: string) => {
    const r = spawnSync('fish', ['--no-config', '-c', `source ${sh(file)}; complete -C ${sh(line)}`], {
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });
    assert.is(r.status, 0, r.stderr);
    return r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('\t')[0]!)
      .sort();
  };
  assert.ok(fish('pdb-env cr').includes('create'));
  assert.equal(fish('pdb-env create --fr'), ['--from']);
  assert.equal(fish('pdb-env path '), ['alpha', 'beta']);
  assert.equal(fish(`pdb-env --store ${other} discard `), ['gamma']);
});

test.run();
