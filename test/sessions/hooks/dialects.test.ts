// `pdb-env hook codex|cursor|gemini` driven with payloads shaped as each agent's documentation
// gives them (docs/agents.md: Codex 0.171.0 notify, Cursor hooks.json version 1, Gemini CLI
// 0.61.0): a turn's checkpoints labelled with the agent and turn, one log, one restore; bad input
// is said on stderr with exit 0 ("go on"), nothing checkpointed, and a repeated hook is a no-op.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, cliJson, tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir('pdb-hook-dialects-');
test.after(() => t.cleanup());
const store = join(t.dir, 'store');
const env = { PDB_ENV_STORE: store };
const project = join(t.dir, 'project');
writeTree(project, { 'README.md': '# p\n', 'old.txt': 'delete me\n' });

type Cp = { number: number; label: string; snapshot: string };
const labels = (name: string) => cliJson<{ checkpoints: Cp[] }>(['log', name], { env }).checkpoints.map((c) => c.label);
const hook = (agent: string, payload: unknown, argv = false) => {
  const text = typeof payload === 'string' ? payload : JSON.stringify(payload);
  return cli(['hook', agent, ...(argv ? [text] : [])], { env, input: argv ? '' : text });
};

test('cursor: beforeSubmitPrompt and stop checkpoint the turn; restore --to the before undoes it; stdout is JSON', () => {
  const root = cliJson<{ root: string }>(['create', 'cur', '--from', project, '--backend', 'full-copy'], { env }).root;
  const base = { conversation_id: 'c1', generation_id: 'g1', workspace_roots: [root] };
  const b = hook('cursor', { ...base, hook_event_name: 'beforeSubmitPrompt', prompt: 'Add a file' });
  assert.is(b.code, 0, b.stderr);
  assert.equal(JSON.parse(b.stdout), { continue: true });
  writeFileSync(join(root, 'new.txt'), 'new\n');
  rmSync(join(root, 'old.txt'));
  const s = hook('cursor', { ...base, hook_event_name: 'stop', status: 'completed' });
  assert.is(s.code, 0, s.stderr);
  assert.equal(JSON.parse(s.stdout), {});
  // Fired twice for one turn: no second checkpoint.
  assert.is(hook('cursor', { ...base, hook_event_name: 'stop', status: 'completed' }).code, 0);
  assert.equal(labels('cur'), ['cursor before turn g1: Add a file', 'cursor after turn g1']);
  cliJson(['restore', 'cur', '--to', 'label:cursor before turn g1: Add a file'], { env });
  assert.is(readFileSync(join(root, 'old.txt'), 'utf8'), 'delete me\n');
  assert.not.ok(existsSync(join(root, 'new.txt')));
});

test('gemini: BeforeAgent and AfterAgent, labelled with the prompt; stdout is {}', () => {
  const root = cliJson<{ root: string }>(['create', 'gem', '--from', project, '--backend', 'full-copy'], { env }).root;
  const base = { session_id: 's1', transcript_path: '/nonexistent', cwd: root, timestamp: '2026-12-05T00:00:00Z' };
  const b = hook('gemini', { ...base, hook_event_name: 'BeforeAgent', prompt: 'Write a.txt' });
  assert.is(b.code, 0, b.stderr);
  assert.equal(JSON.parse(b.stdout), {});
  writeFileSync(join(root, 'a.txt'), 'a\n');
  const a = hook('gemini', {
    ...base,
    hook_event_name: 'AfterAgent',
    prompt: 'Write a.txt',
    prompt_response: 'ok',
    stop_hook_active: false,
  });
  assert.is(a.code, 0, a.stderr);
  assert.equal(labels('gem'), ['gemini before turn: Write a.txt', 'gemini after turn: Write a.txt']);
  // diff between two turns' checkpoints by label.
  const d = cliJson<{ changes: Array<{ kind: string; path: string }> }>(
    ['diff', 'gem', '--from', 'label:gemini before turn: Write a.txt', '--to', 'label:gemini after turn: Write a.txt'],
    { env },
  );
  assert.equal(
    d.changes.map((c) => `${c.kind} ${c.path}`),
    ['add a.txt'],
  );
  assert.is(cli(['restore', 'gem', '--to', 'label:no such turn'], { env }).code, 1);
});

test('codex: the notify payload as the last argument checkpoints after the turn, labelled with turn-id', () => {
  const root = cliJson<{ root: string }>(['create', 'cdx', '--from', project, '--backend', 'full-copy'], { env }).root;
  writeFileSync(join(root, 'c.txt'), 'c\n');
  const payload = {
    type: 'agent-turn-complete',
    'thread-id': 't1',
    'turn-id': 'turn-7',
    cwd: root,
    'input-messages': ['Make c.txt'],
    'last-assistant-message': 'done',
  };
  const r = hook('codex', payload, true);
  assert.is(r.code, 0, r.stderr);
  assert.is(r.stdout, '');
  assert.is(hook('codex', payload, true).code, 0);
  assert.equal(labels('cdx'), ['codex after turn turn-7: Make c.txt']);
});

test('bad input: no session, a discarded session, malformed, huge, unknown event: exit 0, nothing checkpointed', () => {
  const root = cliJson<{ root: string }>(['create', 'bad', '--from', project, '--backend', 'full-copy'], { env }).root;
  const cases: Array<[string, unknown]> = [
    ['cursor', { hook_event_name: 'stop', workspace_roots: [project] }],
    ['gemini', { hook_event_name: 'BeforeAgent', cwd: '/', prompt: 'x' }],
    ['gemini', '{not json'],
    ['gemini', ''],
    ['gemini', JSON.stringify({ hook_event_name: 'BeforeAgent', cwd: root, prompt: 'x'.repeat(2 << 20) })],
    ['gemini', { hook_event_name: 'BeforeTool', cwd: root }],
    ['cursor', [1, 2]],
  ];
  for (const [agent, payload] of cases) {
    const r = hook(agent, payload);
    assert.is(r.code, 0, `${agent} ${String(payload).slice(0, 80)}: ${r.stderr}`);
    assert.match(r.stderr, /pdb-env: /);
  }
  assert.equal(labels('bad'), []);
  cliJson(['discard', 'bad'], { env });
  const r = hook('gemini', { hook_event_name: 'BeforeAgent', cwd: root, prompt: 'x' });
  assert.is(r.code, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout), {});
});

test('--print-settings: each agent gets its own format naming pdb-env hook AGENT', () => {
  const codex = cli(['hook', 'codex', '--print-settings'], { env });
  assert.match(codex.stdout, /^notify = \[.*hook codex/);
  const cursor = JSON.parse(cli(['hook', 'cursor', '--print-settings'], { env }).stdout);
  assert.is(cursor.version, 1);
  assert.match(cursor.hooks.stop[0].command, /hook cursor$/);
  const gemini = JSON.parse(cli(['hook', 'gemini', '--print-settings'], { env }).stdout);
  assert.match(gemini.hooks.AfterAgent[0].hooks[0].command, /hook gemini$/);
});

test.run();
