// The scripted model server over HTTP: each protocol's wire format, the side routes, and the
// errors a request it cannot map gets (in the protocol's own format, and logged).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseCassette } from '../../../agents/cassette/cassette.js';
import { startModelServer, type ModelServer } from '../../../agents/model-server/server.js';
import { REPO_ROOT } from '../../helpers/index.js';

const fixture = (name: string) =>
  JSON.parse(readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'model-requests', name), 'utf8')) as Record<string, any>;
const cassette = parseCassette({
  kind: 'pdb-env-cassette',
  version: 1,
  steps: [
    { action: 'write', path: 'a.txt', content: 'a\n' },
    { action: 'symlink', path: 'l', target: 'a.txt' },
  ],
  final: 'done',
});

let server: ModelServer;
test.before(async () => {
  server = await startModelServer({ cassette, port: 0, root: '/srv/fallback' });
});
test.after(() => server.close());

async function post(path: string, body: unknown): Promise<{ status: number; type: string; text: string }> {
  const r = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, type: r.headers.get('content-type') ?? '', text: await r.text() };
}

/** The `data:` payloads of an SSE body, with their `event:` names. */
function events(text: string): { event: string | null; data: any }[] {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? null;
      const data = /^data: (.*)$/m.exec(block)![1]!;
      return { event, data: data === '[DONE]' ? data : JSON.parse(data) };
    });
}

test('listens on 127.0.0.1 and answers the probes Claude Code and others send', async () => {
  assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.is((await fetch(server.url, { method: 'HEAD' })).status, 200);
  const models = (await (await fetch(`${server.url}/v1/models`)).json()) as { data: { id: string }[] };
  assert.is(models.data[0]!.id, 'pdb-env-scripted');
  const tokens = await post('/v1/messages/count_tokens', { messages: [{ role: 'user', content: 'hello' }] });
  assert.ok((JSON.parse(tokens.text) as { input_tokens: number }).input_tokens > 0);
});

test('Responses: SSE response.created, output_item.done with the function call, response.completed', async () => {
  const r = await post('/v1/responses', fixture('codex-0.171.0.json'));
  assert.is(r.status, 200);
  assert.match(r.type, /text\/event-stream/);
  const ev = events(r.text);
  assert.equal(
    ev.map((e) => e.event),
    ['response.created', 'response.output_item.done', 'response.completed'],
  );
  assert.equal(
    ev.map((e) => e.data.type),
    ev.map((e) => e.event),
    'Codex reads type',
  );
  const item = ev[1]!.data.item;
  assert.equal([item.type, item.name, item.call_id], ['function_call', 'exec_command', 'call_pdb_0_a']);
  assert.match(JSON.parse(item.arguments).cmd, /^apply_patch <<'EOF'\n\*\*\* Begin Patch\n\*\*\* Add File: a\.txt\n\+a\n/);
});

test('Messages: message_start, a tool_use block whose input arrives as input_json_delta, stop_reason tool_use', async () => {
  const r = await post('/v1/messages?beta=true', fixture('claude-code-2.1.197.json'));
  const ev = events(r.text);
  assert.equal(
    ev.map((e) => e.event),
    ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop'],
  );
  assert.equal(ev[1]!.data.content_block, { type: 'tool_use', id: 'toolu_pdb_0_r', name: 'Read', input: {} });
  assert.equal(JSON.parse(ev[2]!.data.delta.partial_json), { file_path: '/srv/session/a.txt' });
  assert.is(ev[4]!.data.delta.stop_reason, 'tool_use');
});

test('Chat Completions: streamed tool_calls, finish_reason tool_calls, a usage chunk, [DONE]; JSON when not streaming', async () => {
  const fn = (name: string, props: string[]) => ({
    type: 'function',
    function: { name, parameters: { type: 'object', properties: Object.fromEntries(props.map((p) => [p, { type: 'string' }])) } },
  });
  const body = {
    model: 'm',
    stream: true,
    messages: [{ role: 'user', content: 'Working directory: /w' }],
    tools: [fn('bash', ['command']), fn('write', ['filePath', 'content'])],
  };
  const ev = events((await post('/v1/chat/completions', body)).text);
  assert.is(ev.at(-1)!.data, '[DONE]');
  const call = ev[0]!.data.choices[0].delta.tool_calls[0];
  assert.equal(
    [call.index, call.type, call.function.name, JSON.parse(call.function.arguments)],
    [0, 'function', 'write', { filePath: '/w/a.txt', content: 'a\n' }],
  );
  assert.is(ev[1]!.data.choices[0].finish_reason, 'tool_calls');
  assert.ok(ev[2]!.data.usage.total_tokens > 0);
  // Once the write's result is in, the symlink step goes through the shell.
  const next = {
    ...body,
    stream: false,
    messages: [
      ...body.messages,
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_pdb_0_a', type: 'function', function: { name: 'write', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'call_pdb_0_a', content: 'Wrote file successfully.' },
    ],
  };
  const json = JSON.parse((await post('/v1/chat/completions', next)).text);
  assert.is(json.choices[0].message.tool_calls[0].function.name, 'bash');
  assert.match(JSON.parse(json.choices[0].message.tool_calls[0].function.arguments).command, /ln -s -- 'a\.txt' 'l'/);
});

test('a request it cannot map gets HTTP 400 in the protocol format and is logged; so is an unknown endpoint', async () => {
  const before = server.events.length;
  const writeOnly = {
    stream: true,
    messages: [{ role: 'user', content: 'go' }],
    tools: [
      { name: 'Write', input_schema: { type: 'object', properties: { file_path: { type: 'string' }, content: { type: 'string' } } } },
    ],
  };
  // The write is done by Write; the symlink has no tool.
  writeOnly.messages.push(
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_pdb_0_a', name: 'Write', input: {} }] } as never,
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_pdb_0_a', content: 'File created', is_error: false }] } as never,
  );
  const r = await post('/v1/messages', writeOnly);
  assert.is(r.status, 400);
  const err = JSON.parse(r.text);
  assert.is(err.type, 'error');
  assert.match(err.error.message, /cannot map this request: step 2 symlink l: no tool of this agent can symlink/);
  const nf = await post('/v2/teleport', {});
  assert.is(nf.status, 404);
  const logged = server.events.slice(before).filter((e) => e.event === 'protocol-error');
  assert.is(logged.length, 2);
  assert.is(server.summary().protocolErrors.length, 2);
  assert.is(server.summary().stepsDone, 1);
});

test('a request without tools is a side request (a title, a summary): answered with text, never a step', async () => {
  const r = await post('/v1/messages', { stream: false, messages: [{ role: 'user', content: 'title?' }] });
  const msg = JSON.parse(r.text);
  assert.equal([msg.stop_reason, msg.content[0].type], ['end_turn', 'text']);
});

test.run();
