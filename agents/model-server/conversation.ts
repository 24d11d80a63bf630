// What the scripted model reads from any of the three wire protocols, and what it answers: one
// neutral shape, so the mapping from cassette steps to an agent's tools is written once. The
// protocol modules (responses.ts, messages.ts, chat.ts) translate to and from it.

export const PROTOCOLS = ['responses', 'messages', 'chat'] as const;
/** OpenAI Responses, Anthropic Messages, OpenAI Chat Completions. */
export type Protocol = (typeof PROTOCOLS)[number];

/** One tool the agent offers, as its request declares it. */
export interface ToolSpec {
  name: string;
  /** function: JSON arguments; custom: free-form text input (OpenAI custom tools). */
  type: 'function' | 'custom';
  description: string;
  /** The JSON Schema of its arguments (function tools), or null. */
  parameters: Record<string, unknown> | null;
}

export interface ToolResultText {
  output: string;
  /** The protocol's own error flag (Messages is_error), null where it has none. */
  isError: boolean | null;
}

/** A tool call in the history, with the result the agent sent back (null when none came yet). */
export interface HistoryCall {
  id: string;
  name: string;
  result: ToolResultText | null;
}

export interface Conversation {
  protocol: Protocol;
  model: string;
  stream: boolean;
  tools: ToolSpec[];
  /** Every tool call in the history, in order. */
  calls: HistoryCall[];
  /** The text of the system, developer and user messages (where the cwd and tool instructions are). */
  text: string;
}

/** What the model says next: a tool call, or a message that ends the turn. */
export type Reply =
  | { kind: 'call'; id: string; name: string; type: 'function' | 'custom'; input: Record<string, unknown> | string }
  | { kind: 'text'; text: string };

/** A request the server cannot answer, as the agent will read it: an HTTP status and a message. */
export class ProtocolError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function asRecord(v: unknown): Record<string, unknown> | null {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

/** Text of a content value: a string, or an array of parts with `text` (input_text, output_text, text). */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => {
      const p = asRecord(part);
      if (!p) return '';
      if (typeof p.text === 'string') return p.text;
      if (p.type === 'tool_result') return contentText(p.content);
      return '';
    })
    .join('\n');
}

/** The tool calls of a request's history, in order, each given the result that names its id. */
export function createHistory(): {
  calls: HistoryCall[];
  call(id: string, name: string): void;
  result(id: string, r: ToolResultText): void;
} {
  const calls: HistoryCall[] = [];
  const byId = new Map<string, HistoryCall>();
  return {
    calls,
    call(id, name) {
      const c: HistoryCall = { id, name, result: null };
      calls.push(c);
      byId.set(id, c);
    },
    result(id, r) {
      const c = byId.get(id);
      if (c) c.result = r;
    },
  };
}

/** The tools a request declares: `spec` turns each entry of its `tools` array into a ToolSpec, or null to skip it. */
export function declaredTools(body: Record<string, unknown>, spec: (t: Record<string, unknown>) => ToolSpec | null): ToolSpec[] {
  const tools = Array.isArray(body.tools) ? body.tools : [];
  return tools.map((t) => asRecord(t)).flatMap((t) => (t ? (spec(t) ?? []) : []));
}

/** A rough token count (4 bytes a token), for usage fields and count_tokens. */
export function roughTokens(text: string): number {
  return Math.max(1, Math.ceil(Buffer.byteLength(text) / 4));
}

/** One server-sent event. */
export function sse(event: string | null, data: unknown): string {
  return `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
}
