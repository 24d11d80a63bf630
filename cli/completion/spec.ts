// What shell completion knows, read from the program itself: every command of the table
// (command-table.cts) with the options and arguments its definition declares, so a new option completes
// without anyone editing the scripts. Each shell's script is rendered from this (bash.ts, zsh.ts, fish.ts).
import type { Argument, Option } from '@commander-js/extra-typings';
import { BACKEND_NAMES } from '../../backends/table.js';
import { COMMANDS, commandRow, type CommandName } from '../command-table.cjs';
import { commandStub, jsonOption, rootCommand, storeOption, type CliContext } from '../context.js';

/** What a word completes to: names looked up at completion time, fixed lists, paths, or nothing. */
export type ValueKind = 'session' | 'env' | 'backend' | 'shell' | 'subcommand' | 'dir' | 'file' | 'program' | 'any';

export interface OptionSpec {
  /** `--from`, and `-h` when it has a short form. */
  long: string;
  short: string | null;
  /** What its value completes to; null when it takes none. */
  value: ValueKind | null;
  description: string;
}

export interface CommandSpec {
  name: string;
  summary: string;
  options: OptionSpec[];
  /** What each operand completes to, by position; the last repeats when `variadic`. */
  operands: ValueKind[];
  variadic: boolean;
}

export interface CompletionSpec {
  commands: CommandSpec[];
  /** Options every command takes (and the bare program). */
  global: OptionSpec[];
  backends: readonly string[];
  shells: readonly string[];
}

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

/** Options whose value is a name the store knows, or one of the backends. */
const BY_OPTION: Record<string, ValueKind> = { '--backend': 'backend', '--fork': 'session', '--env': 'env' };

/** One line, without what the shells' syntaxes use (brackets, colons, quotes, backslashes). */
export function plain(text: string, max = 70): string {
  const line = text
    .split('\n')[0]!
    .replace(/[[\]:'"`\\$]/g, '')
    .trim();
  return line.length > max ? `${line.slice(0, max - 1).trimEnd()}…` : line;
}

function optionSpec(o: Option): OptionSpec {
  let value: ValueKind | null = null;
  if (o.required || o.optional) {
    const placeholder = /[<[]([^>\]]+)[>\]]/.exec(o.flags)?.[1] ?? '';
    value = BY_OPTION[o.long ?? ''] ?? (placeholder.startsWith('dir') ? 'dir' : placeholder.startsWith('file') ? 'file' : 'any');
  }
  return { long: o.long ?? o.flags, short: o.short ?? null, value, description: plain(o.description) };
}

/** An operand that names an existing session says so ("the session ..."); files and commands by their names. */
function operandKind(command: string, a: Argument): ValueKind {
  const name = a.name();
  if (name === 'name' && /\bsession\b/.test(a.description) && !/\bnew session\b/.test(a.description)) return 'session';
  if (name === 'file' || name === 'receipt') return 'file';
  if (name === 'shell') return 'shell';
  if (name === 'command') return command === 'help' ? 'subcommand' : 'program';
  return 'any';
}

/** Every visible command with its own options and operands, and the global options. */
export async function completionSpec(ctx: CliContext): Promise<CompletionSpec> {
  const root = rootCommand('0');
  const commands: CommandSpec[] = [];
  for (const name of Object.keys(COMMANDS) as CommandName[]) {
    const row = commandRow(name)!;
    if (row.hidden) continue;
    const cmd = commandStub(root, name, row.summary);
    await ctx.define?.(cmd, name);
    const args = cmd.registeredArguments;
    commands.push({
      name,
      summary: plain(row.summary),
      options: cmd.options.filter((o) => !o.hidden).map(optionSpec),
      operands: args.map((a) => operandKind(name, a)),
      variadic: args.at(-1)?.variadic ?? false,
    });
  }
  commands.push({ name: 'help', summary: 'show the help of a command', options: [], operands: ['subcommand'], variadic: false });
  const help: OptionSpec = { long: '--help', short: '-h', value: null, description: 'show this help' };
  return {
    commands,
    global: [optionSpec(storeOption()), optionSpec(jsonOption()), help],
    backends: BACKEND_NAMES,
    shells: SHELLS,
  };
}

/** How the scripts start pdb-env to look names up: the program as typed when it is a command, else this very one. */
export function selfCommand(): string[] {
  return [process.execPath, process.argv[1] ?? 'pdb-env'];
}
