// The real Claude Code's turns, checkpointed by `pdb-env hook claude-code` (UserPromptSubmit and
// Stop in the project's .claude/settings.json), driven by pdb-env's scripted model: one turn writes
// a file through the Write tool, another through a Bash step, and deletes a file. `log` shows a
// checkpoint before and after the turn holding all three changes (the Bash ones too, which Claude
// Code's own checkpoints miss); `restore --to` the one before brings the tree back exactly (a
// --verify checkpoint says so), and `restore --to` its safety checkpoint brings the turn's work back.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadCassette } from '../../../agents/cassette/cassette.js';
import { startModelServer } from '../../../agents/model-server/server.js';
import { findInstalled } from '../../../agents/real/install.js';
import { agentLaunch, CREDENTIAL_VARS } from '../../../agents/real/launch.js';
import { cliJson, cli, skipTest, tempDir, writeTree, runCaptured } from '../../helpers/index.js';

/** The real Claude Code in `root`, one prompt, against the scripted model playing `cassetteFile`. */
async function runClaude(dir: string, root: string, program: string, cassetteFile: string) {
  const server = await startModelServer({ cassette: await loadCassette(cassetteFile), port: 0, root });
  const home = join(dir, 'home');
  const launch = agentLaunch({ agent: 'claude', program, url: server.url, prompt: 'Do the turn.', home, asRoot: process.getuid?.() === 0 });
  for (const d of Object.values(launch.env).filter((v) => v.startsWith(home))) mkdirSync(d, { recursive: true });
  const runEnv: NodeJS.ProcessEnv = { ...process.env, ...launch.env };
  for (const k of CREDENTIAL_VARS) if (!(k in launch.env)) delete runEnv[k];
  try {
    return await runCaptured(launch.command, launch.args, { cwd: root, env: runEnv });
  } finally {
    await server.close();
  }
}

const TITLE = "the real Claude Code's turn is checkpointed before and after; restore goes back and forth exactly";
const claude = findInstalled('claude');
if (!claude) skipTest(TITLE, 'real-agents', 'claude is not installed (pdb-env agent install)');
else {
  const t = tempDir('pdb-claude-turns-');
  test.after(() => t.cleanup());

  test(TITLE, async () => {
    const store = join(t.dir, 'store');
    const env = { PDB_ENV_STORE: store };
    const project = join(t.dir, 'project');
    writeTree(project, { 'README.md': '# project\n', 'old.txt': 'delete me\n', src: { 'app.ts': 'export const app = 1;\n' } });
    mkdirSync(join(project, '.claude'));
    const settings = cli(['hook', 'claude-code', '--print-settings', '--store', store]);
    assert.is(settings.code, 0, settings.stderr);
    writeFileSync(join(project, '.claude', 'settings.json'), settings.stdout);
    const root = cliJson<{ root: string }>(['create', 'turns', '--from', project, '--backend', 'full-copy'], { env }).root;
    const cassetteFile = join(t.dir, 'cassette.json');
    writeFileSync(
      cassetteFile,
      JSON.stringify({
        kind: 'pdb-env-cassette',
        version: 1,
        description: 'one turn: Write, a Bash step, a delete',
        steps: [
          { action: 'write', path: 'written.txt', content: 'by the Write tool\n' },
          { action: 'shell', command: "printf 'by a Bash step\\n' > src/bash.txt" },
          { action: 'delete', path: 'old.txt' },
        ],
        final: 'done',
      }),
    );
    const run = await runClaude(t.dir, root, claude.program, cassetteFile);
    assert.is(run.code, 0, `${run.stderr}\n${run.stdout.slice(-2000)}`);
    assert.is(readFileSync(join(root, 'written.txt'), 'utf8'), 'by the Write tool\n');
    assert.is(readFileSync(join(root, 'src', 'bash.txt'), 'utf8'), 'by a Bash step\n');
    assert.not.ok(existsSync(join(root, 'old.txt')));
    type Cp = { number: number; label: string; snapshot: string; added: number; modified: number; deleted: number };
    const log = cliJson<{ checkpoints: Cp[] }>(['log', 'turns'], { env }).checkpoints;
    assert.equal(
      log.map((c) => c.label),
      ['before turn: Do the turn.', 'after turn: Do the turn.'],
      JSON.stringify(log),
    );
    const diff = cliJson<{ changes: Array<{ kind: string; path: string }> }>(['diff', 'turns', '--from', '1', '--to', '2'], { env });
    assert.equal(
      diff.changes.map((c) => `${c.kind} ${c.path}`),
      ['delete old.txt', 'add src/bash.txt', 'add written.txt'],
    );
    assert.equal([log[1]!.added, log[1]!.modified, log[1]!.deleted], [2, 0, 1]);
    // Back to before the turn: exactly checkpoint 1, as a --verify checkpoint sees it.
    const back = cliJson<{ safety: { number: number } }>(['restore', 'turns', '--to', '1'], { env });
    assert.is(cliJson<{ snapshot: string }>(['checkpoint', 'turns', '--verify'], { env }).snapshot, log[0]!.snapshot);
    assert.ok(existsSync(join(root, 'old.txt')));
    assert.not.ok(existsSync(join(root, 'written.txt')));
    // And forward again: the safety checkpoint holds the turn's work.
    cliJson(['restore', 'turns', '--to', String(back.safety.number)], { env });
    assert.is(cliJson<{ snapshot: string }>(['checkpoint', 'turns', '--verify'], { env }).snapshot, log[1]!.snapshot);
    assert.is(readFileSync(join(root, 'src', 'bash.txt'), 'utf8'), 'by a Bash step\n');
  });
}

// Always: a file whose test was skipped still reports (the runner counts it skipped, not crashed).
test.run();
