// Every command of pdb-env, one row each: the one place that names them. A row holds the
// command's summary, the module that defines the rest (its arguments, help and action; program.ts
// loads it when the command runs), its options as data, and for a command an agent loop calls
// between steps (checkpoint, restore) a `cheap` flag. Commander's options are built from these declarations (program.ts;
// shell completion reads them back from commander), and a plain call of a cheap command is parsed
// by util.parseArgs configured from the same declarations (cheapCall below) and run without
// commander. CommonJS and importing nothing of pdb-env, so that the executable (pdb-env.cts) reads
// it before Node's ES module loader starts; a list only an ES module holds (the backends, the
// schemas) is shown by its command's own help.
import { parseArgs } from 'node:util';

/** A flag: `--verify`. */
export interface FlagOption {
  readonly type: 'boolean';
  readonly description: string;
}

/** An option with a value, `--from <dir>` (`value` names it in help); `multiple`: repeatable, its values in order; `required`: mandatory. */
export interface ValueOption {
  readonly type: 'string';
  readonly value: string;
  readonly description: string;
  readonly multiple?: boolean;
  readonly required?: boolean;
}

export type OptionDecl = FlagOption | ValueOption;
/** Options by their long name (`dry-run` for `--dry-run`), in the order help lists them. */
export type OptionDecls = { readonly [long: string]: OptionDecl };

export interface SubcommandRow {
  readonly summary: string;
  readonly options?: OptionDecls;
}

export interface CommandRow {
  readonly summary: string;
  /** The file under cli/commands/ that defines it (program.ts loads it through command-modules.ts). */
  readonly module: string;
  readonly options?: OptionDecls;
  /** Its subcommands (`agent install`), each with its summary and options; its module defines the rest. */
  readonly subcommands?: { readonly [name: string]: SubcommandRow };
  /** What --store means for this command, when not the session store. */
  readonly storeHelp?: string;
  /** Left out of --help and of shell completion (the completion's own helper). */
  readonly hidden?: boolean;
  /**
   * A plain call (its own options and the global ones, each at most once, at most `operands`
   * operands, no `--`) runs on the cheap path (cheap-path.ts): from the checkpoint bundle, without
   * commander. Anything else, --help included, goes to commander, which parses and explains.
   */
  readonly cheap?: { readonly operands: number };
}

/** The options every command takes (and the bare program). */
export const GLOBAL_OPTIONS = {
  store: {
    type: 'string',
    value: 'dir',
    description:
      'the store (default: PDB_ENV_STORE, the store around the current directory, or the per-source store under $XDG_DATA_HOME/pdb-env)',
  },
  json: { type: 'boolean', description: 'machine-readable output (errors too)' },
} as const satisfies OptionDecls;

const verify = { type: 'boolean', description: 're-hash every file instead of trusting unchanged stat signatures' } as const;
const backendModule = (more: string) =>
  ({
    type: 'string',
    value: 'file',
    description: `your own backend: a module whose default export implements the backend contract (docs/your-backend.md)${more}`,
  }) as const;

/** Every command, in the order `pdb-env --help` lists them. */
export const COMMANDS = {
  create: {
    summary: 'make a private session from the source (or an environment head)',
    module: 'sessions',
    options: {
      from: { type: 'string', value: 'dir', description: 'source directory (default: .)' },
      backend: {
        type: 'string',
        value: 'name',
        description: 'the backend (default: full-copy; pdb-env backends lists those that run here)',
      },
      'backend-module': backendModule(''),
      env: { type: 'string', value: 'env', description: "start from environment ENV's head instead of importing DIR" },
      fork: {
        type: 'string',
        value: 'other',
        description: "start from session OTHER's last checkpoint (the new session's source is OTHER's)",
      },
      base: {
        type: 'string',
        value: 'digest',
        description: "start from a Snapshot already in the store (a checkpoint's result, an earlier import) instead of importing DIR",
      },
    },
  },
  run: {
    summary: 'run a command in a session root (shared writer lease)',
    module: 'sessions',
    options: {
      checkpoint: { type: 'boolean', description: 'checkpoint the session when the command exits, labelled with the command line' },
    },
  },
  enter: { summary: 'open a shell in a session root', module: 'sessions' },
  path: { summary: 'print a session root', module: 'sessions' },
  list: {
    summary: 'list sessions with backend, base, state and size',
    module: 'sessions',
    options: {
      du: {
        type: 'boolean',
        description: "measure each session's disk cost now (as pdb-env du does) instead of showing the last measurement",
      },
    },
  },
  du: { summary: "each session's true disk cost (exclusive and shared bytes) and the store's", module: 'du' },
  checkpoint: {
    summary: 'scan a quiesced session into a result Snapshot and Changeset',
    module: 'checkpoint',
    options: { verify, label: { type: 'string', value: 'text', description: 'a name for the checkpoint in pdb-env log' } },
    cheap: { operands: 1 },
  },
  log: {
    summary: "a session's checkpoints, newest first: number, time, label, Snapshot, Changeset, paths added/modified/deleted",
    module: 'history',
  },
  restore: {
    summary: "make a session's root exactly one of its checkpoints, in place (after a checkpoint of it as it is)",
    module: 'history',
    options: {
      to: {
        type: 'string',
        value: 'ref',
        required: true,
        description: "a checkpoint number (pdb-env log), a Snapshot or Changeset digest prefix, base, or label:LABEL (a turn's label)",
      },
    },

    // Restoring a turn is as frequent as taking one, and its own work for a few paths is a fraction of commander's start-up.
    cheap: { operands: 1 },
  },
  diff: {
    summary: 'list changes since the base, or between two checkpoints',
    module: 'sessions',
    options: {
      from: {
        type: 'string',
        value: 'ref',
        description: 'compare checkpoint REF (a number, a digest prefix, base, label:LABEL; SESSION@REF: of another session) ...',
      },
      to: { type: 'string', value: 'ref', description: '... with checkpoint REF (default: the last checkpoint; SESSION@REF as --from)' },
      verify,
      patch: { type: 'boolean', description: "print the changes as git's binary patch (made by git; git apply takes it)" },
      stat: { type: 'boolean', description: "print git's diffstat of the changes" },
    },
  },
  publish: {
    summary: "advance an environment head to a session's checkpoint (compare-and-set)",
    module: 'sessions',
    options: {
      env: { type: 'string', value: 'env', description: 'the environment (default: main)' },
      expect: {
        type: 'string',
        value: 'digest',
        description: 'the head you based your work on (required; a unique prefix of 7+ hex characters will do)',
      },
      rebase: { type: 'boolean', description: "merge the checkpoint's changes onto DIGEST when it was built on an older head" },
    },
  },
  export: {
    summary: "write a session's last checkpoint out: a git patch file, or a commit on a branch of the source repository",
    module: 'way-back',
    options: {
      patch: { type: 'string', value: 'file', description: "write git's binary patch of the checkpoint's changes to FILE (atomically)" },
      git: { type: 'boolean', description: 'make a commit of the checkpoint on a branch of the source repository (plumbing only)' },
      branch: { type: 'string', value: 'branch', description: 'with --git: the branch (default: pdb-env/NAME); it moves only forward' },
      message: { type: 'string', value: 'message', description: 'with --git: the commit message' },
    },
  },
  apply: {
    summary: "write a session's last checkpoint back into its source directory (per-path compare-and-set)",
    module: 'way-back',
    options: {
      to: { type: 'string', value: 'dir', description: 'the directory to write into (default: the source the session was imported from)' },
    },
  },
  envs: { summary: 'list environments and their heads', module: 'sessions' },
  discard: {
    summary: 'remove a session (idempotent)',
    module: 'sessions',
    options: { force: { type: 'boolean', description: 'stop what still runs in it first, and skip the lease check' } },
  },
  ps: { summary: 'list the processes running in a session, with their ports', module: 'runtime' },
  stop: {
    summary: 'stop everything running in a session (TERM, then KILL)',
    module: 'runtime',
    options: { grace: { type: 'string', value: 'ms', description: 'how long to wait after TERM before KILL (default 5000)' } },
  },
  'check-path': {
    summary: "what a session's workspace policy allows for one path, and the rule that decided",
    module: 'check-path',
    options: {
      write: { type: 'boolean', description: 'ask about writing (default: reading)' },
      policy: { type: 'string', value: 'file', description: 'narrow the policy with this one (schemas/workspace-policy.schema.json)' },
    },
  },
  backends: { summary: 'list backends with availability probed on this host', module: 'store' },
  doctor: { summary: 'list what a crash or reboot left behind', module: 'store' },
  gc: {
    summary: 'finish or remove what doctor found, then free what nothing reaches',
    module: 'store',
    options: { 'dry-run': { type: 'boolean', description: 'list what would be done, change nothing' } },
  },
  verify: { summary: 're-hash every object in the store', module: 'store' },
  pin: { summary: 'keep a digest (and all it reaches) through gc; without one, list the pins', module: 'store' },
  unpin: { summary: 'let gc collect a pinned digest again', module: 'store' },
  bench: {
    summary: 'run a plan: randomized blocks of backend x workload cases, checked against the oracle, into a receipt',
    module: 'bench',
    storeHelp:
      "parent directory of the run's temporary store, e.g. a btrfs or XFS mount (default: PDB_ENV_BENCH_STORE, the plan's store.dir, or the system temp dir); the run makes its own store inside and removes it",
    options: {
      plan: { type: 'string', value: 'file', description: 'the plan (see schemas/plan.schema.json; plans/default.json is quick)' },
      source: {
        type: 'string',
        value: 'dir',
        description: 'the repository to benchmark (with --step), or the value of ${SOURCE} in a plan',
      },
      step: {
        type: 'string',
        value: 'name=command',
        multiple: true,
        description: 'a step of the one-line bench, in order (repeat it): a shell command line run in each session',
      },
      backends: {
        type: 'string',
        value: 'list',
        description: 'one-line bench: comma-separated backends (default: every backend this host can run); full-copy is always added',
      },
      blocks: {
        type: 'string',
        value: 'n',
        description: 'one-line bench: measured blocks (default 6, the fewest in which a 2x difference can be told)',
      },
      warmup: { type: 'string', value: 'n', description: 'one-line bench: warm-up blocks run first and marked (default 0)' },
      label: {
        type: 'string',
        value: 'name',
        description: "one-line bench: the source's name in the receipt (default: its folder's name)",
      },
      volatile: {
        type: 'string',
        value: 'glob',
        multiple: true,
        description: 'one-line bench: a cache path dropped before comparing, added to the defaults (repeat it)',
      },
      'step-timeout': { type: 'string', value: 'ms', description: 'one-line bench: the timeout of each step (default 600000)' },
      'case-timeout': {
        type: 'string',
        value: 'ms',
        description: "one-line bench: a whole case's limit (default: the steps' timeouts plus 30 minutes)",
      },
      'plan-out': {
        type: 'string',
        value: 'file',
        description: 'one-line bench: save the plan it built (path-free: the source is ${SOURCE}) to run again with --plan',
      },
      var: { type: 'string', value: 'name=value', multiple: true, description: "a value for a plan's ${NAME} placeholder (repeat it)" },
      'backend-module': { ...backendModule('; benched against the oracle like the built-in ones (repeat it)'), multiple: true },
      seed: { type: 'string', value: 'n', description: "override the plan's seed (recorded in the receipt)" },
      out: { type: 'string', value: 'dir', description: 'where receipts go (default: receipts)' },
      resume: { type: 'string', value: 'run', description: 'continue an interrupted run (same --out); finished cases are not repeated' },
      summary: { type: 'boolean', description: 'also write a Markdown summary next to the receipt' },
      'allow-stale-build': {
        type: 'boolean',
        description: 'run although the build is older than its sources (E_STALE_BUILD otherwise); the receipt is then not evidence',
      },
      report: { type: 'boolean', description: 'also write a report under --out (the one-line bench always does)' },
    },
  },
  validate: {
    summary: 'check receipts, plans and policies against their schemas and the path-free rule',
    module: 'validate',
    options: {
      schema: { type: 'string', value: 'name', description: 'force the schema (its name, one of those listed below)' },
      'require-plan': {
        type: 'boolean',
        description: 'a receipt whose schedule cannot be replayed (no plan of its own, none committed with its digest) is invalid',
      },
      'require-trusted': {
        type: 'string',
        value: 'signers',
        description:
          'a receipt not signed by a key of this trusted signers file (unsigned, unknown, revoked, or for another host) is invalid',
      },
    },
  },
  report: {
    summary: 'roll receipts from one or many hosts into a decision report (Markdown, HTML, JSON)',
    module: 'report',
    options: {
      policy: {
        type: 'string',
        value: 'file',
        description: 'evaluate a promotion policy (schemas/policy.schema.json): PROMOTE, HOLD or REJECT with every reason',
      },
      out: {
        type: 'string',
        value: 'dir',
        description:
          'write report.md (+ charts/*.svg), report.html and report.json (default: reports/out; with --json and no --out nothing is written)',
      },
      seed: { type: 'string', value: 'n', description: 'seed for bootstrap and Monte Carlo draws (default 20260101)' },
      'inline-svg': { type: 'boolean', description: 'embed the SVG charts in report.md instead of charts/*.svg files' },
      signers: {
        type: 'string',
        value: 'file',
        description: "trusted signers (schemas/signers.schema.json) to name each receipt's signer by; a requireSigned policy reads its own",
      },
    },
  },
  keys: {
    summary: 'show the key this host signs receipts with (its keyid and public key), made on first use',
    module: 'validate',
    options: {
      'signer-entry': {
        type: 'boolean',
        description: "print this host's row for policies/signers.json (keyid, public key, host id, hardware) to commit",
      },
      host: {
        type: 'string',
        value: 'label',
        description: "the row's host label with --signer-entry (default: host-<first 8 of the host id>)",
      },
      ci: { type: 'boolean', description: 'with --signer-entry: a row for a CI key (role ci: any host id, this OS and architecture)' },
    },
  },
  receipt: {
    summary: "show a receipt's payload and who signed it (no base64 by hand)",
    module: 'validate',
    subcommands: {
      show: {
        summary: "print a receipt's signed payload and its signatures, each checked and named from the trusted signers",
        options: {
          signers: {
            type: 'string',
            value: 'file',
            description: 'trusted signers to name each key by (default: policies/signers.json of this package)',
          },
        },
      },
    },
  },
  agent: {
    summary: 'real agent CLIs: install the pinned versions, or run one in a session against a cassette',
    module: 'agent',
    subcommands: {
      install: { summary: 'install the pinned agent CLIs into the agent cache (outside the project)' },
      run: {
        summary: 'run a real agent CLI in a session against a cassette played by the scripted model',
        options: {
          agent: { type: 'string', value: 'agent', required: true, description: 'codex | claude | codex-acp | claude-acp | opencode' },
          cassette: {
            type: 'string',
            value: 'file',
            required: true,
            description: 'the cassette the scripted model plays (schemas/cassette.schema.json)',
          },
          timeout: { type: 'string', value: 'ms', description: "the agent's deadline (default 300000)" },
          policy: { type: 'string', value: 'file', description: 'narrow the workspace policy for the ACP agents (see check-path)' },
        },
      },
    },
  },
  model: {
    summary: 'the scripted model server: serve a cassette to real agents on 127.0.0.1',
    module: 'model',
    subcommands: {
      serve: {
        summary: 'serve a cassette on 127.0.0.1 over the Responses, Messages and Chat Completions protocols',
        options: {
          cassette: { type: 'string', value: 'file', required: true, description: 'the cassette to play (schemas/cassette.schema.json)' },
          port: { type: 'string', value: 'n', description: 'the port on 127.0.0.1 (default 0: any free port)' },
          log: { type: 'string', value: 'file', description: 'append every request and what it was answered with, one JSON event a line' },
          root: {
            type: 'string',
            value: 'dir',
            description: 'the session root, for agents whose requests do not name their working directory',
          },
        },
      },
    },
  },
  hook: {
    summary: "run as another tool's hook: Claude Code's worktrees become pdb-env sessions, its turns checkpoints (hook claude-code)",
    module: 'hook',
    subcommands: {
      'claude-code': {
        summary:
          "Claude Code's hooks: WorktreeCreate/WorktreeRemove (its worktrees become sessions), UserPromptSubmit/Stop (a checkpoint before and after each turn)",
        options: {
          'print-settings': { type: 'boolean', description: 'print the .claude/settings.json fragment that installs the hooks, and exit' },
        },
      },
      codex: {
        summary: "Codex's notify program (agent-turn-complete): a checkpoint after each turn, labelled with its turn-id and prompt",
        options: { 'print-settings': { type: 'boolean', description: 'print the config.toml line that installs it, and exit' } },
      },
      cursor: {
        summary: "Cursor's .cursor/hooks.json beforeSubmitPrompt and stop: a checkpoint before and after each turn",
        options: { 'print-settings': { type: 'boolean', description: 'print the .cursor/hooks.json that installs it, and exit' } },
      },
      gemini: {
        summary: "Gemini CLI's settings.json BeforeAgent and AfterAgent hooks: a checkpoint before and after each turn",
        options: { 'print-settings': { type: 'boolean', description: 'print the settings.json fragment that installs it, and exit' } },
      },
    },
  },
  daemon: {
    summary: 'a resident process that runs plain checkpoints and restores for this user without a node start each time',
    module: 'daemon',
    subcommands: {
      start: {
        summary: 'start the daemon in the background (or say which one runs)',
        options: {
          'idle-timeout': {
            type: 'string',
            value: 's',
            description: 'exit after this many seconds without a command (default 1800; 0: never)',
          },
          watch: {
            type: 'boolean',
            description:
              "watch session roots (inotify): a checkpoint lstats only what changed since the daemon's last one (docs/store.md says what no watch can see)",
          },
        },
      },
      stop: { summary: 'stop the running daemon and wait until it has gone' },
      status: { summary: 'whether a daemon runs: its pid, socket, commands served and declined' },
      run: {
        summary: 'run the daemon in the foreground (what start runs; for a service manager)',
        options: {
          'idle-timeout': {
            type: 'string',
            value: 's',
            description: 'exit after this many seconds without a command (default 1800; 0: never)',
          },
          watch: {
            type: 'boolean',
            description:
              "watch session roots (inotify): a checkpoint lstats only what changed since the daemon's last one (docs/store.md says what no watch can see)",
          },
        },
      },
    },
  },
  completion: {
    summary: 'print a bash, zsh or fish script that completes commands, options and session names',
    module: 'completion',
  },
  __complete: { summary: 'names for shell completion (sessions, envs), one a line', module: 'completion', hidden: true },
} as const satisfies { readonly [name: string]: CommandRow };

type Table = typeof COMMANDS;
export type CommandName = keyof Table;
/** A file under cli/commands/ that defines commands. */
export type CommandModule = Table[CommandName]['module'];
/** The commands a plain call of which runs on the cheap path. */
export type CheapCommandName = { [N in CommandName]: Table[N] extends { cheap: object } ? N : never }[CommandName];

/** The row of `name`, or undefined for a word that names no command. */
export function commandRow(name: string): CommandRow | undefined {
  return Object.hasOwn(COMMANDS, name) ? (COMMANDS as { readonly [name: string]: CommandRow })[name] : undefined;
}

type Camel<S extends string> = S extends `${infer H}-${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;
type Value<D> = D extends { type: 'boolean' } ? true : D extends { multiple: true } ? string[] : string;
type Flatten<T> = { [K in keyof T]: T[K] };
/** The values of declared options as commander gives them: camelCase keys, `true` for a flag, a list for a repeatable one. */
export type OptionValues<D> = Flatten<
  { [K in keyof D as D[K] extends { required: true } ? never : Camel<K & string>]?: Value<D[K]> } & {
    [K in keyof D as D[K] extends { required: true } ? Camel<K & string> : never]: Value<D[K]>;
  }
>;
export type GlobalValues = OptionValues<typeof GLOBAL_OPTIONS>;
/** The values of a command's own options. */
export type CommandOptions<N extends CommandName> = Table[N] extends { options: infer D } ? OptionValues<D> : {};

/** The camelCase key commander gives an option (`dry-run` -> `dryRun`). */
export function optionKey(long: string): string {
  return long.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** A plain call of a cheap command, parsed: its operands and its option values as commander would give them. */
export interface CheapCall<N extends CheapCommandName = CheapCommandName> {
  name: N;
  module: Table[N]['module'];
  operands: string[];
  options: Flatten<CommandOptions<N> & GlobalValues>;
}

/**
 * The call `argv` (the words after `pdb-env`) when it is a plain call of a cheap command, else
 * null: commander runs it. util.parseArgs is configured from the row's option declarations and
 * the global ones; a call it refuses (an unknown option, --help, a value missing or looking like
 * an option, a flag given a value) goes to commander, and so does one that commander reads
 * differently or would refuse: an option given twice or empty, `--`, an operand that is empty or
 * looks like an option, too many operands, a required option missing.
 */
export function cheapCall(argv: readonly string[]): CheapCall | null {
  const name = argv[0];
  const row = name === undefined ? undefined : commandRow(name);
  if (!row?.cheap) return null;
  const decls: OptionDecls = { ...row.options, ...GLOBAL_OPTIONS };
  const options = Object.fromEntries(
    Object.entries(decls).map(([long, d]) => [long, { type: d.type, multiple: d.type === 'string' && d.multiple === true }]),
  );
  let parsed: ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true; strict: true; tokens: true }>>;
  try {
    parsed = parseArgs({ args: argv.slice(1), options, allowPositionals: true, strict: true, tokens: true });
  } catch {
    return null;
  }
  const seen = new Set<string>();
  for (const t of parsed.tokens) {
    if (t.kind === 'option-terminator') return null;
    if (t.kind === 'positional' && (t.value === '' || t.value.startsWith('-'))) return null;
    if (t.kind !== 'option') continue;
    if (t.value === '' || (seen.has(t.name) && !options[t.name]!.multiple)) return null;
    seen.add(t.name);
  }
  if (parsed.positionals.length > row.cheap.operands) return null;
  if (Object.entries(decls).some(([long, d]) => d.type === 'string' && d.required === true && !seen.has(long))) return null;
  const values = Object.fromEntries(Object.entries(parsed.values).map(([long, v]) => [optionKey(long), v]));
  return { name, module: row.module, operands: parsed.positionals, options: values } as unknown as CheapCall;
}
