// pdb-env hook claude-code without Claude Code: the input it reads (each field name versions
// send, malformed input, unknown events), the name it makes, the backend it says it chose, only
// the root on stdout, and the remove: checkpointed and pinned, refused while a process works in
// the root, never for a directory that is not a session's root.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseHookInput, requestedName, sanitizeName } from '../../../sessions/hooks/claude-code.js';
import { gitCommitAll } from '../../helpers/cow-harness.js';
import { CLI, REPO_ROOT, cli, cliJson, tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir('pdb-hook-');
test.after(() => t.cleanup());

const store = join(t.dir, 'store');
const env = { PDB_ENV_STORE: store };
const project = join(t.dir, 'proj');
writeTree(project, { 'a.txt': 'a\n', src: { 'b.ts': 'export const b = 1;\n' } });
gitCommitAll(project); // the project around a cwd below it is its git work tree
const hook = (input: unknown, extra: string[] = []) =>
  cli(['hook', 'claude-code', ...extra], { env, input: typeof input === 'string' ? input : JSON.stringify(input) });
const sessions = () => cliJson<{ sessions: Array<{ name: string; backend: string }> }>(['list'], { env, cwd: project }).sessions;

test('malformed input and unknown events: E_HOOK_INPUT on stderr, exit 1, nothing on stdout, nothing created', () => {
  for (const input of ['', 'not json', '[1]', '{}', { hook_event_name: 'PreToolUse' }, { hook_event_name: 'WorktreeCreate' }]) {
    const r = hook(input);
    assert.is(r.code, 1, `${JSON.stringify(input)}: ${r.stderr}`);
    assert.is(r.stdout, '');
    assert.match(r.stderr, /^pdb-env: E_HOOK_INPUT: /, JSON.stringify(input));
  }
  assert.match(
    hook({ hook_event_name: 'PreToolUse' }).stderr,
    /unknown hook event "PreToolUse": pdb-env answers WorktreeCreate, WorktreeRemove, UserPromptSubmit and Stop/,
  );
  assert.match(hook({ hook_event_name: 'WorktreeCreate', cwd: 'relative/dir', name: 'x' }).stderr, /"cwd" is not an absolute path/);
  assert.match(hook({ hook_event_name: 'WorktreeCreate', cwd: project }).stderr, /without a name/);
  assert.match(hook({ hook_event_name: 'WorktreeRemove' }).stderr, /WorktreeRemove without "worktree_path"/);
  assert.throws(() => parseHookInput('{"hook_event_name": 7}'), /no "hook_event_name"/);
  assert.equal(sessions(), [], 'no session was made');
});

test('the name: the first of name, worktree_name, branch_name, the last part of worktree_path, session_id; made safe', () => {
  assert.is(requestedName({ name: 'a', worktree_name: 'b', branch_name: 'c' }), 'a');
  assert.is(requestedName({ worktree_name: 'b', branch_name: 'c' }), 'b');
  assert.is(requestedName({ branch_name: 'c', worktree_path: '/x/y/d' }), 'c');
  assert.is(requestedName({ worktree_path: '/x/.claude/worktrees/d', session_id: 's' }), 'd');
  assert.is(requestedName({ name: '  ', session_id: '5f1e' }), 'claude-5f1e');
  for (const [given, want] of [
    ['feature/login page', 'feature-login-page'],
    ['../../etc', 'etc'],
    ['.hidden', 'hidden'],
    ['ünïcode', 'unicode'],
    ['///', 'claude'],
    ['x'.repeat(80), 'x'.repeat(56)],
  ])
    assert.is(sanitizeName(given), want, given);
});

test('WorktreeCreate: only the root on stdout, the backend said on stderr, a taken name gets -2; pdb-env.json names the backend', () => {
  const input = { hook_event_name: 'WorktreeCreate', cwd: join(project, 'src'), name: 'feature/x', session_id: 'abc' };
  const a = hook(input);
  assert.is(a.code, 0, a.stderr);
  const root = a.stdout.trim();
  assert.is(a.stdout, `${root}\n`, 'one line');
  assert.is(root, join(store, 'sessions', 'feature-x', 'root'));
  assert.is(readFileSync(join(root, 'src', 'b.ts'), 'utf8'), 'export const b = 1;\n', 'the whole project, not the cwd below it');
  assert.match(a.stderr, /backend (btrfs-snapshot|reflink|full-copy), the best available here/);
  const b = hook(input);
  assert.is(b.code, 0, b.stderr);
  assert.is(b.stdout.trim(), join(store, 'sessions', 'feature-x-2', 'root'));
  // pdb-env.json's backend is taken as named, and one that cannot run here is an error, never a fallback.
  writeFileSync(join(project, 'pdb-env.json'), JSON.stringify({ backend: 'full-copy' }));
  const c = hook({ ...input, name: 'named' });
  assert.is(c.code, 0, c.stderr);
  assert.match(c.stderr, /backend full-copy \(from pdb-env.json\)/);
  writeFileSync(join(project, 'pdb-env.json'), JSON.stringify({ backend: 'apfs-clone' }));
  const d = hook({ ...input, name: 'never' });
  assert.is(d.code, 1);
  assert.match(d.stderr, /E_BACKEND_UNAVAILABLE: pdb-env.json names the backend apfs-clone, which is not available here/);
  writeFileSync(join(project, 'pdb-env.json'), JSON.stringify({ backend: 7 }));
  const e = hook({ ...input, name: 'bad-config' });
  assert.is(e.code, 1);
  assert.match(e.stderr, /E_CONFIG_INVALID: pdb-env.json: "backend" must be a backend name/);
  writeFileSync(join(project, 'pdb-env.json'), '{}');
  assert.equal(
    sessions().map((s) => s.name),
    ['feature-x', 'feature-x-2', 'named'],
  );
});

test('WorktreeRemove: refused while a process works in the root; then checkpointed, pinned and discarded; the result comes back', async () => {
  const root = join(store, 'sessions', 'feature-x', 'root');
  writeFileSync(join(root, 'agent.txt'), 'the agent wrote this\n');
  mkdirSync(join(root, 'deep'));
  const sleeper = spawn('sleep', ['60'], { cwd: join(root, 'deep'), stdio: 'ignore' });
  await once(sleeper, 'spawn'); // exec'd, so its cwd is the root's
  try {
    const busy = hook({ hook_event_name: 'WorktreeRemove', worktree_path: root });
    assert.is(busy.code, 1);
    assert.match(busy.stderr, new RegExp(`E_SESSION_BUSY: session "feature-x" has live processes in its root: ${sleeper.pid} \\(sleep\\)`));
    assert.ok(
      sessions().some((s) => s.name === 'feature-x'),
      'still there',
    );
  } finally {
    sleeper.kill();
  }
  await new Promise((r) => sleeper.once('exit', r));
  // Claude Code calls it from inside the worktree: its caller's directory does not count.
  const r = cli(['hook', 'claude-code', '--json'], {
    env,
    cwd: root,
    input: JSON.stringify({ hook_event_name: 'WorktreeRemove', worktree_path: root }),
  });
  assert.is(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { session: string; snapshot: string; changes: number; discarded: boolean };
  assert.equal([out.session, out.changes, out.discarded], ['feature-x', 2, true]);
  assert.not.ok(sessions().some((s) => s.name === 'feature-x'));
  const back = cliJson<{ root: string }>(['create', 'back', '--base', out.snapshot], { env, cwd: project });
  assert.is(readFileSync(join(back.root, 'agent.txt'), 'utf8'), 'the agent wrote this\n');
  // Not a session's root: the project itself, a path that does not exist.
  for (const p of [project, join(t.dir, 'nowhere')]) {
    const n = hook({ hook_event_name: 'WorktreeRemove', worktree_path: p });
    assert.is(n.code, 1);
    assert.match(n.stderr, /E_SESSION_NOT_FOUND/);
  }
});

test('--print-settings: the four hooks, this node and this pdb-env by absolute path, --store made absolute', () => {
  const r = cli(['hook', 'claude-code', '--print-settings', '--store', 'rel-store'], { cwd: t.dir });
  assert.is(r.code, 0, r.stderr);
  const s = JSON.parse(r.stdout) as { hooks: Record<string, Array<{ hooks: Array<{ type: string; command: string }> }>> };
  assert.equal(Object.keys(s.hooks), ['WorktreeCreate', 'WorktreeRemove', 'UserPromptSubmit', 'Stop']);
  const command = s.hooks.WorktreeCreate![0]!.hooks[0]!;
  assert.is(command.type, 'command');
  assert.is(command.command, `${process.execPath} ${CLI} hook claude-code --store ${join(t.dir, 'rel-store')}`);
  assert.equal(s.hooks.WorktreeRemove, s.hooks.WorktreeCreate);
  assert.is(s.hooks.Stop![0]!.hooks[0]!.command, command.command);
  assert.equal(s.hooks.UserPromptSubmit, s.hooks.Stop);
});

test('--print-settings: the pdb-env on PATH by name when it is this install; said on stderr when it is not', () => {
  const binDir = join(t.dir, 'path-bin');
  mkdirSync(binDir, { recursive: true });
  symlinkSync(join(REPO_ROOT, 'bin', 'pdb-env'), join(binDir, 'pdb-env'));
  const PATH = `${binDir}:${process.env.PATH ?? ''}`;
  const r = cli(['hook', 'claude-code', '--print-settings'], { cwd: t.dir, env: { PATH } });
  assert.is(r.code, 0, r.stderr);
  const s = JSON.parse(r.stdout) as { hooks: Record<string, Array<{ hooks: Array<{ command: string }> }>> };
  assert.is(s.hooks.WorktreeCreate![0]!.hooks[0]!.command, 'pdb-env hook claude-code');
  assert.is(r.stderr, '');
  const other = join(t.dir, 'other-bin');
  mkdirSync(other);
  writeFileSync(join(other, 'pdb-env'), '#!/bin/sh\n', { mode: 0o755 });
  const elsewhere = cli(['hook', 'claude-code', '--print-settings'], { cwd: t.dir, env: { PATH: `${other}:${process.env.PATH ?? ''}` } });
  assert.match(JSON.parse(elsewhere.stdout).hooks.Stop[0].hooks[0].command, new RegExp(`^${process.execPath} `));
  assert.match(elsewhere.stderr, /not the pdb-env on PATH, so the settings name node .* by absolute path/);
});

test('UserPromptSubmit and Stop: a checkpoint before and after the turn in the session holding cwd; nothing on stdout; outside a session nothing, exit 0', () => {
  const outside = hook({ hook_event_name: 'UserPromptSubmit', cwd: project, prompt: 'hi', session_id: 'x' });
  assert.is(outside.code, 0, outside.stderr);
  assert.is(outside.stdout, '');
  assert.is(outside.stderr, '');
  const made = cliJson<{ root: string }>(['create', 'turns', '--from', project, '--backend', 'full-copy'], { env });
  mkdirSync(join(made.root, 'deep'), { recursive: true });
  const before = hook({
    hook_event_name: 'UserPromptSubmit',
    cwd: join(made.root, 'deep'),
    prompt: 'add c.txt\nand more',
    session_id: 'x',
  });
  assert.is(before.code, 0, before.stderr);
  assert.is(before.stdout, '', 'UserPromptSubmit: stdout would go into the model context');
  writeFileSync(join(made.root, 'c.txt'), 'c\n');
  const after = hook({ hook_event_name: 'Stop', cwd: made.root, session_id: 'x', stop_hook_active: false });
  assert.is(after.code, 0, after.stderr);
  assert.is(after.stdout, '');
  const log = cliJson<{ checkpoints: Array<{ number: number; label: string; added: number }> }>(['log', 'turns'], { env }).checkpoints;
  assert.equal(
    log.map((c) => [c.number, c.label, c.added]),
    [
      [1, 'before turn: add c.txt', 1], // deep/, made before the turn
      [2, 'after turn: add c.txt', 1],
    ],
  );
  // A failure (here: a damaged record) is said on stderr, exit 1 (Claude Code goes on), never exit 2.
  const rec = join(store, 'sessions', 'turns', 'session.json');
  const good = readFileSync(rec, 'utf8');
  writeFileSync(rec, '{');
  const failed = hook({ hook_event_name: 'UserPromptSubmit', cwd: made.root, prompt: 'p', session_id: 'x' });
  writeFileSync(rec, good);
  assert.is(failed.code, 1);
  assert.is(failed.stdout, '');
  assert.match(failed.stderr, /no checkpoint for this turn: .*damaged/);
  cli(['discard', 'turns'], { env });
});

test("WorktreeRemove without --store acts only on the store of its cwd's project, never on another store's session (issue 41)", () => {
  // Two projects, each with its default store (no PDB_ENV_STORE): under XDG_DATA_HOME.
  const own = { PDB_ENV_STORE: '', XDG_DATA_HOME: join(t.dir, 'xdg') };
  const [a, b] = ['proj-a', 'proj-b'].map((n) => join(t.dir, 'two', n));
  const roots: string[] = [];
  for (const p of [a, b]) {
    writeTree(p, { 'package.json': '{}\n', 'x.txt': 'x\n' });
    const made = cli(['hook', 'claude-code'], {
      env: own,
      input: JSON.stringify({ hook_event_name: 'WorktreeCreate', cwd: p, name: 'w' }),
    });
    assert.is(made.code, 0, made.stderr);
    roots.push(made.stdout.trim());
    writeFileSync(join(made.stdout.trim(), 'work.txt'), 'uncheckpointed\n');
  }
  assert.is.not(roots[0], roots[1]);
  const remove = (cwd: string, path: string) =>
    cli(['hook', 'claude-code', '--json'], {
      env: own,
      cwd: t.dir,
      input: JSON.stringify({ hook_event_name: 'WorktreeRemove', cwd, worktree_path: path }),
    });
  const across = remove(a!, roots[1]!);
  assert.is(across.code, 1, across.stdout + across.stderr);
  assert.is(JSON.parse(across.stdout).error.code, 'E_SESSION_NOT_FOUND');
  assert.match(across.stdout + across.stderr, /is not the root of a session of the store .* \(the store for .*proj-a\)/, across.stderr);
  assert.is(readFileSync(join(roots[1]!, 'work.txt'), 'utf8'), 'uncheckpointed\n', "the other store's session is untouched");
  const ownRemove = remove(a!, roots[0]!);
  assert.is(ownRemove.code, 0, ownRemove.stderr);
  assert.is(JSON.parse(ownRemove.stdout).discarded, true);
  const other = remove(b!, roots[1]!);
  assert.is(other.code, 0, other.stderr);
});

test('WorktreeCreate refuses a source that is no repository or project root it recognises, unless configured (issue 41)', () => {
  const plain = join(t.dir, 'plain', 'images');
  writeTree(plain, { 'disk.img': 'pretend 600 MB\n' });
  const input = { hook_event_name: 'WorktreeCreate', cwd: plain, name: 'plain' };
  const r = hook(input);
  assert.is(r.code, 2, r.stdout + r.stderr); // E_USAGE
  assert.is(r.stdout, '');
  assert.match(r.stderr, /no \.git, package\.json, pdb-env\.json/);
  assert.not.ok(
    sessions().some((s) => s.name === 'plain'),
    'nothing was made',
  );
  const marked = join(t.dir, 'plain', 'node-proj');
  writeTree(marked, { 'package.json': '{}\n' });
  const ok = hook({ hook_event_name: 'WorktreeCreate', cwd: marked, name: 'node-proj' });
  assert.is(ok.code, 0, ok.stderr);
  const forced = cli(['hook', 'claude-code'], { env: { ...env, PDB_ENV_HOOK_ANY_SOURCE: '1' }, input: JSON.stringify(input) });
  assert.is(forced.code, 0, forced.stderr);
});

test.run();
