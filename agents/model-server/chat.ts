// OpenAI Chat Completions (POST /v1/chat/completions), as OpenAI-compatible agents speak it
// (opencode's @ai-sdk/openai-compatible provider): `messages` with assistant tool_calls and
// role:"tool" results, streamed as chunks with delta.tool_calls[{index, id, type, function}],
// finish_reason "tool_calls" or "stop", a usage chunk, then `data: [DONE]`.
import { randomBytes } from 'node:crypto';
import {
  asRecord,
  createHistory,
  declaredTools,
  contentText,
  ProtocolError,
  roughTokens,
  sse,
  type Conversation,
  type Reply,
  type ToolSpec,
} from './conversation.js';

function toolSpec(t: Record<string, unknown>): ToolSpec | null {
  const f = asRecord(t.function);
  if (!f || typeof f.name !== 'string') return null;
  return { name: f.name, type: 'function', description: String(f.description ?? ''), parameters: asRecord(f.parameters) };
}

export function parseChatRequest(body: unknown): Conversation {
  const b = asRecord(body);
  if (!b) throw new ProtocolError(400, 'the request body is not a JSON object');
  if (!Array.isArray(b.messages)) throw new ProtocolError(400, 'a Chat Completions request needs a messages array');
  const text: string[] = [];
  const history = createHistory();
  for (const m of b.messages) {
    const msg = asRecord(m);
    if (!msg) continue;
    if (msg.role === 'assistant') {
      for (const tc of Array.isArray(msg.tool_calls) ? msg.tool_calls : []) {
        const r = asRecord(tc);
        if (!r || typeof r.id !== 'string') continue;
        history.call(r.id, String(asRecord(r.function)?.name ?? ''));
      }
    } else if (msg.role === 'tool' && typeof msg.tool_call_id === 'string') {
      history.result(msg.tool_call_id, { output: contentText(msg.content), isError: null });
    } else text.push(contentText(msg.content));
  }
  return {
    protocol: 'chat',
    model: String(b.model ?? 'pdb-env-scripted'),
    stream: b.stream === true,
    tools: declaredTools(b, toolSpec),
    calls: history.calls,
    text: text.join('\n'),
  };
}

/** The reply as a Chat Completions body: SSE chunks when streaming, else one JSON completion. */
export function chatReply(conv: Conversation, reply: Reply): { contentType: string; body: string } {
  const id = `chatcmpl-${randomBytes(8).toString('hex')}`;
  const created = Math.floor(Date.now() / 1000);
  const finish = reply.kind === 'call' ? 'tool_calls' : 'stop';
  const args = reply.kind === 'call' ? (typeof reply.input === 'string' ? reply.input : JSON.stringify(reply.input)) : '';
  const toolCall = reply.kind === 'call' ? { id: reply.id, type: 'function', function: { name: reply.name, arguments: args } } : null;
  const completion = roughTokens(reply.kind === 'text' ? reply.text : args);
  const usage = { prompt_tokens: roughTokens(conv.text), completion_tokens: completion, total_tokens: roughTokens(conv.text) + completion };
  const base = { id, object: 'chat.completion.chunk', created, model: conv.model };
  if (!conv.stream) {
    const message =
      reply.kind === 'text' ? { role: 'assistant', content: reply.text } : { role: 'assistant', content: null, tool_calls: [toolCall] };
    return {
      contentType: 'application/json',
      body: JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: finish }], usage }),
    };
  }
  const delta =
    reply.kind === 'text' ? { role: 'assistant', content: reply.text } : { role: 'assistant', tool_calls: [{ index: 0, ...toolCall }] };
  const chunks = [
    sse(null, { ...base, choices: [{ index: 0, delta, finish_reason: null }] }),
    sse(null, { ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }] }),
    sse(null, { ...base, choices: [], usage }),
    sse(null, '[DONE]'),
  ];
  return { contentType: 'text/event-stream', body: chunks.join('') };
}

export function chatError(message: string): string {
  return JSON.stringify({ error: { message, type: 'invalid_request_error', code: 'pdb_env_protocol' } });
}
