// A turn hook's work (a checkpoint before or after an agent's turn), for two callers that must do
// exactly the same: commander's action of `pdb-env hook AGENT` (cli/commands/hook.ts) and the
// pdb-env daemon (cli/cheap-path.ts runHookFor), which runs a plain turn hook for native/client.c
// with the stdin the client read and forwarded. What the agent reads (stdout, the exit status)
// and what is said on stderr come out of the same functions on both paths.
import { parseArgs } from 'node:util';
import type { HookInput } from './claude-code.js';

/** Where a hook's output goes: the process's stdout and stderr, or the daemon's client. */
export interface HookIo {
  out(text: string): void;
  err(text: string): void;
}

/** Claude Code's UserPromptSubmit or Stop; its exit status (1: no checkpoint, said on stderr, and Claude goes on). */
export async function claudeTurn(input: HookInput, store: string | undefined, io: HookIo): Promise<number> {
  const { hookTurn } = await import('./claude-code.js');
  // Never on stdout (a UserPromptSubmit hook's stdout goes into the model's context), never exit 2
  // (it would block the prompt, or keep Claude from stopping).
  try {
    await hookTurn(input, { store, say: (line) => io.err(`${line}\n`) });
    return 0;
  } catch (err) {
    io.err(`pdb-env: no checkpoint for this turn: ${(err as Error).message}\n`);
    return 1;
  }
}

export type DialectAgent = 'codex' | 'cursor' | 'gemini';

/** Codex, Cursor or Gemini CLI: a turn from the payload `text` gives; whatever happened, the status the agent reads as "go on". */
export async function agentTurn(
  agent: DialectAgent,
  text: () => Promise<string> | string,
  g: { store?: string; json?: boolean },
  io: HookIo,
): Promise<number> {
  const { HOOK_DIALECTS, hookAgentTurn } = await import('./dialects.js');
  const d = HOOK_DIALECTS[agent];
  const say = (line: string) => io.err(`${line}\n`);
  let phase: 'before' | 'after' = 'after';
  try {
    const r = await hookAgentTurn(agent, await text(), { store: g.store, say });
    phase = r.phase;
    if (g.json) say(JSON.stringify(r));
  } catch (err) {
    say(`pdb-env: no checkpoint for this turn: ${(err as Error).message}`);
  }
  io.out(d.stdout(phase));
  return d.goOnStatus;
}

/**
 * For the daemon: the exit status of `args` (`hook AGENT [--store DIR] [--json] [PAYLOAD]`) run
 * with `stdin`, or null, having done nothing, when it is not a plain turn hook (any other option,
 * a Claude Code event other than a turn's, input it cannot parse, a payload it would read from a
 * stdin the client did not forward): the client then runs it itself, with the same stdin.
 */
export async function turnHookCall(args: readonly string[], stdin: string | undefined, io: HookIo): Promise<number | null> {
  if (args[0] !== 'hook') return null;
  let parsed: { values: { store?: string; json?: boolean }; positionals: string[] };
  try {
    parsed = parseArgs({
      args: args.slice(1),
      options: { store: { type: 'string' }, json: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    });
  } catch {
    return null;
  }
  const [agent, payload, ...more] = parsed.positionals;
  if (more.length > 0 || parsed.positionals.some((p) => p === '' || p.startsWith('-'))) return null;
  if (agent === 'claude-code') {
    if (payload !== undefined || stdin === undefined) return null;
    const { parseHookInput, TURN_EVENTS } = await import('./claude-code.js');
    let input: HookInput;
    try {
      input = parseHookInput(stdin);
    } catch {
      return null; // the client's own run says what is wrong with it
    }
    if (!(TURN_EVENTS as readonly string[]).includes(input.event)) return null;
    return claudeTurn(input, parsed.values.store, io);
  }
  if (agent !== 'codex' && agent !== 'cursor' && agent !== 'gemini') return null;
  const { HOOK_DIALECTS } = await import('./dialects.js');
  // As the action reads it: the argument when the agent passes the payload so, else stdin.
  const text = HOOK_DIALECTS[agent].input === 'argv' && payload !== undefined ? payload : payload === undefined ? stdin : undefined;
  if (text === undefined) return null;
  return agentTurn(agent, () => text, parsed.values, io);
}
