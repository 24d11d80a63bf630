// The command line on commander, built from the command table (command-table.cts): each row is a
// stub with its name and summary until it runs; then a preSubcommand hook gives it the table's
// options and loads its module (command-modules.ts) for the rest, so `pdb-env list` or `--help`
// never load the harness, the workloads, the reports or the ACP SDK.
import { CommanderError, Option } from '@commander-js/extra-typings';
import { didYouMeanText } from '../model/did-you-mean.js';
import { PdbError } from '../model/errors.js';
import { packageVersion } from '../model/paths.js';
import { COMMAND_MODULES } from './command-modules.js';
import { COMMANDS, commandRow, type CommandName } from './command-table.cjs';
import {
  addOptions,
  commandStub,
  jsonOption,
  rootCommand,
  storeOption,
  type CliContext,
  type CommandModuleExports,
  type CommandStub,
} from './context.js';

/** Give a command's stub its options and subcommands from the table, then its module's definition. */
async function defineCommand(stub: CommandStub, name: CommandName, ctx: CliContext): Promise<void> {
  const row = commandRow(name)!;
  addOptions(stub, row.options);
  const sub = Object.fromEntries(
    Object.entries(row.subcommands ?? {}).map(([s, r]) => [s, addOptions(stub.command(s).description(r.summary), r.options)]),
  );
  const mod: CommandModuleExports = await COMMAND_MODULES[COMMANDS[name].module]();
  const define = mod.commands[name] as ((cmd: CommandStub, ctx: CliContext, sub: object) => void) | undefined;
  if (!define) throw new PdbError('E_INTERNAL', `cli: no definition for the ${name} command`);
  define(stub, ctx, sub);
}

export function createProgram(ctx: CliContext): ReturnType<typeof rootCommand> {
  const program = rootCommand(packageVersion());
  ctx.define = (stub, name) => defineCommand(stub, name, ctx);
  const stubs = new Map(
    (Object.keys(COMMANDS) as CommandName[]).map((name) => {
      const row = commandRow(name)!;
      return [name as string, { name, cmd: commandStub(program, name, row.summary, row.hidden) }];
    }),
  );

  /** Define a command onto its stub, then add the global options under their own heading. */
  const define = async (name: string): Promise<CommandStub | undefined> => {
    const found = stubs.get(name);
    if (!found) return undefined;
    ctx.command = name;
    await defineCommand(found.cmd, found.name, ctx);
    // Declared on every command too, because commander hands everything after a command's own
    // option to that command (`pdb-env create a --from D --json`).
    const global = 'Global options:';
    found.cmd
      .addOption(storeOption(commandRow(name)!.storeHelp).helpGroup(global))
      .addOption(jsonOption().helpGroup(global))
      .addHelpOption(new Option('-h, --help', 'show this help').helpGroup(global));
    return found.cmd;
  };
  program.hook('preSubcommand', async (_program, sub) => {
    await define(sub.name());
  });
  // Our own help command: commander's would print a command's help without loading its definition.
  program
    .helpCommand(false)
    .command('help')
    .description('show the help of a command (or this list)')
    .argument('[command]', 'the command')
    .action(async (name) => {
      if (name === undefined) return void program.outputHelp();
      const cmd = await define(name);
      if (!cmd)
        throw new PdbError('E_USAGE', `unknown command '${name}'`, {
          hint: `${didYouMeanText(name, Object.keys(COMMANDS))}pdb-env --help lists the commands.`,
        });
      cmd.outputHelp();
    });
  return program;
}

/**
 * Bare `pdb-env` lists sessions, also with global options only (`pdb-env --store D`): when no
 * word before `--` can be a command, `list` is put in front.
 */
export function withDefaultCommand(program: { options: readonly Option[] }, argv: readonly string[]): string[] {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--' || !arg.startsWith('-') || ['-h', '--help', '-v', '--version'].includes(arg)) return [...argv];
    if (program.options.find((o) => o.long === arg || o.short === arg)?.required) i++;
  }
  return ['list', ...argv];
}

/**
 * Commander's message as a usage error in pdb-env's format: "error: unknown option '--frm'\n(Did
 * you mean --from?)" becomes E_USAGE "create: unknown option '--frm'" with the suggestion in the hint.
 */
export function usageError(err: CommanderError, command: string | undefined): PdbError {
  const [first = err.message, ...more] = err.message.replace(/^error: /, '').split('\n');
  const suggestion = more
    .join(' ')
    .trim()
    .replace(/^\((.*)\)$/, '$1');
  const help = command ? `pdb-env ${command} --help shows the usage.` : 'pdb-env --help lists the commands.';
  return new PdbError('E_USAGE', command ? `${command}: ${first}` : first, {
    hint: suggestion ? `${suggestion} ${help}` : help,
    cause: err,
  });
}
