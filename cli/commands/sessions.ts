import { isAbsolute, relative, resolve } from 'node:path';
import { BACKEND_NAMES } from '../../backends/table.js';
import type { Digest } from '../../model/canonical-json.js';
import { PdbError } from '../../model/errors.js';
import { SessionService, type CachedUsage, type SessionInfo } from '../../sessions/service.js';
import { formatBytes } from '../../model/progress.js';
import { assertNotCapturedByAncestor, findProjectRoot, resolveStoreDir } from '../../sessions/records/store-location.js';
import { emit, short, table } from '../output.js';
import { openService, type CliContext, type CommandDefinitions, type DefineCommand } from '../context.js';
import { createProgressReporter } from '../progress-line.js';
import { checkpointThroughClient, nativeClient } from '../daemon/client-call.js';

const create: DefineCommand<'create'> = (cmd) =>
  cmd
    .argument('<name>', 'the new session')
    .addHelpText(
      'after',
      `
Imports DIR (default: the current directory) as a content-addressed Snapshot and
materializes it as an ordinary writable directory for one agent. Importing an
unchanged DIR again costs a stat walk: a file whose stat signature (inode, size,
mtime, ctime, mode) is the one recorded last time is not read again (git's rule).
On a terminal, a create running longer than a second shows files and bytes done.

From a subdirectory, DIR defaults to the project root: the nearest directory already
imported, else the git top level. --base takes a unique digest prefix (7+ hex).

Backends: ${BACKEND_NAMES.join(', ')}. Without --backend (or --backend-module),
the project's pdb-env.json "backend" is used, else full-copy: it works on every
filesystem, needs nothing remounted after a reboot, and is the oracle the others are
checked against. pdb-env backends shows what runs here; npm run proof, which is fastest.

Example:
  pdb-env create agent-a --from ~/src/app
  pdb-env create agent-b --fork agent-a
  cd "$(pdb-env path agent-a)"`,
    )
    .action(async (name, _o, command) => {
      const o = command.optsWithGlobals();
      const named = o.store ?? process.env.PDB_ENV_STORE;
      const forked = o.fork ? (await SessionService.open(resolveStoreDir({ store: o.store }))).readSession(o.fork) : null;
      // From a subdirectory, the project root (the nearest imported directory, else the git top level).
      const from =
        o.from ?? (await forked)?.sourceDir ?? (named ? findProjectRoot(process.cwd(), named) : assertNotCapturedByAncestor(process.cwd()));
      const svc = await SessionService.open(resolveStoreDir({ store: o.store, sourceDir: from, forCreate: true }), { create: true });
      // No --backend: the project's pdb-env.json "backend" (as the Claude Code hook takes it), else full-copy.
      const configured =
        (o.backend ?? o.backendModule) ? undefined : (await (await import('../../model/scan/scan.js')).readSourceConfig(from)).backend;
      const progress = createProgressReporter({ json: o.json === true });
      const r = await svc
        .create(name, {
          from,
          backend: o.backend ?? configured,
          backendModule: o.backendModule === undefined ? undefined : resolve(o.backendModule),
          env: o.env,
          base: o.base as Digest | undefined,
          fork: o.fork,
          onProgress: progress.onProgress,
        })
        .finally(progress.done);
      emit(o.json === true, r, () => `created ${r.session} (${r.backend}) from ${short(r.base)}: ${r.files} files\n${r.root}`);
    });

/**
 * `run NAME -- CMD ARGS`: commander drops the `--`, so where it was is read from the arguments
 * (everything after it is the command). Words before it other than NAME are named as the mistake
 * they are: a forgotten `--`, or an option run does not have.
 */
function splitRun(ctx: CliContext, operands: string[]): { name: string; command: string[] } {
  const dashdash = ctx.argv.indexOf('--');
  const after = dashdash < 0 ? 0 : ctx.argv.length - dashdash - 1;
  const command = operands.slice(operands.length - after);
  // Past an unknown option commander keeps a literal `--` among the words; it is not one of them.
  const before = operands.slice(0, operands.length - after).filter((w, i, all) => !(w === '--' && i === all.length - 1));
  const usage = 'pdb-env run NAME -- CMD [ARGS...]';
  if (before.length === 0) throw new PdbError('E_USAGE', 'run: missing the session name before --', { hint: usage });
  const stray = before.slice(1);
  const option = before[0]!.startsWith('-') ? before[0] : dashdash >= 0 ? stray.find((w) => w.startsWith('-')) : undefined;
  if (option !== undefined)
    throw new PdbError('E_USAGE', `run: unknown option '${option}'`, { hint: 'pdb-env run --help shows the usage.' });
  if (stray.length > 0)
    throw new PdbError('E_USAGE', `run needs -- before the command: "${stray.join(' ')}" came without it`, {
      hint: `pdb-env run ${before[0]} -- ${[...stray, ...command].join(' ')}`,
    });
  if (command.length === 0) throw new PdbError('E_USAGE', 'run needs a command after --', { hint: usage });
  return { name: before[0]!, command };
}

/** Run `command` in the session root: a program that cannot start exits 127 or 126, like a shell. */
async function runIn(store: string | undefined, name: string, command: string, args: string[], purpose?: string): Promise<number> {
  const svc = await openService(store);
  return (await svc.run(name, command, args, purpose ? { purpose } : {})).exitCode;
}

/**
 * `run --checkpoint`: run, then checkpoint when the command exits (whatever its status), labelled
 * with the command line. The run's own status is kept; a checkpoint that fails is said on stderr
 * and makes the exit status 1 only when the command itself succeeded. The checkpoint takes the
 * default path, as a user's `pdb-env checkpoint` does: the native client and the daemon
 * (cli/daemon/client-call.ts); this process checkpoints itself only where no client was built.
 */
async function runThenCheckpoint(store: string | undefined, name: string, words: string[]): Promise<number> {
  const svc = await openService(store);
  const label = words.map(shellWord).join(' ');
  const client = nativeClient();
  const checkpoint = () => (client ? checkpointThroughClient(client, store, name, label) : svc.checkpoint(name, { label }));
  let code: number;
  try {
    code = (await svc.run(name, words[0]!, words.slice(1))).exitCode;
  } catch (err) {
    await checkpoint().catch(() => undefined);
    throw err;
  }
  try {
    const k = await checkpoint();
    process.stderr.write(`pdb-env: checkpoint ${k.number} of ${name} (${short(k.snapshot)})\n`);
  } catch (err) {
    process.stderr.write(`pdb-env: the checkpoint after the command failed: ${(err as Error).message}\n`);
    return code === 0 ? 1 : code;
  }
  return code;
}

/** A word as a shell would need it, for a label that reads as the command line. */
const shellWord = (s: string) => (/^[A-Za-z0-9_./:=@%+,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

const run: DefineCommand<'run'> = (cmd, ctx) =>
  cmd
    .usage('[options] <name> -- <command> [args...]')
    // The command's own options may come without `--`; splitRun says what is missing.
    .allowUnknownOption()
    .argument('<name>', 'the session')
    .argument('[command...]', 'the command and its arguments, after --')
    .addHelpText(
      'after',
      `
Runs CMD with the session root as its working directory, passing stdio and the
exit code through. It sets PDB_ENV_SESSION=NAME, PDB_ENV_ROOT, PORT (the first of
the session's ports), PDB_ENV_PORT_BASE, PDB_ENV_PORTS and TMPDIR/TMP/TEMP (the
session's private temp dir). A checkpoint is refused while it runs.
A command that is not found exits 127, one that cannot be executed 126.
--checkpoint checkpoints the session when CMD exits, labelled with the command line
(any agent or script gets a checkpoint per call: pdb-env log lists them).

Example:
  pdb-env run agent-a -- npm test
  pdb-env run agent-a --checkpoint -- codex exec "fix the tests"`,
    )
    .action(async (first, rest, _o, command) => {
      const { name, command: words } = splitRun(ctx, [first, ...rest]);
      const o = command.optsWithGlobals();
      ctx.exitCode =
        o.checkpoint === true ? await runThenCheckpoint(o.store, name, words) : await runIn(o.store, name, words[0]!, words.slice(1));
    });

const enter: DefineCommand<'enter'> = (cmd, ctx) =>
  cmd
    .argument('<name>', 'the session')
    .addHelpText(
      'after',
      `
Starts $SHELL (or /bin/sh) in the session root, under a writer lease.

Example:
  pdb-env enter agent-a`,
    )
    .action(async (name, _o, command) => {
      ctx.exitCode = await runIn(command.optsWithGlobals().store, name, process.env.SHELL || '/bin/sh', [], 'enter');
    });

const path: DefineCommand<'path'> = (cmd) =>
  cmd
    .argument('<name>', 'the session')
    .addHelpText(
      'after',
      `
Prints the session's root directory (re-mounting it first if its backend needs it).

Example:
  cd "$(pdb-env path agent-a)"`,
    )
    .action(async (name, _o, command) => {
      const o = command.optsWithGlobals();
      const root = await (await openService(o.store)).path(name);
      emit(o.json === true, { session: name, root }, () => root);
    });

const list: DefineCommand<'list'> = (cmd) =>
  cmd
    .addHelpText(
      'after',
      `
Lists the sessions of the store (also: bare pdb-env); "*" marks the one holding the
current directory. EXCLUSIVE is the bytes only that session holds, as pdb-env du last
measured them, with how long ago (list itself never measures, so it stays fast);
--du measures every session first.`,
    )
    .action(async (_o, command) => {
      const o = command.optsWithGlobals();
      const json = o.json === true;
      let svc: SessionService;
      try {
        svc = await openService(o.store);
      } catch (err) {
        if (err instanceof PdbError && err.code === 'E_STORE_INVALID') {
          emit(json, { store: null, sessions: [] }, () => 'no store here yet: pdb-env create NAME makes one (pdb-env --help for more)');
          return;
        }
        throw err;
      }
      if (o.du === true) await svc.du();
      const sessions = await svc.list();
      emit(json, { store: svc.store.paths.root, sessions }, () => listText(sessions));
    });

/** A source as a path relative to the current directory when inside it, else absolute. */
function showSource(dir: string | null): string {
  if (!dir) return '-';
  const rel = relative(process.cwd(), dir);
  return rel === '' ? '.' : rel.startsWith('..') || isAbsolute(rel) ? dir : rel;
}

/** "12.3 MB (5m ago)": a cached measurement and its age; "-" when never measured. */
function showUsage(u: CachedUsage | null, now = Date.now()): string {
  if (!u) return '-';
  const s = Math.max(0, Math.round((now - Date.parse(u.measuredAt)) / 1000));
  const age =
    s < 60 ? `${s}s` : s < 3600 ? `${Math.round(s / 60)}m` : s < 172800 ? `${Math.round(s / 3600)}h` : `${Math.round(s / 86400)}d`;
  return `${formatBytes(u.exclusiveBytes)} (${age} ago)`;
}

/** The session table; a damaged session is a row too, with why and how to recover below it. */
function listText(sessions: Array<SessionInfo & { usage: CachedUsage | null }>): string {
  if (sessions.length === 0) return 'no sessions (pdb-env create NAME makes one)';
  const rows = table([
    ['', 'SESSION', 'BACKEND', 'BASE', 'STATE', 'CHECKPOINT', 'EXCLUSIVE', 'SOURCE'],
    ...sessions.map((s) => [
      s.current ? '*' : '',
      s.name,
      s.backend ?? '-',
      short(s.base),
      s.state,
      short(s.lastCheckpoint?.snapshot),
      showUsage(s.usage),
      showSource(s.state === 'damaged' ? null : s.sourceDir),
    ]),
  ]);
  const damaged = sessions.flatMap((s) => (s.state === 'damaged' ? [`  ${s.name}: ${s.damage}`] : []));
  return damaged.length ? `${rows}\n\ndamaged (pdb-env doctor explains how to recover):\n${damaged.join('\n')}` : rows;
}

const diff: DefineCommand<'diff'> = (cmd) =>
  cmd
    .argument('<name>', 'the session')
    .addHelpText(
      'after',
      '\nLists add, delete, modify, mode and retype changes by relative path: of the root now\nagainst the base, or with --from/--to between two checkpoints (REF: a number from\npdb-env log, a digest prefix, base, label:LABEL; SESSION@REF names a checkpoint of another\nsession, e.g. another agent\'s turn; --from defaults to base, --to to the last).\n--patch and --stat need git. What a tool wrote that is not the project work\n(node_modules/.cache/ after npm test) shows too: name it in the source\npdb-env.json, { "excludes": ["node_modules", ".cache"] }: sessions of the next import\nnever scan it.\n\nExample:\n  pdb-env diff agent-a\n  pdb-env diff agent-a --from 2 --to 5\n  pdb-env diff agent-a --from 3 --to agent-b@label:codex after turn 1\n  pdb-env diff agent-a --patch > agent-a.patch',
    )
    .action(async (name, _o, command) => {
      const o = command.optsWithGlobals();
      if (o.from !== undefined || o.to !== undefined) {
        if (o.patch === true || o.stat === true || o.verify === true)
          throw new PdbError('E_USAGE', 'diff --from/--to compares two checkpoints: --patch, --stat and --verify are for the live root');
        const svc = await openService(o.store);
        const to = o.to ?? String((await svc.log(name)).checkpoints.length || 'base');
        const r = await svc.diffCheckpoints(name, o.from ?? 'base', to);
        emit(o.json === true, r, () =>
          r.changes.length ? r.changes.map((c) => `${c.kind.padEnd(6)} ${c.path}`).join('\n') : 'no changes',
        );
        return;
      }
      const progress = createProgressReporter({ json: o.json === true });
      const options = { verify: o.verify === true, onProgress: progress.onProgress };
      if (o.patch === true || o.stat === true) {
        if (o.patch === true && o.stat === true) throw new PdbError('E_USAGE', 'diff takes --patch or --stat, not both');
        const svc = await openService(o.store);
        process.stdout.write(await svc.diffPatch(name, o.stat === true ? 'stat' : 'patch', options).finally(progress.done));
        return;
      }
      const r = await (await openService(o.store)).diff(name, options).finally(progress.done);
      emit(o.json === true, r, () => (r.changes.length ? r.changes.map((c) => `${c.kind.padEnd(6)} ${c.path}`).join('\n') : 'no changes'));
    });

const publish: DefineCommand<'publish'> = (cmd) =>
  cmd
    .argument('<name>', 'the session whose last checkpoint is published')
    .addHelpText(
      'after',
      `
Moves ENV's head from DIGEST to NAME's last checkpoint, or fails with E_HEAD_MOVED
when ENV is no longer at DIGEST. A checkpoint built on another head than DIGEST is
E_STALE_BASE: publishing it would drop the work published in between. --rebase
merges it onto DIGEST path by path (a new checkpoint of NAME based on DIGEST); paths
both sides changed differently are E_PUBLISH_CONFLICT, and nothing changes.

Example:
  pdb-env publish agent-a --env main --expect sha256:...
  pdb-env publish agent-b --env main --expect 3f2a9c1 --rebase`,
    )
    .action(async (name, _o, command) => {
      const o = command.optsWithGlobals();
      if (!o.expect)
        throw new PdbError('E_USAGE', 'publish needs --expect DIGEST (the head you based your work on)', {
          hint: 'pdb-env envs prints the heads.',
        });
      const r = await (await openService(o.store)).publish(name, o.env ?? 'main', o.expect, { rebase: o.rebase === true });
      emit(o.json === true, r, () => `${r.env}: ${short(r.previous)} -> ${r.head}${r.rebased ? ' (rebased)' : ''}`);
    });

const envs: DefineCommand<'envs'> = (cmd) =>
  cmd.action(async (_o, command) => {
    const o = command.optsWithGlobals();
    const list = await (await openService(o.store)).listEnvs();
    emit(o.json === true, { envs: list }, () => table([['ENV', 'HEAD'], ...list.map((e) => [e.name, e.head])]));
  });

const discard: DefineCommand<'discard'> = (cmd) =>
  cmd
    .argument('<name>', 'the session')
    .addHelpText(
      'after',
      `
Removes only NAME's directory inside the store, never following a symlink out of
it, with its private temp dir and its ports. A session in which processes still
run is refused (E_SESSION_BUSY, naming them) unless --force, which stops them first.
Exits 0 when the session is already gone.

Example:
  pdb-env discard agent-a`,
    )
    .action(async (name, _o, command) => {
      const o = command.optsWithGlobals();
      const r = await (await openService(o.store)).discard(name, { force: o.force === true });
      emit(o.json === true, r, () => (r.discarded ? `discarded ${r.session}` : `${r.session} was already gone`));
    });

export const commands: CommandDefinitions<'sessions'> = { create, run, enter, path, list, diff, publish, envs, discard };
