// What the program and its command modules share: the context of one run, the shape of a command
// definition, the root command's global options, and the session service a command opens. Kept
// apart from program.ts so that no command imports the program or another command.
import { Command, Option } from '@commander-js/extra-typings';

/** One command as the program knows it before its module is loaded. */
export interface CommandEntry {
  name: string;
  summary: string;
  /** What --store means for this command, when not the session store. */
  storeHelp?: string;
  /** Left out of --help and of shell completion (the completion's own helper). */
  hidden?: boolean;
  load: () => Promise<{ commands: Record<string, DefineCommand> }>;
}

/** What main() and the running command share. */
export interface CliContext {
  /** The arguments commander parses (run looks at where `--` was). */
  argv: readonly string[];
  /** The command being run, once known (for the hint of a usage error). */
  command?: string;
  /** The exit status the action chose. */
  exitCode: number;
  /** Every command of the program (set by createProgram; shell completion lists them). */
  commands?: readonly CommandEntry[];
}

const STORE_HELP =
  'the store (default: PDB_ENV_STORE, the store around the current directory, or the per-source store under $XDG_DATA_HOME/pdb-env)';
export const storeOption = (help = STORE_HELP) => new Option('--store <dir>', help);
export const jsonOption = () => new Option('--json', 'machine-readable output (errors too)');

/** The root command with the options every command takes. */
export function rootCommand(version: string) {
  return (
    new Command('pdb-env')
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
      )
  );
}

/** A command before its definition is loaded: name and summary, all `pdb-env --help` shows. */
export function commandStub(program: ReturnType<typeof rootCommand>, name: string, summary: string, hidden = false) {
  return program.command(name, { hidden }).description(summary);
}

export type CommandStub = ReturnType<typeof commandStub>;

/** Adds a command's arguments, options, help and action to its stub. */
export type DefineCommand = (cmd: CommandStub, ctx: CliContext) => void;

export { openService } from './open-service.js';
