import { parseArgs, type ParseArgsConfig } from 'node:util';
import { PdbError } from '../model/errors.js';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>;

export interface ParsedArgs {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
  /** Everything after a bare `--`. */
  rest: string[];
  json: boolean;
  store?: string;
}

export interface Command {
  name: string;
  summary: string;
  /** Usage lines and examples, shown by --help. */
  help: string;
  options?: OptionSpec;
  /** Exact number of positionals, or [min, max]. */
  positionals?: number | [number, number];
  run(args: ParsedArgs): Promise<number>;
}

export const GLOBAL_OPTIONS: OptionSpec = {
  store: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

export function parseCommandArgs(cmd: Command, argv: string[]): ParsedArgs & { help: boolean } {
  const dashdash = argv.indexOf('--');
  const head = dashdash >= 0 ? argv.slice(0, dashdash) : argv;
  const rest = dashdash >= 0 ? argv.slice(dashdash + 1) : [];
  let parsed;
  try {
    parsed = parseArgs({ args: head, options: { ...GLOBAL_OPTIONS, ...cmd.options }, allowPositionals: true, strict: true });
  } catch (err) {
    throw new PdbError('E_USAGE', `${cmd.name}: ${(err as Error).message}`, { hint: `pdb-env ${cmd.name} --help shows the options.` });
  }
  const values = parsed.values as ParsedArgs['values'];
  const help = values.help === true;
  if (!help && cmd.positionals !== undefined) {
    const [min, max] = typeof cmd.positionals === 'number' ? [cmd.positionals, cmd.positionals] : cmd.positionals;
    const n = parsed.positionals.length;
    if (n < min || n > max) {
      const want = min === max ? `${min}` : `${min} to ${max}`;
      throw new PdbError('E_USAGE', `${cmd.name} takes ${want} argument(s), got ${n}`, {
        hint: `pdb-env ${cmd.name} --help shows the usage.`,
      });
    }
  }
  return { values, positionals: parsed.positionals, rest, json: values.json === true, store: values.store as string | undefined, help };
}
