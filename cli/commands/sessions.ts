import { listBackends, probeBackend } from '../../backends/registry.js';
import { BACKEND_NAMES } from '../../backends/types.js';
import type { Digest } from '../../model/canonical-json.js';
import { ObjectStore } from '../../model/object-store.js';
import { PdbError } from '../../model/errors.js';
import { SessionService } from '../../sessions/service.js';
import { resolveStoreDir } from '../../sessions/store-location.js';
import type { Command, ParsedArgs } from '../command.js';
import { emit, short, table } from '../output.js';

async function openService(args: ParsedArgs): Promise<SessionService> {
  return SessionService.open(resolveStoreDir({ store: args.store }));
}

const STORE_HELP = `  --store DIR   the store (default: PDB_ENV_STORE, the store around the current
                directory, or the per-source store under $XDG_DATA_HOME/pdb-env)
  --json        machine-readable output (errors too)`;

export const createCommand: Command = {
  name: 'create',
  summary: 'make a private session from the source (or an environment head)',
  help: `pdb-env create NAME [--from DIR] [--backend NAME] [--env ENV | --base DIGEST] [--store DIR] [--json]

Imports DIR (default: the current directory) as a content-addressed Snapshot and
materializes it as an ordinary writable directory for one agent.

  --from DIR      source directory (default: .)
  --backend NAME  ${BACKEND_NAMES.join(' | ')} (default: full-copy)
  --env ENV       start from environment ENV's head instead of importing DIR
  --base DIGEST   start from a Snapshot already in the store (a checkpoint's result,
                  an earlier import) instead of importing DIR
${STORE_HELP}

Example:
  pdb-env create agent-a --from ~/src/app
  cd "$(pdb-env path agent-a)"`,
  options: { from: { type: 'string' }, backend: { type: 'string' }, env: { type: 'string' }, base: { type: 'string' } },
  positionals: 1,
  async run(args) {
    const from = (args.values.from as string | undefined) ?? process.cwd();
    const svc = await SessionService.open(resolveStoreDir({ store: args.store, sourceDir: from, forCreate: true }), { create: true });
    const r = await svc.create(args.positionals[0]!, {
      from,
      backend: args.values.backend as string | undefined,
      env: args.values.env as string | undefined,
      base: args.values.base as Digest | undefined,
    });
    emit(args.json, r, () => `created ${r.session} (${r.backend}) from ${short(r.base)}: ${r.files} files\n${r.root}`);
    return 0;
  },
};

export const runCommand: Command = {
  name: 'run',
  summary: 'run a command in a session root (shared writer lease)',
  help: `pdb-env run NAME -- CMD [ARGS...]

Runs CMD with the session root as its working directory and PDB_ENV_SESSION=NAME,
passing stdio and the exit code through. A checkpoint is refused while it runs.

Example:
  pdb-env run agent-a -- npm test`,
  positionals: 1,
  async run(args) {
    if (args.rest.length === 0)
      throw new PdbError('E_USAGE', 'run needs a command after --', { hint: 'pdb-env run NAME -- CMD [ARGS...]' });
    const svc = await openService(args);
    const { exitCode } = await svc.run(args.positionals[0]!, args.rest[0]!, args.rest.slice(1));
    return exitCode;
  },
};

export const enterCommand: Command = {
  name: 'enter',
  summary: 'open a shell in a session root',
  help: `pdb-env enter NAME

Starts $SHELL (or /bin/sh) in the session root, under a writer lease.

Example:
  pdb-env enter agent-a`,
  positionals: 1,
  async run(args) {
    const svc = await openService(args);
    const shell = process.env.SHELL || '/bin/sh';
    const { exitCode } = await svc.run(args.positionals[0]!, shell, [], { purpose: 'enter' });
    return exitCode;
  },
};

export const pathCommand: Command = {
  name: 'path',
  summary: 'print a session root',
  help: `pdb-env path NAME

Prints the session's root directory (re-mounting it first if its backend needs it).

Example:
  cd "$(pdb-env path agent-a)"`,
  positionals: 1,
  async run(args) {
    const svc = await openService(args);
    const root = await svc.path(args.positionals[0]!);
    emit(args.json, { session: args.positionals[0], root }, () => root);
    return 0;
  },
};

export const listCommand: Command = {
  name: 'list',
  summary: 'list sessions with backend, base and state',
  help: `pdb-env list [--json]   (also: bare pdb-env)

Lists the sessions of the store; "*" marks the one holding the current directory.`,
  positionals: 0,
  async run(args) {
    let svc: SessionService;
    try {
      svc = await openService(args);
    } catch (err) {
      if (err instanceof PdbError && err.code === 'E_STORE_INVALID') {
        emit(args.json, { store: null, sessions: [] }, () => 'no store here yet: pdb-env create NAME makes one (pdb-env --help for more)');
        return 0;
      }
      throw err;
    }
    const sessions = await svc.list();
    emit(args.json, { store: svc.store.paths.root, sessions }, () =>
      sessions.length === 0
        ? 'no sessions (pdb-env create NAME makes one)'
        : table([
            ['', 'SESSION', 'BACKEND', 'BASE', 'STATE', 'CHECKPOINT'],
            ...sessions.map((s) => [s.current ? '*' : '', s.name, s.backend, short(s.base), s.state, short(s.lastCheckpoint?.snapshot)]),
          ]),
    );
    return 0;
  },
};

export const checkpointCommand: Command = {
  name: 'checkpoint',
  summary: 'scan a quiesced session into a result Snapshot and Changeset',
  help: `pdb-env checkpoint NAME [--json]

Takes an exclusive lease (fails with E_LEASE_BUSY while a run is active), scans the
whole session root, installs its objects and records the result Snapshot and the
Changeset against the base. Publishes nothing.

Example:
  pdb-env checkpoint agent-a --json`,
  positionals: 1,
  async run(args) {
    const svc = await openService(args);
    const r = await svc.checkpoint(args.positionals[0]!);
    emit(
      args.json,
      r,
      () => `checkpoint ${r.session}: ${r.changes} change(s)\n  base      ${r.base}\n  snapshot  ${r.snapshot}\n  changeset ${r.changeset}`,
    );
    return 0;
  },
};

export const diffCommand: Command = {
  name: 'diff',
  summary: 'list changes since the base',
  help: `pdb-env diff NAME [--json]

Lists add, delete, modify, mode and retype changes by relative path.

Example:
  pdb-env diff agent-a`,
  positionals: 1,
  async run(args) {
    const svc = await openService(args);
    const r = await svc.diff(args.positionals[0]!);
    emit(args.json, r, () => (r.changes.length ? r.changes.map((c) => `${c.kind.padEnd(6)} ${c.path}`).join('\n') : 'no changes'));
    return 0;
  },
};

export const publishCommand: Command = {
  name: 'publish',
  summary: "advance an environment head to a session's checkpoint (compare-and-set)",
  help: `pdb-env publish NAME --env ENV --expect DIGEST [--json]

Moves ENV's head from DIGEST to NAME's last checkpoint, or fails with E_HEAD_MOVED
when ENV is no longer at DIGEST.

Example:
  pdb-env publish agent-a --env main --expect sha256:...`,
  options: { env: { type: 'string' }, expect: { type: 'string' } },
  positionals: 1,
  async run(args) {
    const env = (args.values.env as string | undefined) ?? 'main';
    const expect = args.values.expect as string | undefined;
    if (!expect)
      throw new PdbError('E_USAGE', 'publish needs --expect DIGEST (the head you based your work on)', {
        hint: 'pdb-env envs prints the heads.',
      });
    const svc = await openService(args);
    const r = await svc.publish(args.positionals[0]!, env, expect);
    emit(args.json, r, () => `${r.env}: ${short(r.previous)} -> ${r.head}`);
    return 0;
  },
};

export const envsCommand: Command = {
  name: 'envs',
  summary: 'list environments and their heads',
  help: `pdb-env envs [--json]`,
  positionals: 0,
  async run(args) {
    const svc = await openService(args);
    const envs = await svc.listEnvs();
    emit(args.json, { envs }, () => table([['ENV', 'HEAD'], ...envs.map((e) => [e.name, e.head])]));
    return 0;
  },
};

export const discardCommand: Command = {
  name: 'discard',
  summary: 'remove a session (idempotent)',
  help: `pdb-env discard NAME [--force] [--json]

Removes only NAME's directory inside the store, never following a symlink out of
it. Exits 0 when the session is already gone. --force skips the lease check.

Example:
  pdb-env discard agent-a`,
  options: { force: { type: 'boolean' } },
  positionals: 1,
  async run(args) {
    const svc = await openService(args);
    const r = await svc.discard(args.positionals[0]!, { force: args.values.force === true });
    emit(args.json, r, () => (r.discarded ? `discarded ${r.session}` : `${r.session} was already gone`));
    return 0;
  },
};

export const backendsCommand: Command = {
  name: 'backends',
  summary: 'list backends with availability probed on this host',
  help: `pdb-env backends [--json] [--store DIR]

Probes every backend against the store's filesystem. Unavailable backends carry a
typed reason; every entry says securityIsolation: false.`,
  positionals: 0,
  async run(args) {
    const storeDir = resolveStoreDir({ store: args.store, forCreate: true });
    const store = await ObjectStore.init(storeDir);
    const svc = new SessionService(store);
    const reports = await Promise.all(listBackends().map((b) => probeBackend(b, svc.backendContext(process.cwd()))));
    emit(
      args.json,
      { backends: reports },
      () =>
        table([
          ['BACKEND', 'AVAILABLE', 'REASON', 'NOTE'],
          ...reports.map((r) => [
            r.name + (r.experimental ? ' (experimental)' : ''),
            r.available ? 'yes' : 'no',
            r.reason ?? '-',
            r.detail,
          ]),
        ]) + '\n\nsecurityIsolation: false for every backend (workspace isolation for trusted agents, not a sandbox)',
    );
    return 0;
  },
};

export const doctorCommand: Command = {
  name: 'doctor',
  summary: 'list what a crash or reboot left behind',
  help: `pdb-env doctor [--json]

Lists abandoned intents, unfinished sessions, stale temp files and active leases.
pdb-env gc finishes or removes what is marked "gc".`,
  positionals: 0,
  async run(args) {
    const svc = await openService(args);
    const findings = await svc.doctor();
    emit(args.json, { store: svc.store.paths.root, findings }, () =>
      findings.length === 0
        ? 'store is healthy'
        : table([['KIND', 'ID', 'FIX', 'DETAIL'], ...findings.map((f) => [f.kind, f.id, f.fix ?? '-', f.detail])]),
    );
    return 0;
  },
};

export const gcCommand: Command = {
  name: 'gc',
  summary: 'finish or remove what doctor found',
  help: `pdb-env gc [--dry-run] [--json]

Undoes interrupted creates, finishes interrupted discards, removes dead temp files.
Objects are never removed.`,
  options: { 'dry-run': { type: 'boolean' } },
  positionals: 0,
  async run(args) {
    const svc = await openService(args);
    const r = await svc.gc({ dryRun: args.values['dry-run'] === true });
    emit(args.json, r, () =>
      r.actions.length ? r.actions.map((a) => `${args.values['dry-run'] ? 'would ' : ''}${a}`).join('\n') : 'nothing to do',
    );
    return 0;
  },
};

export const verifyCommand: Command = {
  name: 'verify',
  summary: 're-hash every object in the store',
  help: `pdb-env verify [--json]

Exits 1 and lists the digests whose bytes no longer match.`,
  positionals: 0,
  async run(args) {
    const svc = await openService(args);
    const r = await svc.verify();
    emit(args.json, r, () =>
      r.corrupt.length
        ? `E_OBJECT_CORRUPT: ${r.corrupt.length} of ${r.checked} objects are corrupt:\n${r.corrupt.join('\n')}`
        : `${r.checked} objects verified`,
    );
    return r.corrupt.length ? 1 : 0;
  },
};

export const SESSION_COMMANDS = [
  createCommand,
  runCommand,
  enterCommand,
  pathCommand,
  listCommand,
  checkpointCommand,
  diffCommand,
  publishCommand,
  envsCommand,
  discardCommand,
  backendsCommand,
  doctorCommand,
  gcCommand,
  verifyCommand,
];
