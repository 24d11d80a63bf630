// The real Codex CLI (0.171.0) configured for checkpoints ONLY by what `pdb-env hook codex
// --print-settings` prints (its notify line in the private CODEX_HOME/config.toml), driven by
// pdb-env's scripted model: one turn writes a file through apply_patch, one through a shell
// command, and deletes a file. Codex's notify fires only after a turn, so the "before" of the
// turn is the checkpoint before it in the log (here the session's first, taken at create time by
// an explicit checkpoint); `restore --to` it undoes all three, byte for byte.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadCassette } from '../../../agents/cassette/cassette.js';
import { startModelServer } from '../../../agents/model-server/server.js';
import { findInstalled } from '../../../agents/real/install.js';
import { agentLaunch, CREDENTIAL_VARS } from '../../../agents/real/launch.js';
import { cliJson, cli, skipTest, tempDir, writeTree, runCaptured } from '../../helpers/index.js';

const TITLE = "the real Codex's turn is checkpointed by the printed notify setting alone; restore --to the one before undoes it";
const codex = findInstalled('codex');
if (!codex) skipTest(TITLE, 'real-agents', 'codex is not installed (pdb-env agent install)');
else {
  const t = tempDir('pdb-codex-notify-');
  test.after(() => t.cleanup());

  test(TITLE, async () => {
    const store = join(t.dir, 'store');
    const env = { PDB_ENV_STORE: store };
    const project = join(t.dir, 'project');
    writeTree(project, { 'README.md': '# project\n', 'old.txt': 'delete me\n', src: { 'app.ts': 'export const app = 1;\n' } });
    const root = cliJson<{ root: string }>(['create', 'cdx', '--from', project, '--backend', 'full-copy'], { env }).root;
    cliJson(['checkpoint', 'cdx', '--label', 'start'], { env });
    const cassetteFile = join(t.dir, 'cassette.json');
    writeFileSync(
      cassetteFile,
      JSON.stringify({
        kind: 'pdb-env-cassette',
        version: 1,
        description: 'one turn: apply_patch, a shell step, a delete',
        steps: [
          { action: 'write', path: 'written.txt', content: 'by apply_patch\n' },
          { action: 'shell', command: "printf 'by a shell step\\n' > src/shell.txt" },
          { action: 'delete', path: 'old.txt' },
        ],
        final: 'done',
      }),
    );
    const server = await startModelServer({ cassette: await loadCassette(cassetteFile), port: 0, root });
    const home = join(t.dir, 'home');
    const launch = agentLaunch({
      agent: 'codex',
      program: codex.program,
      url: server.url,
      prompt: 'Do the turn.',
      home,
      asRoot: process.getuid?.() === 0,
    });
    for (const d of Object.values(launch.env).filter((v) => v.startsWith(home))) mkdirSync(d, { recursive: true });
    const settings = cli(['hook', 'codex', '--print-settings', '--store', store]);
    assert.is(settings.code, 0, settings.stderr);
    writeFileSync(join(launch.env.CODEX_HOME!, 'config.toml'), settings.stdout);
    const runEnv: NodeJS.ProcessEnv = { ...process.env, ...launch.env };
    for (const k of CREDENTIAL_VARS) if (!(k in launch.env)) delete runEnv[k];
    let run;
    try {
      // Codex's own sandbox cannot start in this test's process tree (apply_patch fails to write; pdb-env agent
      // run confines it instead): full access, as the subject here is the hook, not the sandbox.
      const args = launch.args.map((a) => (a === 'workspace-write' ? 'danger-full-access' : a));
      run = await runCaptured(launch.command, args, { cwd: root, env: runEnv });
    } finally {
      await server.close();
    }
    assert.is(run.code, 0, `${run.stderr}\n${run.stdout.slice(-2000)}`);
    assert.ok(existsSync(join(root, 'written.txt')), run.stdout.slice(-3000));
    assert.is(readFileSync(join(root, 'written.txt'), 'utf8'), 'by apply_patch\n');
    assert.is(readFileSync(join(root, 'src', 'shell.txt'), 'utf8'), 'by a shell step\n');
    assert.not.ok(existsSync(join(root, 'old.txt')));
    // notify runs after codex exec returns? Give it a moment to land.
    type Cp = { number: number; label: string; snapshot: string };
    let log: Cp[] = [];
    for (let i = 0; i < 50; i++) {
      log = cliJson<{ checkpoints: Cp[] }>(['log', 'cdx'], { env }).checkpoints;
      if (log.length >= 2) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.is(log.length, 2, JSON.stringify(log));
    assert.is(log[0]!.label, 'start');
    assert.match(log[1]!.label, /^codex after turn .*: Do the turn\.$/);
    const diff = cliJson<{ changes: Array<{ kind: string; path: string }> }>(['diff', 'cdx', '--from', '1', '--to', '2'], { env });
    assert.equal(diff.changes.map((c) => `${c.kind} ${c.path}`).sort(), ['add src/shell.txt', 'add written.txt', 'delete old.txt']);
    cliJson(['restore', 'cdx', '--to', '1'], { env });
    assert.is(readFileSync(join(root, 'old.txt'), 'utf8'), 'delete me\n');
    assert.not.ok(existsSync(join(root, 'written.txt')));
    assert.not.ok(existsSync(join(root, 'src', 'shell.txt')));
    assert.is(cliJson<{ snapshot: string }>(['checkpoint', 'cdx', '--verify'], { env }).snapshot, log[0]!.snapshot);
  });
}

// Always: a file whose test was skipped still reports (the runner counts it skipped, not crashed).
test.run();
