// The scripted model's decision for one request, from the request alone: which cassette steps are
// done (our own calls in the history, named `pdb_<step>_<phase>`, and their results), then the next
// tool call, the final message, or the step that failed. Stateless: a retried request gets the
// same answer, and two agents never share a position. One tool call per turn, each result judged
// before the next step.
import { countOccurrences } from '../cassette/replay.js';
import { describeStep, type Cassette, type CassetteStep } from '../cassette/cassette.js';
import type { Conversation, HistoryCall, Reply, ToolResultText } from './conversation.js';
import {
  addFilePatch,
  okMarker,
  parseRead,
  patchCommand,
  patchSafe,
  readBody,
  resultOk,
  sandboxRefused,
  shellArgs,
  shellBody,
  toolPath,
  updatePatch,
  wrapShell,
  type ResultKind,
} from './step-tools.js';
import { describeCatalog, findCwd, toolCatalog, type ToolCatalog } from './tools.js';

/** Read first (r, then r1, r2... for the rest of a large file), act (a), act again outside the agent's sandbox (e), poll a command still running (p1, p2...). */
type Phase = 'r' | `r${number}` | 'a' | 'e' | `p${number}`;

interface PlannedCall {
  phase: Phase;
  /** The phase whose shell marker the result must show (a poll reads on the output of the call it polls). */
  marks: Phase;
  kind: ResultKind;
  name: string;
  type: 'function' | 'custom';
  input: Record<string, unknown> | string;
}

interface PhaseResult {
  phase: Phase;
  marks: Phase;
  kind: ResultKind;
  result: ToolResultText;
}

type Next =
  { kind: 'call'; call: PlannedCall } | { kind: 'done' } | { kind: 'failed'; reason: string } | { kind: 'unmappable'; reason: string };

export type Decision =
  | { kind: 'call'; step: number; phase: string; reply: Extract<Reply, { kind: 'call' }>; stepsDone: number }
  | { kind: 'final'; reply: Reply; stepsDone: number }
  | { kind: 'step-failed'; step: number; reason: string; reply: Reply; stepsDone: number }
  | { kind: 'unmappable'; step: number; reason: string; stepsDone: number };

interface Ctx {
  step: CassetteStep;
  index: number;
  tools: ToolCatalog;
  cwd: string | null;
}

export function callId(prefix: string, step: number, phase: string): string {
  return `${prefix}pdb_${step}_${phase}`;
}

const token = (c: Ctx, phase: Phase) => `${c.index}-${phase}`;

function shellCall(c: Ctx, phase: Phase, body: string, escalate: string | null = null): PlannedCall | null {
  const shell = c.tools.shell;
  if (!shell) return null;
  const input = shellArgs(shell, wrapShell(body, token(c, phase), c.cwd), escalate);
  return { phase, marks: phase, kind: 'shell', name: shell.name, type: 'function', input };
}

function patchCall(c: Ctx, patch: string): PlannedCall | null {
  const p = c.tools.patch;
  if (!p) return null;
  if (p.via === 'tool')
    return {
      phase: 'a',
      marks: 'a',
      kind: 'patch',
      name: p.name,
      type: p.custom ? 'custom' : 'function',
      input: p.custom ? patch : { [p.arg!]: patch },
    };
  const shell = c.tools.shell!;
  return { phase: 'a', marks: 'a', kind: 'patch', name: shell.name, type: 'function', input: shellArgs(shell, patchCommand(patch), null) };
}

function readToolCall(c: Ctx, path: string): PlannedCall | null {
  const r = c.tools.read;
  return r ? { phase: 'r', marks: 'r', kind: 'read', name: r.name, type: 'function', input: { [r.path]: toolPath(c.cwd, path) } } : null;
}

const orUnmappable = (call: PlannedCall | null, what: string): Next =>
  call ? { kind: 'call', call } : { kind: 'unmappable', reason: `no tool of this agent can ${what}` };

/** The first call of a step. */
function firstCall(c: Ctx): Next {
  const { step, tools } = c;
  if (step.action === 'write') {
    if (tools.write) return { kind: 'call', call: readToolCall(c, step.path) ?? writeCall(c) };
    if (tools.patch && patchSafe(step.content)) return orUnmappable(patchCall(c, addFilePatch(step.path, step.content)), 'write a file');
    return orUnmappable(shellCall(c, 'a', shellBody(step)), 'write a file');
  }
  if (step.action === 'edit') {
    if (tools.edit) return { kind: 'call', call: readToolCall(c, step.path) ?? editCall(c) };
    // Without an edit tool, read the bytes through the shell, then patch or write the new text.
    if (tools.shell) {
      return orUnmappable(shellCall(c, 'r', readBody(step.path)), 'edit a file');
    }
    return { kind: 'unmappable', reason: 'no tool of this agent can edit a file (no edit tool, no shell to read it)' };
  }
  return orUnmappable(shellCall(c, 'a', shellBody(step)), `${step.action} (no shell tool)`);
}

function writeCall(c: Ctx): PlannedCall {
  const w = c.tools.write!;
  const step = c.step as Extract<CassetteStep, { action: 'write' }>;
  return {
    phase: 'a',
    marks: 'a',
    kind: 'file-tool',
    name: w.name,
    type: 'function',
    input: { [w.path]: toolPath(c.cwd, step.path), [w.content]: step.content },
  };
}

function editCall(c: Ctx): PlannedCall {
  const e = c.tools.edit!;
  const step = c.step as Extract<CassetteStep, { action: 'edit' }>;
  return {
    phase: 'a',
    marks: 'a',
    kind: 'file-tool',
    name: e.name,
    type: 'function',
    input: { [e.path]: toolPath(c.cwd, step.path), [e.old]: step.old, [e.new]: step.new },
  };
}

const isRead = (p: PhaseResult) => p.phase === 'r' || /^r\d+$/.test(p.phase);

/** What the shell reads of an edit's file came to: the whole text, the offset to read next, or why it could not be read. */
function readSoFar(prior: PhaseResult[]): { text: string } | { next: number } | { error: string } {
  const pieces: Buffer[] = [];
  let size = 0;
  for (const p of prior.filter(isRead)) {
    const piece = parseRead(p.result.output);
    if (!piece) return { error: excerpt(p.result.output) };
    size = piece.size;
    pieces.push(piece.bytes);
    if (piece.bytes.length === 0) break;
  }
  const bytes = Buffer.concat(pieces);
  return bytes.length < size ? { next: bytes.length } : { text: bytes.toString('utf8') };
}

/** After the shell reads of an edit: the next piece, or the new text through the patch tool, or written by the shell. */
function editAfterRead(c: Ctx, prior: PhaseResult[]): Next {
  const step = c.step as Extract<CassetteStep, { action: 'edit' }>;
  const read = readSoFar(prior);
  if ('error' in read) return { kind: 'failed', reason: `could not read ${step.path} through the shell: ${read.error}` };
  if ('next' in read) {
    const n = prior.filter(isRead).length;
    const call = shellCall(c, `r${n}`, readBody(step.path, read.next));
    return orUnmappable(call, 'read a file');
  }
  const text = read.text;
  const n = countOccurrences(text, step.old);
  if (n !== 1) return { kind: 'failed', reason: `the old text occurs ${n} times in ${step.path}, not once` };
  const after = text.replace(step.old, () => step.new);
  if (c.tools.patch && patchSafe(text) && patchSafe(after))
    return orUnmappable(patchCall(c, updatePatch(step.path, text, after)), 'edit a file');
  return orUnmappable(shellCall(c, 'a', shellBody(step, after)), 'edit a file');
}

/** The next call of a step given what its earlier calls returned, or that it is done or failed. */
function nextPhase(c: Ctx, prior: PhaseResult[]): Next {
  const last = prior[prior.length - 1];
  if (!last) return firstCall(c);
  const denied = c.step.expect === 'denied';
  if (isRead(last)) {
    if (c.step.action === 'write') return { kind: 'call', call: writeCall(c) };
    if (c.tools.edit) return { kind: 'call', call: editCall(c) };
    return editAfterRead(c, prior);
  }
  const poll = pollCall(c, last, prior);
  if (poll) return { kind: 'call', call: poll };
  const ok = resultOk(last.kind, last.result, token(c, last.marks));
  if (denied) return ok ? { kind: 'failed', reason: 'the step was to be denied, but it succeeded' } : { kind: 'done' };
  if (ok) return { kind: 'done' };
  // A shell step the agent's read-only sandbox refused: ask to run it outside, as a model would.
  if (last.marks === 'a' && last.kind === 'shell' && c.tools.shell?.escalation && sandboxRefused(last.result.output)) {
    const why = `pdb-env cassette step ${describeStep(c.step, c.index)}`;
    return orUnmappable(shellCall(c, 'e', bodyOfLast(c, prior), why), 'run a shell command');
  }
  return { kind: 'failed', reason: `the tool result was a failure: ${excerpt(last.result.output)}` };
}

const RUNNING = /Process running with session ID (\d+)/;

/** A command the agent's shell left running (Codex yields after yield_time_ms): read on until it ends. */
function pollCall(c: Ctx, last: PhaseResult, prior: PhaseResult[]): PlannedCall | null {
  const poll = c.tools.poll;
  const m = RUNNING.exec(last.result.output);
  if (!poll || last.kind !== 'shell' || !m || last.result.output.includes(okMarker(token(c, last.marks)))) return null;
  const n = prior.filter((p) => p.phase.startsWith('p')).length + 1;
  const input: Record<string, unknown> = { [poll.session]: Number(m[1]), [poll.chars]: '' };
  if (poll.yieldMs) input[poll.yieldMs] = 30_000;
  return { phase: `p${n}`, marks: last.marks, kind: 'shell', name: poll.name, type: 'function', input };
}

/** The shell body the last action ran (an edit's new text comes from its read). */
function bodyOfLast(c: Ctx, prior: PhaseResult[]): string {
  if (c.step.action !== 'edit') return shellBody(c.step);
  const read = readSoFar(prior);
  const text = 'text' in read ? read.text : '';
  return shellBody(
    c.step,
    text.replace(c.step.old, () => (c.step as { new: string }).new),
  );
}

/** One line of `text` for a message: its start and its end (where tools put the reason), at most `max` characters. */
export function excerpt(text: string, max = 400): string {
  const t = text.replace(/\s+/g, ' ').trim();
  if (t.length <= max) return t || '(no output)';
  const head = Math.floor(max / 3);
  return `${t.slice(0, head)} ... ${t.slice(t.length - (max - head))}`;
}

const PHASE_OF = /pdb_(\d+)_([rae]|[rp]\d+)$/;

function ourCalls(calls: HistoryCall[]): Map<string, HistoryCall> {
  const out = new Map<string, HistoryCall>();
  for (const c of calls) {
    const m = PHASE_OF.exec(c.id);
    if (m) out.set(`${m[1]}_${m[2]}`, c);
  }
  return out;
}

/** What to answer to `conv`, given the cassette (and the root the agent runs in, when its request does not say). */
export function decide(cassette: Cassette, conv: Conversation, options: { root?: string | null; idPrefix: string }): Decision {
  const tools = toolCatalog(conv.tools, conv.text);
  const cwd = findCwd(conv.text) ?? options.root ?? null;
  const seen = ourCalls(conv.calls);
  for (const [index, step] of cassette.steps.entries()) {
    const c: Ctx = { step, index, tools, cwd };
    const prior: PhaseResult[] = [];
    for (;;) {
      const next = nextPhase(c, prior);
      if (next.kind === 'done') break;
      if (next.kind === 'unmappable')
        return {
          kind: 'unmappable',
          step: index,
          stepsDone: index,
          reason: `step ${describeStep(step, index)}: ${next.reason} (${describeCatalog(tools)})`,
        };
      if (next.kind === 'failed') {
        const reason = `step ${describeStep(step, index)}: ${next.reason}`;
        return {
          kind: 'step-failed',
          step: index,
          reason,
          stepsDone: index,
          reply: { kind: 'text', text: `pdb-env scripted model: ${reason}. Stopping here.` },
        };
      }
      const call = next.call;
      const had = seen.get(`${index}_${call.phase}`);
      const id = callId(options.idPrefix, index, call.phase);
      if (!had)
        return {
          kind: 'call',
          step: index,
          phase: call.phase,
          stepsDone: index,
          reply: { kind: 'call', id, name: call.name, type: call.type, input: call.input },
        };
      if (!had.result)
        return { kind: 'unmappable', step: index, stepsDone: index, reason: `the request has no result for the call ${had.id}` };
      prior.push({ phase: call.phase, marks: call.marks, kind: call.kind, result: had.result });
    }
  }
  return { kind: 'final', stepsDone: cassette.steps.length, reply: { kind: 'text', text: cassette.final } };
}
