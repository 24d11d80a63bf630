// What the program and its command modules share: the context of one run, the shape of a command
// definition (typed from the command table), commander options made from the table's
// declarations, and the root command with the global options. Kept apart from program.ts so that
// no command imports the program or another command.
import { Command, Option, type OptionValues as CommanderValues } from '@commander-js/extra-typings';
import {
  GLOBAL_OPTIONS,
  type CheapCall,
  type CheapCommandName,
  type COMMANDS,
  type CommandModule,
  type CommandName,
  type CommandOptions,
  type GlobalValues,
  type OptionDecl,
  type OptionDecls,
  type OptionValues,
} from './command-table.cjs';

/** What main() and the running command share. */
export interface CliContext {
  /** The arguments commander parses (run looks at where `--` was). */
  argv: readonly string[];
  /** The command being run, once known (for the hint of a usage error). */
  command?: string;
  /** The exit status the action chose. */
  exitCode: number;
  /** Define the command `name` onto a stub: its options from the table, then its module's definition (set by createProgram; shell completion uses it). */
  define?: (stub: CommandStub, name: CommandName) => Promise<void>;
}

const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

/** Commander's option for the declaration of `--long` (`help`: another description). */
export function commanderOption(long: string, d: OptionDecl, help: string = d.description): Option {
  const o = new Option(d.type === 'boolean' ? `--${long}` : `--${long} <${d.value}>`, help);
  if (d.type === 'string' && d.multiple === true) o.argParser(collect);
  if (d.type === 'string' && d.required === true) o.makeOptionMandatory();
  return o as Option;
}

/** Add the declared options to `cmd`, in their order. */
export function addOptions<C extends { addOption(o: Option): unknown }>(cmd: C, decls: OptionDecls | undefined): C {
  for (const [long, d] of Object.entries(decls ?? {})) cmd.addOption(commanderOption(long, d));
  return cmd;
}

export const storeOption = (help?: string) => commanderOption('store', GLOBAL_OPTIONS.store, help);
export const jsonOption = () => commanderOption('json', GLOBAL_OPTIONS.json);

/** The root command with the options every command takes. */
export function rootCommand(version: string): Command<[], GlobalValues> {
  const root = new Command('pdb-env')
    .usage('<command> [options]     (bare pdb-env lists sessions)')
    .version(version, '-v, --version', 'print the version')
    .addOption(storeOption())
    .addOption(jsonOption())
    // Errors become PdbErrors printed by main(); subcommands inherit both settings.
    .exitOverride()
    .configureOutput({ outputError: () => {} })
    .addHelpText('before', `pdb-env ${version}: private workspaces for coding agents from one pinned base\n`)
    .addHelpText(
      'after',
      '\nEvery command takes --help, --json and --store DIR.\nGuarantee: workspace isolation for trusted agents (securityIsolation: false).',
    );
  return root as unknown as Command<[], GlobalValues>;
}

/** A command before its definition is loaded: name and summary, all `pdb-env --help` shows. */
export function commandStub(program: ReturnType<typeof rootCommand>, name: string, summary: string, hidden = false) {
  return program.command(name, { hidden }).description(summary);
}

export type CommandStub = ReturnType<typeof commandStub>;

type Row<N extends CommandName> = (typeof COMMANDS)[N];
/** A command (or subcommand) whose options `O` the table declares, under the global ones. */
export type TypedCommand<O extends CommanderValues> = Command<[], O, GlobalValues>;
/** The stubs of a command's subcommands, by name, each with its declared options. */
export type SubcommandStubs<N extends CommandName> =
  Row<N> extends { subcommands: infer S } ? { [K in keyof S]: TypedCommand<S[K] extends { options: infer D } ? OptionValues<D> : {}> } : {};

/** Adds a command's arguments, help and action (and its subcommands') to the stub that holds its table options. */
export type DefineCommand<N extends CommandName> = (cmd: TypedCommand<CommandOptions<N>>, ctx: CliContext, sub: SubcommandStubs<N>) => void;

/** The definitions a command module exports: one for each row of the table that names the module. */
export type CommandDefinitions<M extends CommandModule> = {
  [N in CommandName as Row<N>['module'] extends M ? N : never]: DefineCommand<N>;
};

/** What a command module exports: its definitions and, for a cheap command, the action a plain call runs without commander. */
export interface CommandModuleExports {
  commands: { [N in CommandName]?: DefineCommand<N> };
  cheap?: { [N in CheapCommandName]?: (call: CheapCall<N>) => Promise<void> };
}

export { openService } from './open-service.js';
