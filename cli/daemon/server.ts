// The pdb-env daemon: one resident process per user that runs plain `pdb-env checkpoint` and
// `pdb-env restore` calls, and agents' turn hooks (`pdb-env hook AGENT`), for native/client.c, so that they do not pay for a node process's start
// (tens of milliseconds: more than the walk of a 25,000-entry tree). It runs exactly the cheap
// path a plain call runs (cli/cheap-path.ts, from the same checkpoint bundle), one command at a
// time, with the client's working directory, PDB_ENV_STORE and PDB_ENV_SESSION, for the client's
// process (its own run is tolerated as if it had called), and sends back what it prints and its
// exit status. Nothing is kept from one command to the next but which index files' checksums it
// verified (model/scan/tree-index.ts): each command opens its store again, so what another
// process changed in the store meanwhile is seen.
//
// It declines (the client then runs the command itself, as without a daemon) anything else: another
// command or a call that is not plain, another install of pdb-env, a build of this one newer than
// the daemon (it then exits), or an environment in which the command could behave differently
// (a PDB_ENV_* setting, HOME or an XDG directory not the daemon's own).
import { existsSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import { resolve } from 'node:path';
import { PdbError } from '../../model/errors.js';
import { packageFile } from '../../model/paths.js';
import { cheapCall } from '../command-table.cjs';
import { askDaemon } from './control.js';
import {
  daemonFiles,
  ensureDaemonDir,
  requirePeerCheck,
  SOCKET_PATH_MAX,
  unsafeSocket,
  untrustedPeer,
  type DaemonFiles,
} from './location.js';
import { exitFrame, frame, parseRequest, type DaemonRecord, type DaemonRequest, type RunCheapFor, type RunHookFor } from './protocol.js';

/**
 * The commands it runs: the cheap ones, which an agent loop calls between steps (checkpoint, and
 * restore to take one back), and an agent's turn hook (`hook AGENT`, a checkpoint before and after
 * each turn: sessions/hooks/turn-hook.ts says which calls are plain).
 */
const SERVED = new Set<string>(['checkpoint', 'restore']);

/** What a client's environment may set that the daemon takes over per command. */
const PER_COMMAND = new Set(['PDB_ENV_STORE', 'PDB_ENV_SESSION']);
/**
 * Never compared: whether and where the client found or started the daemon (and its bounds), the CA bundle bin/pdb-env set aside, and what
 * `pdb-env run` tells the programs it runs (sessions/lifecycle/run.ts), which no checkpoint reads.
 */
const IGNORED = new Set([
  'PDB_ENV_DAEMON',
  'PDB_ENV_DAEMON_DIR',
  'PDB_ENV_DAEMON_IDLE_MS',
  'PDB_ENV_DAEMON_MAX_RSS_MB',
  'PDB_ENV_DAEMON_STARTED',
  'PDB_ENV_NODE_EXTRA_CA_CERTS',
  'PDB_ENV_ROOT',
  'PDB_ENV_PORT_BASE',
  'PDB_ENV_PORTS',
]);
/** Variables whose value decides where stores and their settings are: the client's must be the daemon's (TMPDIR, which run sets, no checkpoint reads). */
const SAME = ['HOME', 'XDG_DATA_HOME', 'XDG_CONFIG_HOME', 'XDG_STATE_HOME', 'XDG_CACHE_HOME'];

/** The daemon's own settings that a command reads (PDB_ENV_* but the per-command ones). */
function settings(env: Record<string, string | undefined>): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of Object.entries(env))
    if (k.startsWith('PDB_ENV_') && !PER_COMMAND.has(k) && !IGNORED.has(k) && v !== undefined) out.set(k, v);
  return out;
}

/** Why the client's environment differs from the daemon's in a way a checkpoint could see, or null. */
export function environmentDiffers(client: Record<string, string>, own: Record<string, string | undefined>): string | null {
  const [a, b] = [settings(client), settings(own)];
  for (const [k, v] of a) if (b.get(k) !== v) return `${k} is set for the command`;
  for (const k of b.keys()) if (!a.has(k)) return `${k} is set for the daemon`;
  for (const k of SAME) if ((client[k] ?? '') !== (own[k] ?? '')) return `${k} differs`;
  return null;
}

/** Replace process.env's contents with `env` (a command run for a client sees exactly the client's variables). */
function setEnvironment(env: Record<string, string | undefined>): void {
  for (const k of Object.keys(process.env)) if (!(k in env)) delete process.env[k];
  for (const [k, v] of Object.entries(env)) if (v !== undefined) process.env[k] = v;
}

/** The process's largest resident set so far, in bytes (maxRSS is in KiB). */
const peakRss = (): number => process.resourceUsage().maxRSS * 1024;

/** PDB_ENV_DAEMON_MAX_RSS_MB (0: no bound), else 512 MiB. */
export function maxRssBytes(env: NodeJS.ProcessEnv): number {
  const v = env.PDB_ENV_DAEMON_MAX_RSS_MB;
  if (v === undefined || v === '') return 512 * 1048576;
  if (!/^\d+$/.test(v)) throw new PdbError('E_USAGE', `PDB_ENV_DAEMON_MAX_RSS_MB must be a whole number of MiB (0: no bound), got "${v}"`);
  return Number(v) * 1048576;
}

/** The files whose change means a new build of pdb-env: the daemon then declines and exits. */
const BUILD_FILES = ['bundle.cjs', 'checkpoint-bundle.cjs', 'cheap-path.js', 'pdb-env.cjs'].map((f) => packageFile('dist', 'cli', f));
function buildStamp(files: string[]): string {
  return files
    .map((f) => {
      try {
        const st = statSync(f);
        return `${st.ino}:${st.size}:${st.mtimeMs}`;
      } catch {
        return '-';
      }
    })
    .join(',');
}

/**
 * The cheap path of the checkpoint bundle this install runs. The daemon runs only from the bundle:
 * its modules' cheap path loads the command modules, this one among them.
 */
function loadCheapPath(): { run: RunCheapFor; hook: RunHookFor | null } {
  const loader = createRequire(import.meta.url)(packageFile('dist', 'cli', 'bundle.cjs')) as typeof import('../bundle.cjs');
  const exports = loader.bundleToRun('checkpoint')?.exports as { runCheapFor?: RunCheapFor; runHookFor?: RunHookFor } | undefined;
  const run = exports?.runCheapFor;
  if (typeof run !== 'function')
    throw new PdbError(
      'E_STALE_BUILD',
      `the pdb-env daemon runs from the checkpoint bundle, and none runs here (${loader.bundleState('checkpoint').reason})`,
      {
        hint: 'npm run build makes it (and unset PDB_ENV_NO_BUNDLE).',
      },
    );
  return { run, hook: typeof exports?.runHookFor === 'function' ? exports.runHookFor : null };
}

export interface DaemonOptions {
  files?: DaemonFiles;
  /** Exit after this long without a command; 0: never. */
  idleTimeoutMs: number;
  /** Watch the roots of the sessions it checkpoints (model/scan/watch.ts). */
  watch?: boolean;
  /** Called once it listens (the foreground command prints then). */
  onListening?: (record: DaemonRecord) => void;
  /** Its resident-set bound in bytes (default PDB_ENV_DAEMON_MAX_RSS_MB, else 512 MiB). */
  maxRssBytes?: number;
  /** The files whose change means a new build (default: the command line's entry, loader and checkpoint bundle). */
  buildFiles?: string[];
}

/** Serve until stopped (`daemon stop`, TERM, INT, HUP), idle for idleTimeoutMs, or a new build. */
export async function runDaemon(options: DaemonOptions): Promise<void> {
  const files = options.files ?? daemonFiles();
  requirePeerCheck();
  ensureDaemonDir(files);
  if (Buffer.byteLength(files.socket) > SOCKET_PATH_MAX)
    throw new PdbError('E_DAEMON_DIR', `the daemon's socket path is longer than ${SOCKET_PATH_MAX} bytes: ${files.socket}`, {
      hint: 'Set PDB_ENV_DAEMON_DIR to a shorter directory.',
    });
  const planted = unsafeSocket(files.socket);
  if (planted)
    throw new PdbError('E_DAEMON_DIR', `the pdb-env daemon's socket cannot be used: ${planted}`, {
      hint: `Remove ${files.socket} (or set PDB_ENV_DAEMON_DIR to a directory of yours with mode 0700).`,
    });
  if (existsSync(files.socket)) {
    if (await askDaemon('status', files))
      throw new PdbError('E_LEASE_BUSY', `a pdb-env daemon already listens on ${files.socket}`, { hint: 'pdb-env daemon status' });
    rmSync(files.socket, { force: true });
  }
  const daemon = new Daemon(files, options, loadCheapPath());
  await daemon.listen();
  options.onListening?.(daemon.record);
  await daemon.finished;
}

class Daemon {
  readonly record: DaemonRecord;
  readonly finished: Promise<void>;
  private done!: () => void;
  private queue = Promise.resolve();
  private idle: NodeJS.Timeout | undefined;
  private stopping = false;
  private readonly server: net.Server;
  private readonly entry = realpathSync(packageFile('dist', 'cli', 'pdb-env.cjs'));
  private readonly buildFiles: string[];
  private readonly stamp: string;

  constructor(
    private readonly files: DaemonFiles,
    private readonly options: DaemonOptions,
    private readonly cheap: { run: RunCheapFor; hook: RunHookFor | null },
  ) {
    this.buildFiles = options.buildFiles ?? BUILD_FILES;
    this.stamp = buildStamp(this.buildFiles);
    this.record = {
      pid: process.pid,
      startedAt: new Date().toISOString(),
      socket: files.socket,
      idleTimeoutMs: options.idleTimeoutMs,
      watch: options.watch === true,
      served: 0,
      declined: 0,
      refused: 0,
      onDemand: process.env.PDB_ENV_DAEMON_STARTED === 'on-demand',
      rssBytes: process.memoryUsage.rss(),
      rssLimitBytes: options.maxRssBytes ?? maxRssBytes(process.env),
      peakRssBytes: peakRss(),
      uptimeMs: 0,
    };
    this.finished = new Promise<void>((resolve) => (this.done = resolve));
    this.server = net.createServer((sock) => this.accept(sock));
  }

  async listen(): Promise<void> {
    // Resolved per command from the client's environment, never from the daemon's.
    delete process.env.PDB_ENV_STORE;
    delete process.env.PDB_ENV_SESSION;
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.files.socket, () => resolve());
    });
    writeFileSync(this.files.record, `${JSON.stringify(this.record)}\n`, { mode: 0o600 });
    for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.once(sig, () => this.stop());
    process.chdir('/');
    this.armIdle();
  }

  private armIdle(): void {
    if (this.idle) clearTimeout(this.idle);
    if (this.options.idleTimeoutMs > 0) this.idle = setTimeout(() => this.stop(), this.options.idleTimeoutMs);
  }

  /** Read one request from the connection, then queue it: commands run one at a time. */
  private accept(sock: net.Socket): void {
    sock.on('error', () => {});
    // Every connection: its process must be this user's, whatever the directory's mode says.
    const why = untrustedPeer(sock);
    if (why) {
      this.record.refused++;
      process.stderr.write(`pdb-env daemon: E_DAEMON_PEER: a connection refused: ${why}\n`);
      sock.destroy();
      return;
    }
    let buf: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      let req: DaemonRequest | null;
      try {
        req = parseRequest(buf);
      } catch {
        // Not a request of this build's client: it runs the command itself.
        sock.off('data', onData);
        this.decline(sock);
        return;
      }
      if (!req) return;
      sock.off('data', onData);
      const r = req;
      this.queue = this.queue
        .then(() => this.handle(sock, r))
        .catch((err: unknown) => {
          process.stderr.write(`pdb-env daemon: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
          sock.destroy();
        });
    };
    sock.on('data', onData);
  }

  private decline(sock: net.Socket): void {
    this.record.declined++;
    sock.end(frame('f'));
  }

  private async handle(sock: net.Socket, req: DaemonRequest): Promise<void> {
    if (this.idle) clearTimeout(this.idle);
    try {
      if (req.args[0] === '__daemon') return this.control(sock, req.args[1]);
      if (buildStamp(this.buildFiles) !== this.stamp) {
        this.decline(sock);
        this.stop();
        return;
      }
      const call = cheapCall(req.args);
      const hook = !call && req.args[0] === 'hook' && this.cheap.hook !== null;
      if (
        !this.sameEntry(req.entry, req.cwd) ||
        !(hook || (call && SERVED.has(call.name))) ||
        environmentDiffers(req.env, process.env) !== null
      )
        return this.decline(sock);
      try {
        process.chdir(req.cwd);
      } catch {
        return this.decline(sock);
      }
      // The client's environment, all of it, and its umask, for the command; the daemon's own after.
      const own = { ...process.env };
      const ownMask = process.umask();
      setEnvironment(req.env);
      if (req.umask !== undefined) process.umask(req.umask);
      // What it prints goes back with its status in one write (a checkpoint prints a few lines).
      const out: Buffer[] = [];
      try {
        const client = {
          pid: req.pid,
          watch: this.record.watch,
          sink: (fd: 1 | 2, text: string) => out.push(frame(fd === 1 ? 'o' : 'e', text)),
        };
        const status = call ? await this.cheap.run(call, client) : await this.cheap.hook!(req.args, req.stdin, client);
        // Not a plain turn hook (it did nothing): the client runs it, with the stdin it read.
        if (status === null) return this.decline(sock);
        this.record.served++;
        sock.end(Buffer.concat([...out, exitFrame(status)]));
      } finally {
        setEnvironment(own);
        process.umask(ownMask);
        process.chdir('/');
      }
      this.boundRss();
    } finally {
      if (!this.stopping) this.armIdle();
    }
  }

  /** The client would run this very install's entry (by real path; a relative one is the client's, from its working directory). */
  private sameEntry(file: string, cwd: string): boolean {
    try {
      return realpathSync(resolve(cwd, file)) === this.entry;
    } catch {
      return false;
    }
  }

  /** Past its RSS bound it exits after the command, and its caches with it: the next call runs node, and starts a fresh daemon on demand. */
  private boundRss(): void {
    const rss = process.memoryUsage.rss();
    if (this.record.rssLimitBytes > 0 && rss > this.record.rssLimitBytes) {
      const mib = (n: number) => `${Math.round(n / 1048576)} MiB`;
      process.stderr.write(
        `pdb-env daemon: its resident set (${mib(rss)}) is over its bound (${mib(this.record.rssLimitBytes)}, PDB_ENV_DAEMON_MAX_RSS_MB): it exits, dropping its caches\n`,
      );
      this.stop();
    }
  }

  private control(sock: net.Socket, what: string | undefined): void {
    if (what !== 'status' && what !== 'stop') return void sock.end(exitFrame(2));
    this.record.rssBytes = process.memoryUsage.rss();
    this.record.peakRssBytes = peakRss();
    this.record.uptimeMs = Date.now() - Date.parse(this.record.startedAt);
    sock.write(frame('o', `${JSON.stringify(this.record)}\n`));
    sock.end(exitFrame(0));
    if (what === 'stop') this.stop();
  }

  stop(): void {
    if (this.stopping) return;
    this.stopping = true;
    if (this.idle) clearTimeout(this.idle);
    this.server.close(() => {
      // Ours only: a daemon started after this one stopped listening has its own.
      try {
        if ((JSON.parse(readFileSync(this.files.record, 'utf8')) as DaemonRecord).pid === process.pid)
          rmSync(this.files.record, { force: true });
      } catch {
        // none, or unreadable: nothing of ours
      }
      void this.queue.then(() => this.done());
    });
    rmSync(this.files.socket, { force: true });
  }
}
