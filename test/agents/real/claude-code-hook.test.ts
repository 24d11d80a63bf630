// The real Claude Code's --worktree, with `pdb-env hook claude-code --print-settings` in the
// project's .claude/settings.json, runs in a pdb-env session: driven by pdb-env's scripted model
// (one cassette step: write a file), the agent's file lands in the session's root, not in the
// repository nor in .claude/worktrees/. Then the WorktreeRemove Claude Code would send keeps the
// result (checkpointed, pinned) and discards the session. The network is not enforced here: Claude
// Code is pointed at the scripted server only (agents/real/launch.ts) with nonessential traffic off.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadCassette } from '../../../agents/cassette/cassette.js';
import { startModelServer } from '../../../agents/model-server/server.js';
import { findInstalled } from '../../../agents/real/install.js';
import { agentLaunch, CREDENTIAL_VARS } from '../../../agents/real/launch.js';
import { gitCommitAll } from '../../helpers/cow-harness.js';
import { cli, cliJson, hasCommand, skipTest, tempDir, writeTree, runCaptured } from '../../helpers/index.js';

const NAME = 'hook-feature';
const claude = findInstalled('claude');
if (!claude)
  skipTest('the real Claude Code --worktree runs in a pdb-env session', 'real-agents', 'claude is not installed (pdb-env agent install)');
else if (!hasCommand('git')) skipTest('the real Claude Code --worktree runs in a pdb-env session', 'git', 'git is not installed');
else {
  const t = tempDir('pdb-claude-hook-');
  test.after(() => t.cleanup());

  test('claude -p --worktree NAME runs in the pdb-env session NAME; the remove keeps its result', async () => {
    const store = join(t.dir, 'store');
    const repo = join(t.dir, 'repo');
    writeTree(repo, { 'README.md': '# project\n', src: { 'app.ts': 'export const app = 1;\n' } });
    mkdirSync(join(repo, '.claude'));
    const settings = cli(['hook', 'claude-code', '--print-settings', '--store', store]);
    assert.is(settings.code, 0, settings.stderr);
    writeFileSync(join(repo, '.claude', 'settings.json'), settings.stdout);
    gitCommitAll(repo);
    const cassetteFile = join(t.dir, 'cassette.json');
    const note = 'written by Claude Code in its worktree\n';
    writeFileSync(
      cassetteFile,
      JSON.stringify({
        kind: 'pdb-env-cassette',
        version: 1,
        description: 'pdb-env hook claude-code: one file written in the worktree',
        steps: [{ action: 'write', path: 'agent-note.txt', content: note }],
        final: 'done',
      }),
    );
    const server = await startModelServer({ cassette: await loadCassette(cassetteFile), port: 0, root: null });
    const home = join(t.dir, 'home'); // outside the repository and the store
    const launch = agentLaunch({
      agent: 'claude',
      program: claude.program,
      url: server.url,
      prompt: 'Write the note.',
      home,
      asRoot: process.getuid?.() === 0,
    });
    for (const dir of Object.values(launch.env).filter((v) => v.startsWith(home))) mkdirSync(dir, { recursive: true });
    const env: NodeJS.ProcessEnv = { ...process.env, ...launch.env };
    for (const k of CREDENTIAL_VARS) if (!(k in launch.env)) delete env[k];
    let run: { code: number | null; stdout: string; stderr: string };
    try {
      run = await runCaptured(launch.command, [...launch.args, '--worktree', NAME], { cwd: repo, env });
    } finally {
      await server.close();
    }
    assert.is(run.code, 0, `${run.stderr}\n${run.stdout.slice(-2000)}`);
    const list = cliJson<{ sessions: Array<{ name: string; backend: string; root: string }> }>(['list', '--store', store]).sessions;
    assert.equal(
      list.map((s) => s.name),
      [NAME],
      'the worktree is the pdb-env session named by --worktree',
    );
    const root = join(store, 'sessions', NAME, 'root');
    assert.is(readFileSync(join(root, 'agent-note.txt'), 'utf8'), note, "the agent's file is in the session's root");
    assert.is(readFileSync(join(root, 'src', 'app.ts'), 'utf8'), 'export const app = 1;\n', 'the session holds the project');
    assert.not.ok(existsSync(join(repo, 'agent-note.txt')), 'not in the repository');
    assert.not.ok(existsSync(join(repo, '.claude', 'worktrees')), 'no git worktree was made');
    // What Claude Code sends when the worktree is removed.
    const rm = cli(['hook', 'claude-code', '--json', '--store', store], {
      input: JSON.stringify({ hook_event_name: 'WorktreeRemove', worktree_path: root, cwd: repo }),
    });
    assert.is(rm.code, 0, rm.stderr);
    const out = JSON.parse(rm.stdout) as { snapshot: string; changes: number; discarded: boolean };
    assert.equal([out.changes, out.discarded], [1, true]);
    const back = cliJson<{ root: string }>(['create', 'back', '--base', out.snapshot, '--store', store]);
    assert.is(readFileSync(join(back.root, 'agent-note.txt'), 'utf8'), note, 'the checkpoint kept the result');
  });
}

// Always: a file whose test was skipped still reports (the runner counts it skipped, not crashed).
test.run();
