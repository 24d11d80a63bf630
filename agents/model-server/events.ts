// What the scripted model server did, one event per line in its log (--log FILE), and the summary
// `pdb-env agent run` draws from it: how many turns, how far the cassette got, whether the final
// message was served, the step that failed and every request it could not map.
import { readFileSync } from 'node:fs';
import type { Protocol } from './conversation.js';

export interface ServerEvent {
  /** Milliseconds since the server started. */
  t: number;
  event: 'listening' | 'request' | 'protocol-error' | 'closed';
  /** The route: responses, messages, count_tokens, chat, models, probe, or the unknown path. */
  route?: string;
  protocol?: Protocol;
  /** What a request was answered with. */
  answer?: 'call' | 'final' | 'step-failed' | 'text' | 'tokens' | 'probe' | 'models';
  step?: number;
  phase?: string;
  tool?: string;
  /** Cassette steps done when the request came. */
  stepsDone?: number;
  /** The tools the request offered, as the server classified them. */
  tools?: string;
  message?: string;
  url?: string;
}

export interface ServerSummary {
  /** Every HTTP request. */
  requests: number;
  /** Model turns: conversation requests answered with a tool call, the final message or a step failure. */
  turns: number;
  /** Cassette steps known to be done (their results checked). */
  stepsDone: number;
  /** Whether the final message was served: every step was done. */
  finalServed: boolean;
  /** The step that failed, and why (the agent was told and stopped). */
  stepFailure: string | null;
  /** Requests the server could not map, with its message. */
  protocolErrors: string[];
  /** The tools of the last conversation request, as classified. */
  tools: string | null;
}

export function summarize(events: readonly ServerEvent[]): ServerSummary {
  const s: ServerSummary = { requests: 0, turns: 0, stepsDone: 0, finalServed: false, stepFailure: null, protocolErrors: [], tools: null };
  for (const e of events) {
    if (e.event === 'protocol-error') {
      s.requests++;
      s.protocolErrors.push(e.message ?? 'unknown');
      if (e.stepsDone !== undefined) s.stepsDone = Math.max(s.stepsDone, e.stepsDone);
    }
    if (e.event !== 'request') continue;
    s.requests++;
    if (e.stepsDone !== undefined) s.stepsDone = Math.max(s.stepsDone, e.stepsDone);
    if (e.tools) s.tools = e.tools;
    if (e.answer === 'call' || e.answer === 'final' || e.answer === 'step-failed') s.turns++;
    if (e.answer === 'final') s.finalServed = true;
    if (e.answer === 'step-failed') s.stepFailure ??= e.message ?? 'a step failed';
  }
  return s;
}

/** The events of a log file (lines that are not JSON events are skipped: a killed server may leave half a line). */
export function readEventLog(file: string): ServerEvent[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const out: ServerEvent[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const e = JSON.parse(line) as ServerEvent;
      if (e && typeof e.event === 'string') out.push(e);
    } catch {
      /* a half-written last line */
    }
  }
  return out;
}
