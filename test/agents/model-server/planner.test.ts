// The scripted model's decisions, request by request, on the tool lists Codex CLI 0.171.0 and
// Claude Code 2.1.197 really sent (test/fixtures/model-requests/, descriptions shortened). Tool
// results are written here by hand; the real agents answer them in test/cli/commands/agent-run.test.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseCassette, type Cassette } from '../../../agents/cassette/cassette.js';
import { parseMessagesRequest } from '../../../agents/model-server/messages.js';
import { decide, type Decision } from '../../../agents/model-server/planner.js';
import { parseResponsesRequest } from '../../../agents/model-server/responses.js';
import { addFilePatch, okMarker, READ_CHUNK_BYTES, updatePatch } from '../../../agents/model-server/step-tools.js';
import { toolCatalog, findCwd } from '../../../agents/model-server/tools.js';
import { parseChatRequest } from '../../../agents/model-server/chat.js';
import { REPO_ROOT } from '../../helpers/index.js';

const fixture = (name: string) =>
  JSON.parse(readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'model-requests', name), 'utf8')) as Record<string, any>;
const cassette = (steps: unknown[]): Cassette => parseCassette({ kind: 'pdb-env-cassette', version: 1, steps, final: 'all done' }).cassette;

/** A Responses conversation: the fixture's request plus our calls and the agent's outputs so far. */
function codexTurn(c: Cassette, history: { call: Extract<Decision, { kind: 'call' }>; output: string }[]): Decision {
  const body = fixture('codex-0.171.0.json');
  for (const h of history) {
    body.input.push({
      type: 'function_call',
      name: h.call.reply.name,
      arguments: JSON.stringify(h.call.reply.input),
      call_id: h.call.reply.id,
    });
    body.input.push({ type: 'function_call_output', call_id: h.call.reply.id, output: h.output });
  }
  return decide(c, parseResponsesRequest(body), { idPrefix: 'call_' });
}

function claudeTurn(c: Cassette, history: { call: Extract<Decision, { kind: 'call' }>; output: string; isError?: boolean }[]): Decision {
  const body = fixture('claude-code-2.1.197.json');
  for (const h of history) {
    body.messages.push({
      role: 'assistant',
      content: [{ type: 'tool_use', id: h.call.reply.id, name: h.call.reply.name, input: h.call.reply.input }],
    });
    body.messages.push({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: h.call.reply.id, content: h.output, is_error: h.isError ?? false }],
    });
  }
  return decide(c, parseMessagesRequest(body), { idPrefix: 'toolu_' });
}

function asCall(d: Decision): Extract<Decision, { kind: 'call' }> {
  if (d.kind !== 'call') throw new Error(`expected a call, got ${JSON.stringify(d)}`);
  return d;
}

const cmdOf = (d: Decision) => String((asCall(d).reply.input as Record<string, unknown>).cmd);

test('the tools are learned from each request: Codex has a shell that runs apply_patch, Claude Code file tools and Bash', () => {
  const codex = parseResponsesRequest(fixture('codex-0.171.0.json'));
  const ct = toolCatalog(codex.tools, codex.text);
  assert.is(ct.shell?.name, 'exec_command');
  assert.is(ct.shell?.arg, 'cmd');
  assert.equal(ct.shell?.escalation, { prop: 'sandbox_permissions', value: 'require_escalated', justification: 'justification' });
  assert.equal(ct.patch, { via: 'shell' });
  assert.is(ct.write, null);
  assert.is(findCwd(codex.text), '/srv/session');
  const claude = parseMessagesRequest(fixture('claude-code-2.1.197.json'));
  const cl = toolCatalog(claude.tools, claude.text);
  assert.equal([cl.shell?.name, cl.write?.name, cl.edit?.name, cl.read?.name, cl.patch], ['Bash', 'Write', 'Edit', 'Read', null]);
  assert.equal([cl.write?.path, cl.write?.content, cl.edit?.old, cl.edit?.new], ['file_path', 'content', 'old_string', 'new_string']);
  assert.is(findCwd(claude.text), '/srv/session');
  // Chat Completions tools shaped like opencode's (camelCase arguments): the same roles by shape.
  const fn = (name: string, props: string[]) => ({
    type: 'function',
    function: { name, parameters: { type: 'object', properties: Object.fromEntries(props.map((p) => [p, { type: 'string' }])) } },
  });
  const chat = parseChatRequest({
    messages: [{ role: 'user', content: 'go' }],
    tools: [
      fn('bash', ['command', 'description']),
      fn('write', ['filePath', 'content']),
      fn('edit', ['filePath', 'oldString', 'newString']),
      fn('read', ['filePath']),
    ],
  });
  const ch = toolCatalog(chat.tools, chat.text);
  assert.equal([ch.shell?.name, ch.write?.path, ch.edit?.old, ch.read?.name], ['bash', 'filePath', 'oldString', 'read']);
});

test('Codex: a write is an apply_patch Add File, an edit reads the bytes first then patches, a shell step ends with the marker', () => {
  const c = cassette([
    { action: 'write', path: 'dé/new.txt', content: 'one\ntwo\n' },
    { action: 'edit', path: 'multi.txt', old: 'b\n', new: 'B1\nB2\n' },
    { action: 'shell', command: 'ls' },
  ]);
  const h: Parameters<typeof codexTurn>[1] = [];
  const d1 = asCall(codexTurn(c, h));
  assert.is(d1.reply.name, 'exec_command');
  assert.is(cmdOf(d1), `apply_patch <<'EOF'\n${addFilePatch('dé/new.txt', 'one\ntwo\n')}\nEOF`);
  h.push({ call: d1, output: 'Exit code: 0\nOutput:\nSuccess. Updated the following files:\nA dé/new.txt\n' });
  const d2 = asCall(codexTurn(c, h));
  assert.match(cmdOf(d2), /tail -c \+1 -- 'multi\.txt' 2>\/dev\/null \| head -c 6144 \| base64 -w0/);
  assert.match(cmdOf(d2), /^cd -- '\/srv\/session' \|\| exit 1/);
  h.push({ call: d2, output: `Process exited with code 0\nOutput:\npdb-env-read:6:${Buffer.from('a\nb\nc\n').toString('base64')}:end\n` });
  const d3 = asCall(codexTurn(c, h));
  assert.is(cmdOf(d3), `apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: multi.txt\n@@\n a\n-b\n+B1\n+B2\n c\n*** End Patch\nEOF`);
  h.push({ call: d3, output: 'Success. Updated the following files:\nM multi.txt\n' });
  const d4 = asCall(codexTurn(c, h));
  assert.match(cmdOf(d4), /\(\nls\n\)/);
  h.push({ call: d4, output: `Process exited with code 0\nOutput:\nx\n${okMarker('2-a')}\n` });
  const end = codexTurn(c, h);
  assert.equal(end, { kind: 'final', stepsDone: 3, reply: { kind: 'text', text: 'all done' } });
});

test('Codex: a file larger than one read is read in pieces before the patch', () => {
  const big = Array.from({ length: 3000 }, (_, i) => `line ${i} of a big file\n`).join('');
  const c = cassette([{ action: 'edit', path: 'big.txt', old: 'line 2500 of a big file\n', new: 'EDITED\n' }]);
  const h: Parameters<typeof codexTurn>[1] = [];
  const size = Buffer.byteLength(big);
  for (let offset = 0; offset < size; offset += READ_CHUNK_BYTES) {
    const d = asCall(codexTurn(c, h));
    assert.is(d.phase, offset === 0 ? 'r' : `r${offset / READ_CHUNK_BYTES}`);
    assert.match(cmdOf(d), new RegExp(`tail -c \\+${offset + 1} -- 'big\\.txt'`));
    const piece = Buffer.from(big)
      .subarray(offset, offset + READ_CHUNK_BYTES)
      .toString('base64');
    h.push({ call: d, output: `Output:\npdb-env-read:${size}:${piece}:end\n` });
  }
  assert.ok(h.length >= 3);
  const patch = cmdOf(asCall(codexTurn(c, h)));
  assert.match(
    patch,
    /\*\*\* Update File: big\.txt\n@@\n line 2497 of a big file\n line 2498 of a big file\n line 2499 of a big file\n-line 2500 of a big file\n\+EDITED\n/,
  );
});

test('Claude Code: Read before Write and Edit (its read-before-write rule), absolute paths under its working directory', () => {
  const c = cassette([
    { action: 'write', path: 'a/ü.txt', content: 'no newline' },
    { action: 'edit', path: 'x.ts', old: 'a', new: 'b' },
  ]);
  const h: Parameters<typeof claudeTurn>[1] = [];
  const r1 = asCall(claudeTurn(c, h));
  assert.equal([r1.reply.name, r1.reply.input], ['Read', { file_path: '/srv/session/a/ü.txt' }]);
  h.push({ call: r1, output: 'File does not exist.', isError: true });
  const w = asCall(claudeTurn(c, h));
  assert.equal([w.reply.name, w.reply.input], ['Write', { file_path: '/srv/session/a/ü.txt', content: 'no newline' }]);
  assert.match(w.reply.id, /^toolu_pdb_0_a$/);
  h.push({ call: w, output: 'File created successfully at: /srv/session/a/ü.txt' });
  const r2 = asCall(claudeTurn(c, h));
  h.push({ call: r2, output: '1\ta' });
  const e = asCall(claudeTurn(c, h));
  assert.equal([e.reply.name, e.reply.input], ['Edit', { file_path: '/srv/session/x.ts', old_string: 'a', new_string: 'b' }]);
  h.push({ call: e, output: 'The file /srv/session/x.ts has been updated successfully.' });
  assert.is(claudeTurn(c, h).kind, 'final');
});

test('a failed tool result ends the conversation with the step named (no retry, no hang)', () => {
  const c = cassette([
    { action: 'mkdir', path: 'd' },
    { action: 'shell', command: 'exit 3' },
    { action: 'mkdir', path: 'never' },
  ]);
  const h: Parameters<typeof claudeTurn>[1] = [];
  const d1 = asCall(claudeTurn(c, h));
  h.push({ call: d1, output: `${okMarker('0-a')}` });
  const d2 = asCall(claudeTurn(c, h));
  h.push({ call: d2, output: 'Exit code 3', isError: true });
  const d = claudeTurn(c, h);
  assert.is(d.kind, 'step-failed');
  if (d.kind !== 'step-failed') return;
  assert.is(d.step, 1);
  assert.match(d.reason, /^step 2 shell exit 3: the tool result was a failure: Exit code 3/);
  assert.equal(d.reply.kind, 'text');
});

test('a step expected to be denied must fail; its success is the failure', () => {
  const c = cassette([
    { action: 'write', path: '.env', content: 'S=1\n', expect: 'denied' },
    { action: 'mkdir', path: 'after' },
  ]);
  const refused: Parameters<typeof claudeTurn>[1] = [];
  refused.push({ call: asCall(claudeTurn(c, refused)), output: 'File does not exist.', isError: true });
  refused.push({ call: asCall(claudeTurn(c, refused)), output: 'User refused permission to run tool', isError: true });
  const next = asCall(claudeTurn(c, refused));
  assert.is(next.step, 1, 'the refusal is what the step wanted: the agent goes on');
  const allowed: Parameters<typeof claudeTurn>[1] = [];
  allowed.push({ call: asCall(claudeTurn(c, allowed)), output: 'x', isError: true });
  allowed.push({ call: asCall(claudeTurn(c, allowed)), output: 'File created successfully at: /srv/session/.env' });
  const d = claudeTurn(c, allowed);
  assert.is(d.kind, 'step-failed');
  assert.match(d.kind === 'step-failed' ? d.reason : '', /was to be denied, but it succeeded/);
});

test("a shell step Codex's read-only sandbox refused is asked again outside the sandbox, once", () => {
  const c = cassette([{ action: 'mkdir', path: 'd' }]);
  const h: Parameters<typeof codexTurn>[1] = [];
  const d1 = asCall(codexTurn(c, h));
  assert.not.ok('sandbox_permissions' in (d1.reply.input as object));
  h.push({ call: d1, output: "Process exited with code 1\nOutput:\nmkdir: cannot create directory 'd': Read-only file system\n" });
  const d2 = asCall(codexTurn(c, h));
  assert.is((d2.reply.input as Record<string, unknown>).sandbox_permissions, 'require_escalated');
  assert.match(String((d2.reply.input as Record<string, unknown>).justification), /pdb-env cassette step 1 mkdir d/);
  h.push({ call: d2, output: 'Process exited with code 1\nOutput:\nRead-only file system\n' });
  assert.is(codexTurn(c, h).kind, 'step-failed');
});

test('a command Codex left running is read on through write_stdin until its marker shows', () => {
  const c = cassette([{ action: 'shell', command: 'sleep 20' }]);
  const h: Parameters<typeof codexTurn>[1] = [];
  h.push({
    call: asCall(codexTurn(c, h)),
    output: 'Chunk ID: 1\nWall time: 10.0 seconds\nProcess running with session ID 4242\nOutput:\n',
  });
  const poll = asCall(codexTurn(c, h));
  assert.equal(
    [poll.phase, poll.reply.name, poll.reply.input],
    ['p1', 'write_stdin', { session_id: 4242, chars: '', yield_time_ms: 30_000 }],
  );
  h.push({ call: poll, output: 'Process running with session ID 4242\n' });
  const again = asCall(codexTurn(c, h));
  assert.is(again.phase, 'p2');
  h.push({ call: again, output: `Process exited with code 0\nOutput:\n${okMarker('0-a')}\n` });
  assert.is(codexTurn(c, h).kind, 'final');
});

test('a step no offered tool can do is unmappable, naming the tools it saw', () => {
  const c = cassette([{ action: 'symlink', path: 'l', target: 't' }]);
  const body = {
    messages: [{ role: 'user', content: 'go' }],
    tools: [
      { name: 'Write', input_schema: { type: 'object', properties: { file_path: { type: 'string' }, content: { type: 'string' } } } },
    ],
  };
  const d = decide(c, parseMessagesRequest(body), { idPrefix: 'toolu_' });
  assert.is(d.kind, 'unmappable');
  assert.match(
    d.kind === 'unmappable' ? d.reason : '',
    /step 1 symlink l: no tool of this agent can symlink \(no shell tool\) \(write=Write\)/,
  );
});

test('updatePatch: the changed lines with context, or Add File when that block is not unique', () => {
  assert.is(
    updatePatch('p', '1\n2\n3\n4\n5\n6\n7\n8\n', '1\n2\n3\n4\nX\n6\n7\n8\n'),
    '*** Begin Patch\n*** Update File: p\n@@\n 2\n 3\n 4\n-5\n+X\n 6\n 7\n 8\n*** End Patch',
  );
  const same = 'x\nx\nx\nx\nx\nx\nx\nx\nx\nx\n';
  assert.is(updatePatch('p', same, `${same}y\n`), addFilePatch('p', `${same}y\n`));
});

test.run();
