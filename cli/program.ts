// The command line on commander. The top level knows only names and summaries; a command's
// options and action load when it runs (a preSubcommand hook), so `pdb-env list` or `--help`
// never load the harness, the workloads, the reports or the ACP SDK.
import { CommanderError, Option } from '@commander-js/extra-typings';
import { PdbError } from '../model/errors.js';
import { packageVersion } from '../model/paths.js';
import { commandStub, jsonOption, rootCommand, storeOption, type CliContext, type CommandEntry, type CommandStub } from './context.js';

const sessions = () => import('./commands/sessions.js');
const store = () => import('./commands/store.js');
const runtime = () => import('./commands/runtime.js');
const policy = () => import('./commands/policy.js');
const bench = () => import('./commands/bench.js');
const validate = () => import('./commands/validate.js');
const report = () => import('./commands/report.js');
const wayBack = () => import('./commands/way-back.js');
const agent = () => import('./commands/agent.js');
const model = () => import('./commands/model.js');
const du = () => import('./commands/du.js');
const completion = () => import('./commands/completion.js');
const hook = () => import('./commands/hook.js');

/** Every command, in the order `pdb-env --help` lists them. */
export const COMMANDS: readonly CommandEntry[] = [
  { name: 'create', summary: 'make a private session from the source (or an environment head)', load: sessions },
  { name: 'run', summary: 'run a command in a session root (shared writer lease)', load: sessions },
  { name: 'enter', summary: 'open a shell in a session root', load: sessions },
  { name: 'path', summary: 'print a session root', load: sessions },
  { name: 'list', summary: 'list sessions with backend, base, state and size', load: sessions },
  { name: 'du', summary: "each session's true disk cost (exclusive and shared bytes) and the store's", load: du },
  { name: 'checkpoint', summary: 'scan a quiesced session into a result Snapshot and Changeset', load: sessions },
  { name: 'diff', summary: 'list changes since the base', load: sessions },
  { name: 'publish', summary: "advance an environment head to a session's checkpoint (compare-and-set)", load: sessions },
  {
    name: 'export',
    summary: "write a session's last checkpoint out: a git patch file, or a commit on a branch of the source repository",
    load: wayBack,
  },
  { name: 'apply', summary: "write a session's last checkpoint back into its source directory (per-path compare-and-set)", load: wayBack },
  { name: 'envs', summary: 'list environments and their heads', load: sessions },
  { name: 'discard', summary: 'remove a session (idempotent)', load: sessions },
  { name: 'ps', summary: 'list the processes running in a session, with their ports', load: runtime },
  { name: 'stop', summary: 'stop everything running in a session (TERM, then KILL)', load: runtime },
  { name: 'check-path', summary: "what a session's workspace policy allows for one path, and the rule that decided", load: policy },
  { name: 'backends', summary: 'list backends with availability probed on this host', load: store },
  { name: 'doctor', summary: 'list what a crash or reboot left behind', load: store },
  { name: 'gc', summary: 'finish or remove what doctor found, then free what nothing reaches', load: store },
  { name: 'verify', summary: 're-hash every object in the store', load: store },
  { name: 'pin', summary: 'keep a digest (and all it reaches) through gc; without one, list the pins', load: store },
  { name: 'unpin', summary: 'let gc collect a pinned digest again', load: store },
  {
    name: 'bench',
    summary: 'run a plan: randomized blocks of backend x workload cases, checked against the oracle, into a receipt',
    storeHelp:
      "parent directory of the run's temporary store, e.g. a btrfs or XFS mount (default: PDB_ENV_BENCH_STORE, the plan's store.dir, or the system temp dir); the run makes its own store inside and removes it",
    load: bench,
  },
  { name: 'validate', summary: 'check receipts, plans and policies against their schemas and the path-free rule', load: validate },
  { name: 'report', summary: 'roll receipts from one or many hosts into a decision report (Markdown, HTML, JSON)', load: report },
  { name: 'agent', summary: 'real agent CLIs: install the pinned versions, or run one in a session against a cassette', load: agent },
  { name: 'model', summary: 'the scripted model server: serve a cassette to real agents on 127.0.0.1', load: model },
  { name: 'hook', summary: "run as another tool's hook: Claude Code's worktrees become pdb-env sessions (hook claude-code)", load: hook },
  { name: 'completion', summary: 'print a bash, zsh or fish script that completes commands, options and session names', load: completion },
  { name: '__complete', summary: 'names for shell completion (sessions, envs), one a line', hidden: true, load: completion },
];

export function createProgram(ctx: CliContext): ReturnType<typeof rootCommand> {
  const program = rootCommand(packageVersion());
  ctx.commands = COMMANDS;
  const stubs = new Map(
    COMMANDS.map((entry) => [entry.name, { entry, cmd: commandStub(program, entry.name, entry.summary, entry.hidden) }]),
  );

  /** Load a command's definition onto its stub, then add the global options under their own heading. */
  const define = async (name: string): Promise<CommandStub | undefined> => {
    const found = stubs.get(name);
    if (!found) return undefined;
    ctx.command = name;
    const defineCommand = (await found.entry.load()).commands[name];
    if (!defineCommand) throw new PdbError('E_INTERNAL', `cli: no definition for the ${name} command`);
    defineCommand(found.cmd, ctx);
    // Declared on every command too, because commander hands everything after a command's own
    // option to that command (`pdb-env create a --from D --json`).
    const global = 'Global options:';
    found.cmd
      .addOption(storeOption(found.entry.storeHelp).helpGroup(global))
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
      if (!cmd) throw new PdbError('E_USAGE', `unknown command '${name}'`, { hint: 'pdb-env --help lists the commands.' });
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
