// Anthropic Messages API (POST /v1/messages?beta=true), as Claude Code 2.1.197 and claude-agent-acp
// 0.49.0 speak it: `system` and `messages` with tool_use / tool_result blocks (is_error on
// failures), streamed as message_start, content_block_start, content_block_delta
// (input_json_delta or text_delta), content_block_stop, message_delta (stop_reason), message_stop.
// Claude Code also sends HEAD / first and may ask POST /v1/messages/count_tokens.
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

/** Server tools (web_search_...) have a type and no input_schema: not the agent's own tools. */
function toolSpec(r: Record<string, unknown>): ToolSpec | null {
  if (typeof r.name !== 'string' || !asRecord(r.input_schema)) return null;
  return { name: r.name, type: 'function', description: String(r.description ?? ''), parameters: asRecord(r.input_schema) };
}

function blocks(content: unknown): Record<string, unknown>[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Array.isArray(content) ? content.map(asRecord).filter((b): b is Record<string, unknown> => b !== null) : [];
}

export function parseMessagesRequest(body: unknown): Conversation {
  const b = asRecord(body);
  if (!b) throw new ProtocolError(400, 'the request body is not a JSON object');
  if (!Array.isArray(b.messages)) throw new ProtocolError(400, 'a Messages request needs a messages array');
  const text: string[] = [contentText(b.system)];
  const history = createHistory();
  for (const m of b.messages) {
    const msg = asRecord(m);
    if (!msg) continue;
    for (const block of blocks(msg.content)) {
      if (block.type === 'tool_use' && typeof block.id === 'string') {
        history.call(block.id, String(block.name ?? ''));
      } else if (block.type === 'tool_result' && typeof block.tool_use_id === 'string') {
        history.result(block.tool_use_id, { output: contentText(block.content), isError: block.is_error === true });
      } else if (block.type === 'text' && msg.role !== 'assistant' && typeof block.text === 'string') text.push(block.text);
    }
  }
  return {
    protocol: 'messages',
    model: String(b.model ?? 'pdb-env-scripted'),
    stream: b.stream === true,
    tools: declaredTools(b, toolSpec),
    calls: history.calls,
    text: text.join('\n'),
  };
}

function contentBlock(reply: Reply): Record<string, unknown> {
  return reply.kind === 'text'
    ? { type: 'text', text: reply.text }
    : { type: 'tool_use', id: reply.id, name: reply.name, input: reply.input };
}

/** The reply as a Messages body: SSE events when streaming, else one JSON message. */
export function messagesReply(conv: Conversation, reply: Reply): { contentType: string; body: string } {
  const id = `msg_${randomBytes(8).toString('hex')}`;
  const stopReason = reply.kind === 'call' ? 'tool_use' : 'end_turn';
  const block = contentBlock(reply);
  const usage = { input_tokens: roughTokens(conv.text), output_tokens: roughTokens(JSON.stringify(block)) };
  const message = {
    id,
    type: 'message',
    role: 'assistant',
    model: conv.model,
    content: [block],
    stop_reason: stopReason,
    stop_sequence: null,
    usage,
  };
  if (!conv.stream) return { contentType: 'application/json', body: JSON.stringify(message) };
  const start = reply.kind === 'text' ? { type: 'text', text: '' } : { type: 'tool_use', id: reply.id, name: reply.name, input: {} };
  const delta =
    reply.kind === 'text'
      ? { type: 'text_delta', text: reply.text }
      : { type: 'input_json_delta', partial_json: JSON.stringify(reply.input) };
  const events = [
    sse('message_start', {
      type: 'message_start',
      message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } },
    }),
    sse('content_block_start', { type: 'content_block_start', index: 0, content_block: start }),
    sse('content_block_delta', { type: 'content_block_delta', index: 0, delta }),
    sse('content_block_stop', { type: 'content_block_stop', index: 0 }),
    sse('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: usage.output_tokens },
    }),
    sse('message_stop', { type: 'message_stop' }),
  ];
  return { contentType: 'text/event-stream', body: events.join('') };
}

/** POST /v1/messages/count_tokens. */
export function countTokens(body: unknown): string {
  return JSON.stringify({ input_tokens: roughTokens(JSON.stringify(body ?? '')) });
}

export function messagesError(message: string): string {
  return JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message } });
}
