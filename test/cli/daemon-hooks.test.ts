// Agents' turn hooks through the pdb-env daemon (issue 53 item 1): `pdb-env hook AGENT` through
// bin/pdb-env goes to the native client, which reads the hook's stdin and hands it to the daemon
// with the command line; the daemon runs the turn (sessions/hooks/turn-hook.ts) and answers with
// what node would have printed and its exit status. Each case is run twice, on twin sessions:
// through the daemon and with PDB_ENV_DAEMON=0, and the two must print the same, exit the same and
// log the same label; so must `run --checkpoint`, whose checkpoint after the command goes through
// the client too (cli/daemon/client-call.ts). A hook that is not a plain turn (Claude Code's WorktreeCreate, --print-settings)
// is declined, and node then gets the very stdin the client read.
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { packageFile } from '../../model/paths.js';
import { cli, cliJson, processAlive, REPO_ROOT, skipTest, tempDir, writeTree } from '../helpers/index.js';

const t = tempDir('pdb-daemon-hooks-');
const BIN = packageFile('bin', 'pdb-env');
const CLIENT = join(REPO_ROOT, 'native', 'build', 'Release', 'pdb-env-client');
const store = join(t.dir, 'store');
const dir = join(t.dir, 'daemon');
const viaDaemon = { PDB_ENV_DAEMON: 'manual', PDB_ENV_DAEMON_DIR: dir, PDB_ENV_STORE: store };
const inNode = { PDB_ENV_DAEMON: '0', PDB_ENV_DAEMON_DIR: dir, PDB_ENV_STORE: store };
let daemonPid = 0;

test.after(() => {
  if (daemonPid && processAlive(daemonPid)) cli(['daemon', 'stop'], { env: { PDB_ENV_DAEMON_DIR: dir } });
  t.cleanup();
});

function bin(args: string[], env: Record<string, string>, input: string) {
  const r = spawnSync(BIN, args, { encoding: 'utf8', input, env: { ...process.env, NO_COLOR: '1', ...env } });
  return { code: r.status ?? 128, stdout: r.stdout, stderr: r.stderr };
}
const counts = () => {
  const r = cliJson<{ record: { served: number; declined: number } | null }>(['daemon', 'status'], {
    env: { PDB_ENV_DAEMON_DIR: dir },
  }).record!;
  return { served: r.served, declined: r.declined };
};
const labels = (name: string) =>
  cliJson<{ checkpoints: Array<{ label: string }> }>(['log', name], { env: { PDB_ENV_STORE: store } }).checkpoints.map((c) => c.label);

/** A session per path (through the daemon, in node) of a one-file project; their roots. */
function twins(name: string): { daemon: string; node: string } {
  writeTree(join(t.dir, `src-${name}`), { 'a.txt': 'a\n' });
  const make = (n: string) =>
    cliJson<{ root: string }>(['create', n, '--from', join(t.dir, `src-${name}`), '--backend', 'full-copy', '--store', store]).root;
  return { daemon: make(`${name}-d`), node: make(`${name}-n`) };
}

type Case = { agent: string; events: Array<(root: string) => unknown>; argv?: boolean };
const CASES: Case[] = [
  {
    agent: 'gemini',
    events: [
      (root) => ({ session_id: 's1', cwd: root, hook_event_name: 'BeforeAgent', prompt: 'Write a.txt' }),
      (root) => ({ session_id: 's1', cwd: root, hook_event_name: 'AfterAgent', prompt: 'Write a.txt', prompt_response: 'ok' }),
    ],
  },
  {
    agent: 'cursor',
    events: [
      (root) => ({
        conversation_id: 'c1',
        generation_id: 'g1',
        workspace_roots: [root],
        hook_event_name: 'beforeSubmitPrompt',
        prompt: 'Add',
      }),
      (root) => ({ conversation_id: 'c1', generation_id: 'g1', workspace_roots: [root], hook_event_name: 'stop', status: 'completed' }),
    ],
  },
  {
    agent: 'codex',
    argv: true,
    events: [
      (root) => ({
        type: 'agent-turn-complete',
        'turn-id': 't1',
        cwd: root,
        'input-messages': ['Fix it'],
        'last-assistant-message': 'done',
      }),
    ],
  },
  {
    agent: 'claude-code',
    events: [
      (root) => ({ hook_event_name: 'UserPromptSubmit', session_id: 'x', cwd: root, prompt: 'Make b.txt' }),
      (root) => ({ hook_event_name: 'Stop', session_id: 'x', cwd: root }),
    ],
  },
];

test('turn hooks of Claude Code, Codex, Cursor and Gemini CLI through the daemon print, exit and log as node does', () => {
  if (!existsSync(CLIENT)) return skipTest('turn hooks through the daemon', 'native-scan', 'native/build has no pdb-env-client');
  const d = cliJson<{ pid: number }>(['daemon', 'start', '--idle-timeout', '120'], { env: { PDB_ENV_DAEMON_DIR: dir } });
  daemonPid = d.pid;
  for (const c of CASES) {
    const roots = twins(c.agent);
    for (const [i, event] of c.events.entries()) {
      const run = (root: string, env: Record<string, string>) => {
        const text = JSON.stringify(event(root));
        return bin(['hook', c.agent, ...(c.argv ? [text] : [])], env, c.argv ? '' : text);
      };
      const before = counts();
      const a = run(roots.daemon, viaDaemon);
      const after = counts();
      assert.equal(
        after,
        { served: before.served + 1, declined: before.declined },
        `${c.agent} event ${i}: the daemon ran it (${a.stderr})`,
      );
      const b = run(roots.node, inNode);
      assert.equal(counts(), after, `${c.agent} event ${i}: PDB_ENV_DAEMON=0 ran it in node`);
      assert.is(a.code, b.code, `${c.agent} event ${i}: exit status`);
      assert.is(a.stdout, b.stdout, `${c.agent} event ${i}: stdout`);
      assert.is(a.stderr.replaceAll(`${c.agent}-d`, 'S'), b.stderr.replaceAll(`${c.agent}-n`, 'S'), `${c.agent} event ${i}: stderr`);
      if (i === 0) (writeFileSync(join(roots.daemon, 'b.txt'), 'b\n'), writeFileSync(join(roots.node, 'b.txt'), 'b\n'));
    }
    const logged = labels(`${c.agent}-d`);
    assert.ok(logged.length >= c.events.length, `${c.agent}: ${JSON.stringify(logged)}`);
    assert.equal(logged, labels(`${c.agent}-n`), `${c.agent}: the same checkpoints, labelled the same`);
  }
});

test('a hook that is not a plain turn is run by node, with the stdin the client read (WorktreeCreate makes the session)', () => {
  if (!existsSync(CLIENT)) return skipTest('hooks the daemon declines', 'native-scan', 'native/build has no pdb-env-client');
  const project = join(t.dir, 'project');
  writeTree(project, { 'README.md': '# p\n', '.git': { HEAD: 'ref: refs/heads/main\n' } });
  const before = counts();
  const r = bin(
    ['hook', 'claude-code'],
    viaDaemon,
    JSON.stringify({ hook_event_name: 'WorktreeCreate', cwd: project, name: 'feature-x', session_id: 'x' }),
  );
  assert.is(r.code, 0, r.stderr);
  assert.equal(counts(), { served: before.served, declined: before.declined + 1 }, 'declined by the daemon');
  const root = r.stdout.trim();
  assert.ok(existsSync(join(root, 'README.md')), `the session's root ${root} holds the project`);
  // Not plain (an option the daemon does not take): node runs it; the client does not read stdin.
  const p = bin(['hook', 'cursor', '--print-settings'], viaDaemon, '');
  assert.is(p.code, 0, p.stderr);
  assert.ok(p.stdout.includes('beforeSubmitPrompt'), p.stdout);
  assert.equal(counts(), { served: before.served, declined: before.declined + 1 }, '--print-settings never reached the daemon');
  // Bad input: node says what is wrong with it, as it would alone.
  const bad = bin(['hook', 'claude-code'], viaDaemon, 'not json');
  assert.is(bad.code, 1);
  assert.match(bad.stderr, /E_HOOK_INPUT/);
});

test('run --checkpoint checkpoints through the daemon: the same output, exit status and log as in node, a failed checkpoint too', () => {
  if (!existsSync(CLIENT)) return skipTest('run --checkpoint through the daemon', 'native-scan', 'native/build has no pdb-env-client');
  const roots = twins('run');
  const cases: Array<{ script: string; code: number; stderr: RegExp }> = [
    { script: 'echo made > b.txt; echo out; exit 3', code: 3, stderr: /^pdb-env: checkpoint 1 of S \(sha256:/ },
    { script: 'rm b.txt; mkdir -p d/e; echo x > d/e/f.txt', code: 0, stderr: /^pdb-env: checkpoint 2 of S \(sha256:/ },
    // A fifo the checkpoint refuses (E_UNSUPPORTED_ENTRY): the command succeeded, so the run exits 1.
    { script: 'mkfifo d/p', code: 1, stderr: /^pdb-env: the checkpoint after the command failed: .*d\/p/ },
  ];
  for (const [i, c] of cases.entries()) {
    const run = (name: string, env: Record<string, string>) => bin(['run', name, '--checkpoint', '--', 'sh', '-c', c.script], env, '');
    const before = counts();
    const a = run('run-d', viaDaemon);
    assert.equal(
      counts(),
      { served: before.served + 1, declined: before.declined },
      `case ${i}: the daemon ran the checkpoint (${a.stderr})`,
    );
    const b = run('run-n', inNode);
    assert.equal(counts(), { served: before.served + 1, declined: before.declined }, `case ${i}: PDB_ENV_DAEMON=0 ran it in node`);
    assert.is(a.code, c.code, `case ${i}: ${a.stderr}`);
    assert.is(b.code, c.code, `case ${i}: ${b.stderr}`);
    assert.is(a.stdout, b.stdout, `case ${i}: stdout`);
    const said = a.stderr.replaceAll('run-d', 'S');
    assert.match(said, c.stderr);
    assert.is(
      said.replace(/sha256:[0-9a-f]+/g, 'D'),
      b.stderr.replaceAll('run-n', 'S').replace(/sha256:[0-9a-f]+/g, 'D'),
      `case ${i}: stderr`,
    );
  }
  assert.equal(labels('run-d'), ["sh -c 'echo made > b.txt; echo out; exit 3'", "sh -c 'rm b.txt; mkdir -p d/e; echo x > d/e/f.txt'"]);
  assert.equal(labels('run-d'), labels('run-n'));
  assert.ok(existsSync(join(roots.daemon, 'd', 'e', 'f.txt')));
});

test.run();
