// OpenAI Responses API (POST /v1/responses), as Codex CLI 0.171.0 and codex-acp 0.16.0 speak it:
// the whole conversation in `input` (store: false), tools as function or custom items, streamed
// replies as SSE `event:`/`data:` pairs of which Codex reads `type`. Measured minimum that works:
// response.output_item.done with the item, then response.completed; the next request carries a
// function_call_output with the same call_id.
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

function toolSpec(r: Record<string, unknown>): ToolSpec | null {
  if (typeof r.name !== 'string') return null;
  const description = String(r.description ?? '');
  if (r.type === 'function') return { name: r.name, type: 'function', description, parameters: asRecord(r.parameters) };
  return r.type === 'custom' ? { name: r.name, type: 'custom', description, parameters: null } : null;
}

function outputText(output: unknown): string {
  return typeof output === 'string' ? output : contentText(output);
}

export function parseResponsesRequest(body: unknown): Conversation {
  const b = asRecord(body);
  if (!b) throw new ProtocolError(400, 'the request body is not a JSON object');
  const items = Array.isArray(b.input)
    ? b.input
    : typeof b.input === 'string'
      ? [{ type: 'message', role: 'user', content: b.input }]
      : null;
  if (!items) throw new ProtocolError(400, 'a Responses request needs an input array');
  const history = createHistory();
  const text: string[] = typeof b.instructions === 'string' ? [b.instructions] : [];
  for (const it of items) {
    const r = asRecord(it);
    if (!r) continue;
    const type = r.type ?? (r.role ? 'message' : undefined);
    if (type === 'message' && r.role !== 'assistant') text.push(contentText(r.content));
    else if ((type === 'function_call' || type === 'custom_tool_call') && typeof r.call_id === 'string') {
      history.call(r.call_id, String(r.name ?? ''));
    } else if ((type === 'function_call_output' || type === 'custom_tool_call_output') && typeof r.call_id === 'string') {
      history.result(r.call_id, { output: outputText(r.output), isError: null });
    }
  }
  return {
    protocol: 'responses',
    model: String(b.model ?? 'pdb-env-scripted'),
    stream: b.stream !== false,
    tools: declaredTools(b, toolSpec),
    calls: history.calls,
    text: text.join('\n'),
  };
}

function outputItem(reply: Reply): Record<string, unknown> {
  const id = randomBytes(8).toString('hex');
  if (reply.kind === 'text')
    return {
      type: 'message',
      id: `msg_${id}`,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: reply.text, annotations: [] }],
    };
  if (reply.type === 'custom')
    return { type: 'custom_tool_call', id: `ctc_${id}`, call_id: reply.id, name: reply.name, input: reply.input, status: 'completed' };
  return {
    type: 'function_call',
    id: `fc_${id}`,
    call_id: reply.id,
    name: reply.name,
    arguments: JSON.stringify(reply.input),
    status: 'completed',
  };
}

/** The reply as a Responses body: SSE events when streaming, else one JSON response object. */
export function responsesReply(conv: Conversation, reply: Reply): { contentType: string; body: string } {
  const item = outputItem(reply);
  const id = `resp_${randomBytes(8).toString('hex')}`;
  const outTokens = roughTokens(JSON.stringify(item));
  const inTokens = roughTokens(conv.text);
  const usage = {
    input_tokens: inTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: outTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inTokens + outTokens,
  };
  const response = {
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    model: conv.model,
    status: 'completed',
    output: [item],
    usage,
  };
  if (!conv.stream) return { contentType: 'application/json', body: JSON.stringify(response) };
  // The measured sequence Codex reads; an output_item.added ahead of it is not needed.
  const events = [
    sse('response.created', { type: 'response.created', response: { ...response, status: 'in_progress', output: [] } }),
    sse('response.output_item.done', { type: 'response.output_item.done', output_index: 0, item }),
    sse('response.completed', { type: 'response.completed', response }),
  ];
  return { contentType: 'text/event-stream', body: events.join('') };
}

export function responsesError(message: string): string {
  return JSON.stringify({ error: { message, type: 'invalid_request_error', code: 'pdb_env_protocol', param: null } });
}
