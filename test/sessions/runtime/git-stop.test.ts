// git in a session finds no repository above it: with $HOME a git repository (dotfiles) and the
// store under it, `git rev-parse --show-toplevel` fails in the root for processes that pdb-env
// run starts, for a session the Claude Code hook made, and for anything else started in the root
// (git's own discovery stops at the session directory's marker). A git-worktree root keeps its own.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GIT_STOP_MARKER } from '../../../sessions/runtime/git-stop.js';
import { gitCommitAll } from '../../helpers/cow-harness.js';
import { cli, hasCommand, skipTest, tempDir, writeTree } from '../../helpers/index.js';
import { pdb } from '../../helpers/faults/fault-helpers.js';

const t = tempDir('pdb-git-stop-');
test.after(() => t.cleanup());

const home = join(t.dir, 'home');
writeTree(home, { '.bashrc': '# dotfiles\n' });
const store = join(home, '.pdb-env');
const project = join(home, 'proj');
writeTree(project, { 'a.txt': 'a\n' });
const env = { HOME: home, GIT_CONFIG_NOSYSTEM: '1' };

/** git as a process that pdb-env did not start: none of run's variables. */
function toplevel(cwd: string): { code: number; out: string } {
  const e: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete e.GIT_CEILING_DIRECTORIES;
  delete e.GIT_DIR;
  delete e.GIT_WORK_TREE;
  const r = spawnSync('git', ['rev-parse', '--show-toplevel'], { cwd, env: e, encoding: 'utf8' });
  return { code: r.status ?? 128, out: `${r.stdout}${r.stderr}` };
}

if (!hasCommand('git')) skipTest('git discovery stops at the session', 'git', 'git is not installed');
else {
  gitCommitAll(home); // the home repository, holding the project and the store's directory
  assert.is(toplevel(project).out.trim(), home, 'the fixture: the project is inside the home repository');

  test('create, then git in the root from anywhere: not a git repository; run too', () => {
    const made = pdb(store, ['create', 's', '--from', project, '--backend', 'full-copy'], env);
    assert.is(made.code, 0, made.stderr);
    const root = join(store, 'sessions', 's', 'root');
    const plain = toplevel(root);
    assert.is.not(plain.code, 0, `git found ${plain.out.trim()} above the session root`);
    assert.match(plain.out, /not a git repository/);
    const run = pdb(store, ['run', 's', '--', 'git', 'rev-parse', '--show-toplevel'], env);
    assert.is.not(run.code, 0, `pdb-env run: git found ${run.stdout.trim()}`);
    assert.match(run.stderr, /not a git repository/);
    // `git init` in the root still makes the session's own repository, which git then finds.
    const init = spawnSync('git', ['init', '-q', '.'], { cwd: root, env: { ...process.env, ...env } });
    assert.is(init.status, 0, String(init.stderr));
    assert.is(toplevel(root).out.trim(), root);
  });

  test('the marker is a gitdir file naming no repository, above the root, never in it', () => {
    const marker = readFileSync(join(store, 'sessions', 's', '.git'), 'utf8');
    assert.is(marker, GIT_STOP_MARKER);
    assert.is(toplevel(join(store, 'sessions', 's')).code === 0, false);
  });

  test('a session made by the Claude Code hook: git in its root finds no repository', () => {
    const input = { hook_event_name: 'WorktreeCreate', cwd: project, name: 'hooked' };
    const r = cli(['hook', 'claude-code'], { env: { ...env, PDB_ENV_STORE: store }, input: JSON.stringify(input) });
    assert.is(r.code, 0, r.stderr);
    const root = r.stdout.trim();
    const git = toplevel(root);
    assert.is.not(git.code, 0, `git found ${git.out.trim()} above the hook's session root`);
  });

  test('git-worktree: the root is its own work tree, found by git as before', () => {
    const own = join(home, 'own-repo');
    writeTree(own, { 'b.txt': 'b\n' });
    gitCommitAll(own); // a project that is its own repository, inside the home one
    const made = pdb(store, ['create', 'wt', '--from', own, '--backend', 'git-worktree'], env);
    assert.is(made.code, 0, made.stderr);
    const root = join(store, 'sessions', 'wt', 'root');
    assert.is(toplevel(root).out.trim(), root);
  });
}

test.run();
