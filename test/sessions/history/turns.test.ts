// Issue 54 item 3: `pdb-env log` shows which agent and turn made each checkpoint (the agent's own
// turn id where its payload has one, else the turn's ordinal), and `diff --from/--to` compares two
// turns of different agents in two sessions (SESSION@REF), through the CLI a user runs.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, cliJson, tempDir, writeTree } from '../../helpers/index.js';
import { qualifiedRef, turnMark } from '../../../sessions/history/log.js';

const t = tempDir('pdb-turns-');
test.after(() => t.cleanup());
const store = join(t.dir, 'store');
const env = { PDB_ENV_STORE: store };
const project = join(t.dir, 'project');
writeTree(project, { 'README.md': '# p\n', 'shared.txt': 'one\n', 'old.txt': 'gone soon\n' });

type Cp = { number: number; label?: string; agent?: string; turn?: string; phase?: string };
const log = (name: string) => cliJson<{ checkpoints: Cp[] }>(['log', name], { env }).checkpoints;
const hook = (agent: string, payload: unknown) => cli(['hook', agent], { env, input: JSON.stringify(payload) });
const create = (name: string) => cliJson<{ root: string }>(['create', name, '--from', project, '--backend', 'full-copy'], { env }).root;

test('turnMark: the agent id when given; else ordinals per agent, an after takes its before', () => {
  const lines = [
    { snapshot: 'sha256:a', changeset: 'sha256:b', at: 'x', agent: 'gemini', turn: '1', phase: 'before' as const },
    { snapshot: 'sha256:a', changeset: 'sha256:b', at: 'x', agent: 'gemini', turn: '1', phase: 'after' as const },
    { snapshot: 'sha256:a', changeset: 'sha256:b', at: 'x', agent: 'cursor', turn: 'g7', phase: 'before' as const },
  ] as Parameters<typeof turnMark>[0];
  assert.equal(turnMark(lines, 'gemini', 'before', null), { agent: 'gemini', turn: '2', phase: 'before' });
  assert.equal(turnMark(lines, 'gemini', 'after', null), { agent: 'gemini', turn: '1', phase: 'after' });
  assert.equal(turnMark(lines, 'cursor', 'after', 'g8'), { agent: 'cursor', turn: 'g8', phase: 'after' });
  assert.equal(turnMark([], 'claude-code', 'before', null).turn, '1');
});

test('qualifiedRef: SESSION@REF only where the part before @ is a session name', () => {
  assert.equal(qualifiedRef('a', 'b@3'), { session: 'b', ref: '3' });
  assert.equal(qualifiedRef('a', 'b@label:x @ y'), { session: 'b', ref: 'label:x @ y' });
  assert.equal(qualifiedRef('a', 'label:mail me@home'), { session: 'a', ref: 'label:mail me@home' });
  assert.equal(qualifiedRef('a', '@3'), { session: 'a', ref: '@3' });
  assert.equal(qualifiedRef('a', '3'), { session: 'a', ref: '3' });
});

test('log shows agent and turn; diff across two sessions of two agents; restore by turn label', () => {
  const g = create('gem');
  const c = create('cur');
  const gemBase = { session_id: 's1', transcript_path: '/nonexistent', cwd: g, timestamp: '2026-12-06T00:00:00Z' };
  for (const turn of ['Write a.txt', 'Edit shared.txt']) {
    assert.is(hook('gemini', { ...gemBase, hook_event_name: 'BeforeAgent', prompt: turn }).code, 0);
    if (turn === 'Write a.txt') writeFileSync(join(g, 'a.txt'), 'a\n');
    else writeFileSync(join(g, 'shared.txt'), 'gemini\n');
    assert.is(hook('gemini', { ...gemBase, hook_event_name: 'AfterAgent', prompt: turn, prompt_response: 'ok' }).code, 0);
  }
  const curBase = { conversation_id: 'c1', generation_id: 'gen-42', workspace_roots: [c] };
  assert.is(hook('cursor', { ...curBase, hook_event_name: 'beforeSubmitPrompt', prompt: 'Remove old.txt' }).code, 0);
  rmSync(join(c, 'old.txt'));
  writeFileSync(join(c, 'shared.txt'), 'cursor\n');
  assert.is(hook('cursor', { ...curBase, hook_event_name: 'stop', status: 'completed' }).code, 0);

  assert.equal(
    log('gem').map((l) => [l.agent, l.turn, l.phase]),
    [
      ['gemini', '1', 'before'],
      ['gemini', '1', 'after'],
      ['gemini', '2', 'before'],
      ['gemini', '2', 'after'],
    ],
  );
  assert.equal(
    log('cur').map((l) => [l.agent, l.turn, l.phase]),
    [
      ['cursor', 'gen-42', 'before'],
      ['cursor', 'gen-42', 'after'],
    ],
  );
  const text = cli(['log', 'gem'], { env });
  assert.is(text.code, 0, text.stderr);
  assert.match(text.stdout, /TURN/);
  assert.match(text.stdout, /gemini 2 after/);

  // gemini's second turn's result against cursor's turn's result: both from one base.
  const d = cliJson<{ from: { session: string; number: number }; to: { session: string }; changes: Array<{ kind: string; path: string }> }>(
    ['diff', 'gem', '--from', '4', '--to', 'cur@label:cursor after turn gen-42'],
    { env },
  );
  assert.is(d.from.session, 'gem');
  assert.is(d.to.session, 'cur');
  assert.equal(d.changes.map((x) => `${x.kind} ${x.path}`).sort(), ['delete a.txt', 'modify shared.txt', 'delete old.txt'].sort());
  // The same from the other side, and with no session operand's own checkpoint at all.
  const back = cliJson<{ changes: Array<{ kind: string; path: string }> }>(['diff', 'cur', '--from', 'cur@2', '--to', 'gem@4'], { env });
  assert.equal(back.changes.map((x) => `${x.kind} ${x.path}`).sort(), ['add a.txt', 'modify shared.txt', 'add old.txt'].sort());
  // An unknown session or checkpoint on the other side: a typed refusal.
  const bad = cli(['diff', 'gem', '--from', '1', '--to', 'nosuch@1', '--json'], { env });
  assert.is.not(bad.code, 0);
  assert.match(bad.stdout + bad.stderr, /E_SESSION_\w+|E_\w+/);
  const gone = cli(['diff', 'gem', '--from', '1', '--to', 'cur@9'], { env });
  assert.is.not(gone.code, 0);
  assert.match(gone.stderr, /has no checkpoint 9/);

  // Restore gemini's session to before its second turn, by the turn's label.
  cliJson(['restore', 'gem', '--to', 'label:gemini before turn: Edit shared.txt'], { env });
  assert.is(readFileSync(join(g, 'shared.txt'), 'utf8'), 'one\n');
  const now = cliJson<{ number: number }>(['checkpoint', 'gem'], { env }).number;
  assert.equal(cliJson<{ changes: unknown[] }>(['diff', 'gem', '--from', '3', '--to', String(now)], { env }).changes, []);
});

test.run();
