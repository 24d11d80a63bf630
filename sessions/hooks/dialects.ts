// Other agents' hook dialects, one typed row each (STYLE.md: one typed table per open set): the
// events that mark a turn, how to read the payload (cwd, session and turn id, prompt), what the
// hook must print on stdout and which exit status means "go on". `hookAgentTurn` checkpoints the
// session whose root holds the payload's cwd, labelled with the agent and its turn or prompt.
//
// Checked against (docs/agents.md says where each fact comes from):
// - Codex CLI 0.171.0: `notify = [PROGRAM, ARGS...]` in config.toml runs PROGRAM with one JSON
//   argument after each turn: {"type":"agent-turn-complete","thread-id","turn-id","cwd",
//   "input-messages":[...],"last-assistant-message"}. Only after the turn: the "before" of a turn is
//   the checkpoint before it in the session's log (the previous turn's after, or the session's base).
// - Cursor hooks.json version 1: beforeSubmitPrompt (prompt) and stop, payloads with
//   conversation_id, generation_id, workspace_roots; it reads JSON on stdout (beforeSubmitPrompt:
//   {"continue":true}; stop: {}).
// - Gemini CLI 0.61.0 (its bundled docs/hooks/reference.md): settings.json "hooks" BeforeAgent
//   (prompt) and AfterAgent (prompt, prompt_response), base fields session_id, cwd, hook_event_name;
//   stdout is parsed as JSON, exit 0 is success, 2 blocks, others warn and go on.
import { isAbsolute } from 'node:path';
import { PdbError } from '../../model/errors.js';
import { SessionService } from '../service.js';
import { promptLabel, sessionHolding } from './claude-code.js';

/** At most this much payload is read: a turn's payload is prompt-sized, not a transcript. */
export const MAX_PAYLOAD_BYTES = 1 << 20;

export type TurnPhase = 'before' | 'after';

export interface TurnPayload {
  phase: TurnPhase;
  cwd: string | null;
  /** The agent's own id of the turn (Codex turn-id, Cursor generation_id), or null. */
  turn: string | null;
  prompt: string;
}

export interface HookDialect {
  /** The product and the version its payloads were checked against. */
  product: string;
  checkedAgainst: string;
  /** Where the hook comes in: on stdin (a JSON object), or as the last command-line argument (Codex notify). */
  input: 'stdin' | 'argv';
  /** The agent's event name for each phase it has (Codex: only after). */
  events: Partial<Record<TurnPhase, string>>;
  /** The payload read: its phase, cwd, turn and prompt; E_HOOK_INPUT for anything else. */
  read(doc: Record<string, unknown>): TurnPayload;
  /** What stdout must carry for a phase ('' for nothing). */
  stdout(phase: TurnPhase): string;
  /** The exit status the agent treats as "go on" even when pdb-env could not checkpoint. */
  goOnStatus: number;
  /** The settings that install the hook, for `command` (the pdb-env invocation). */
  settings(command: string): string;
}

const bad = (agent: string, message: string) =>
  new PdbError('E_HOOK_INPUT', message, {
    hint: `pdb-env hook ${agent} reads the payload ${agent} sends its hook (pdb-env hook ${agent} --print-settings installs it).`,
  });

const str = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v.trim() : null);

function eventOf(agent: string, doc: Record<string, unknown>, field: string, events: Partial<Record<TurnPhase, string>>): TurnPhase {
  const e = doc[field];
  for (const [phase, name] of Object.entries(events)) if (e === name) return phase as TurnPhase;
  throw bad(agent, `unknown event ${JSON.stringify(e ?? null)} in "${field}": pdb-env answers ${Object.values(events).join(' and ')}`);
}

export const HOOK_DIALECTS = {
  codex: {
    product: 'codex-cli',
    checkedAgainst: '0.171.0',
    input: 'argv',
    events: { after: 'agent-turn-complete' },
    read(doc) {
      eventOf('codex', doc, 'type', this.events);
      const msgs = Array.isArray(doc['input-messages']) ? doc['input-messages'] : [];
      return { phase: 'after', cwd: str(doc.cwd), turn: str(doc['turn-id']), prompt: String(msgs.at(-1) ?? '') };
    },
    stdout: () => '',
    goOnStatus: 0,
    settings: (command) => `notify = ${JSON.stringify(['sh', '-c', `${command} "$1"`, 'pdb-env-notify'])}\n`,
  },
  cursor: {
    product: 'cursor',
    checkedAgainst: 'hooks.json version 1 (cursor.com/docs/agent/hooks)',
    input: 'stdin',
    events: { before: 'beforeSubmitPrompt', after: 'stop' },
    read(doc) {
      const phase = eventOf('cursor', doc, 'hook_event_name', this.events);
      const roots = Array.isArray(doc.workspace_roots) ? doc.workspace_roots : [];
      return { phase, cwd: str(roots[0]) ?? str(doc.cwd), turn: str(doc.generation_id), prompt: String(doc.prompt ?? '') };
    },
    stdout: (phase) => (phase === 'before' ? '{"continue":true}\n' : '{}\n'),
    goOnStatus: 0,
    settings: (command) =>
      `${JSON.stringify({ version: 1, hooks: { beforeSubmitPrompt: [{ command }], stop: [{ command }] } }, null, 2)}\n`,
  },
  gemini: {
    product: 'gemini-cli',
    checkedAgainst: '0.61.0',
    input: 'stdin',
    events: { before: 'BeforeAgent', after: 'AfterAgent' },
    read(doc) {
      const phase = eventOf('gemini', doc, 'hook_event_name', this.events);
      return { phase, cwd: str(doc.cwd), turn: null, prompt: String(doc.prompt ?? '') };
    },
    stdout: () => '{}\n',
    goOnStatus: 0,
    settings: (command) => {
      const entry = [{ hooks: [{ type: 'command', name: 'pdb-env checkpoint', command, timeout: 60000 }] }];
      return `${JSON.stringify({ hooks: { BeforeAgent: entry, AfterAgent: entry } }, null, 2)}\n`;
    },
  },
} as const satisfies Record<string, HookDialect>;

export type DialectAgent = keyof typeof HOOK_DIALECTS;
export const DIALECT_AGENTS = Object.keys(HOOK_DIALECTS) as DialectAgent[];

/** The payload text as an object; E_HOOK_INPUT when empty, too large, not JSON or not an object. */
export function parsePayload(agent: DialectAgent, text: string): Record<string, unknown> {
  if (Buffer.byteLength(text) > MAX_PAYLOAD_BYTES) throw bad(agent, `the payload is over ${MAX_PAYLOAD_BYTES} bytes`);
  if (text.trim() === '') throw bad(agent, 'no payload');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw bad(agent, `the payload is not JSON: ${(err as Error).message}`);
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw bad(agent, 'the payload is not a JSON object');
  return doc as Record<string, unknown>;
}

export interface AgentTurnResult {
  agent: DialectAgent;
  phase: TurnPhase;
  /** The session checkpointed, or null when the cwd is in none (nothing done). */
  session: string | null;
  number?: number;
  label?: string;
  /** True when the log's last checkpoint already has this label (a hook fired twice): nothing new. */
  repeated?: boolean;
}

/** The label of a turn's checkpoint: "AGENT before turn ID: PROMPT" (ID when the agent gives one). */
export function turnLabel(agent: DialectAgent, p: TurnPayload): string {
  const prompt = promptLabel(p.prompt);
  return `${agent} ${p.phase} turn${p.turn ? ` ${p.turn.slice(0, 40)}` : ''}${prompt ? `: ${prompt}` : ''}`;
}

/** One hook call: a checkpoint of the session holding the payload's cwd, or nothing outside a session. */
export async function hookAgentTurn(
  agent: DialectAgent,
  text: string,
  o: { store?: string; say: (l: string) => void },
): Promise<AgentTurnResult> {
  const dialect: HookDialect = HOOK_DIALECTS[agent];
  const p = dialect.read(parsePayload(agent, text));
  const at = p.cwd && isAbsolute(p.cwd) ? sessionHolding(p.cwd, o.store) : null;
  if (!at) {
    o.say(`pdb-env: ${p.cwd ?? '(no cwd)'} is in no pdb-env session: no checkpoint`);
    return { agent, phase: p.phase, session: null };
  }
  const svc = await SessionService.open(at.store);
  const label = turnLabel(agent, p);
  const { readLogLines, turnMark } = await import('../history/log.js');
  const lines = readLogLines(svc.store, at.name);
  if (lines.at(-1)?.label === label) {
    o.say(`pdb-env: checkpoint ${lines.length} of ${at.name} is already "${label}": nothing new`);
    return { agent, phase: p.phase, session: at.name, number: lines.length, label, repeated: true };
  }
  const k = await svc.checkpoint(at.name, { label, turn: turnMark(lines, agent, p.phase, p.turn) });
  o.say(`pdb-env: checkpoint ${k.number} of ${at.name} (${label})`);
  return { agent, phase: p.phase, session: at.name, number: k.number, label };
}
