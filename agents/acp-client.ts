// pdb-env as an Agent Client Protocol client. It starts the agent process with the session root
// as its working directory and as the session/new cwd, and serves the client-side fs and terminal
// requests confined to that root: a path that resolves outside it (by "..", an absolute path, or a
// symlink inside the root pointing out) is refused with an error. The agent is trusted; this is
// workspace confinement of what the client does on the agent's behalf, not a security sandbox.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { client, ndJsonStream, PROTOCOL_VERSION, RequestError, type ClientApp, type ClientContext } from '@agentclientprotocol/sdk';
import { PdbError, osErrorCode, type PdbErrorCode } from '../model/errors.js';
import { confinedPath } from './confine.js';
import { createTerminals, killGroup, type Terminals } from './acp-terminals.js';
import { checkPath, defaultPolicy, type Access, type WorkspacePolicy } from '../model/workspace-policy.js';
import { decidePermission, type PermissionRequest, type PolicyDenial } from './acp-permissions.js';

/** Counts only: the transcript itself is never kept. */
export interface AcpClientStats {
  sessionUpdates: number;
  messageChunks: number;
  toolCalls: number;
  fsReads: number;
  fsWrites: number;
  terminals: number;
  permissionRequests: number;
  /** Requests refused because their path resolved outside the root. */
  refusedOutsideRoot: number;
  /** Requests (fs, terminal or permission) the workspace policy refused (E_POLICY_DENIED). */
  policyDenials: number;
}

export function emptyStats(): AcpClientStats {
  return {
    sessionUpdates: 0,
    messageChunks: 0,
    toolCalls: 0,
    fsReads: 0,
    fsWrites: 0,
    terminals: 0,
    permissionRequests: 0,
    refusedOutsideRoot: 0,
    policyDenials: 0,
  };
}

function countUpdate(stats: AcpClientStats, kind: string): void {
  stats.sessionUpdates++;
  if (kind === 'agent_message_chunk') stats.messageChunks++;
  else if (kind === 'tool_call') stats.toolCalls++;
}

function toRequestError(err: unknown): RequestError {
  if (err instanceof RequestError) return err;
  if (err instanceof PdbError) return new RequestError(-32602, `${err.code}: ${err.message}`, { code: err.code });
  const code = osErrorCode(err);
  if (code === 'ENOENT') return new RequestError(-32002, 'Resource not found', { code });
  return RequestError.internalError({ code: code ?? 'E_INTERNAL' }, err instanceof Error ? err.message : String(err));
}

export interface RootClient {
  app: ClientApp;
  stats: AcpClientStats;
  /** Every request the workspace policy refused, in order (path-free). */
  denials: PolicyDenial[];
  /** Kill and forget every terminal the agent left behind. */
  closeTerminals(): Promise<void>;
}

/** Run a request handler, answering its failure as a JSON-RPC error the agent can read. */
const wrap =
  <P, R>(fn: (params: P) => Promise<R>) =>
  async ({ params }: { params: P }): Promise<R> => {
    try {
      return await fn(params);
    } catch (err) {
      throw toRequestError(err);
    }
  };

/**
 * Resolves a requested path inside the root and checks it against the workspace policy, as every
 * handler must before touching it; `via` names the request, so a denial is recorded.
 */
type Confine = (path: string, access: Access, via?: PolicyDenial['via']) => Promise<string>;

function serveFiles(app: ClientApp, confined: Confine, stats: AcpClientStats): void {
  app
    .onRequest(
      'fs/read_text_file',
      wrap(async (p) => {
        const abs = await confined(p.path, 'read', 'fs/read_text_file');
        stats.fsReads++;
        let content = await readFile(abs, 'utf8');
        if (p.line != null || p.limit != null) {
          const lines = content.split('\n');
          const start = Math.max(0, (p.line ?? 1) - 1);
          content = lines.slice(start, p.limit != null ? start + p.limit : undefined).join('\n');
        }
        return { content };
      }),
    )
    .onRequest(
      'fs/write_text_file',
      wrap(async (p) => {
        const abs = await confined(p.path, 'write', 'fs/write_text_file');
        await mkdir(dirname(abs), { recursive: true });
        // mkdir may have followed nothing new, but re-check the final path after creating parents.
        await confined(abs, 'write');
        await writeFile(abs, p.content);
        stats.fsWrites++;
        return {};
      }),
    );
}

function serveTerminals(app: ClientApp, terminals: Terminals, confined: Confine, root: string, stats: AcpClientStats): void {
  app
    .onRequest(
      'terminal/create',
      wrap(async (p) => {
        const terminalId = terminals.create(await confined(p.cwd ?? root, 'read', 'terminal/create'), p);
        stats.terminals++;
        return { terminalId };
      }),
    )
    .onRequest(
      'terminal/output',
      wrap(async (p) => terminals.output(p.terminalId)),
    )
    .onRequest(
      'terminal/wait_for_exit',
      wrap(async (p) => {
        const s = await terminals.waitForExit(p.terminalId);
        return { exitCode: s.exitCode, signal: s.signal };
      }),
    )
    .onRequest(
      'terminal/kill',
      wrap(async (p) => {
        terminals.kill(p.terminalId);
        return {};
      }),
    )
    .onRequest(
      'terminal/release',
      wrap(async (p) => {
        terminals.release(p.terminalId);
        return {};
      }),
    );
}

/**
 * The client side of ACP for one session root: fs/read_text_file, fs/write_text_file and the
 * terminal methods, all confined to `root`; permission requests are answered with the first
 * "allow" option (agents here are trusted and cooperative); session/update is only counted.
 */
export function createRootClient(
  root: string,
  options: { env?: Record<string, string | undefined>; policies?: readonly WorkspacePolicy[] } = {},
): RootClient {
  const stats = emptyStats();
  const terminals = createTerminals(options.env);
  const policies = options.policies?.length ? options.policies : [defaultPolicy()];
  const denials: PolicyDenial[] = [];
  const deny = (d: Omit<PolicyDenial, 'code'>) => {
    stats.policyDenials++;
    denials.push({ code: 'E_POLICY_DENIED', ...d });
  };
  const confined: Confine = async (path, access, via) => {
    let resolved: { full: string; rel: string };
    try {
      resolved = await confinedPath(root, path);
    } catch (err) {
      if (err instanceof PdbError && err.code === 'E_PATH_OUTSIDE_ROOT') stats.refusedOutsideRoot++;
      throw err;
    }
    // The policy sees the resolved path, so a link inside the root cannot rename its way past a deny.
    const { rel, full } = resolved;
    const d = checkPath(policies, rel, access);
    if (!d.allowed && via) deny({ access, path: rel, rule: d.rule, via });
    if (!d.allowed)
      throw new PdbError(
        'E_POLICY_DENIED',
        `the workspace policy denies ${access === 'write' ? 'writing' : 'reading'} ${rel} (${d.rule})`,
        {
          hint: 'pdb-env check-path NAME PATH shows the rule; a "policy" in pdb-env.json can allow hidden or credential scopes.',
        },
      );
    return full;
  };
  const app = client({ name: 'pdb-env' });
  serveFiles(app, confined, stats);
  serveTerminals(app, terminals, confined, root, stats);
  app
    .onRequest(
      'session/request_permission',
      wrap(async (p) => {
        stats.permissionRequests++;
        // The agent's own tools write without fs requests: the policy decides here what they may touch.
        const d = await decidePermission(root, policies, p as PermissionRequest, (path, access) => confined(path, access));
        for (const x of d.denials) deny(x);
        return { outcome: d.outcome };
      }),
    )
    // Updates of the prompted session are counted from its ActiveSession queue in runAcpAgent.
    .onNotification('session/update', () => {});
  return { app, stats, denials, closeTerminals: () => terminals.closeAll() };
}

export interface AcpRunOptions {
  /** The workspace policies every file and terminal request is checked against (default: the default policy). */
  policies?: readonly WorkspacePolicy[];
  command: string;
  args: string[];
  /** The session root: the agent's working directory and the session/new cwd. */
  root: string;
  /** The session's name, given to the agent as PDB_ENV_SESSION. */
  sessionName: string;
  prompt: string;
  env?: Record<string, string | undefined>;
  timeoutMs: number;
  /** Aborting (e.g. the case timed out) ends the run like its own timeout. */
  signal?: AbortSignal;
  /** A session mode to set before the prompt (session/set_mode), when the agent offers it (codex-acp: read-only). */
  mode?: string | null;
  /**
   * How many times to prompt again after a turn the agent ended as cancelled because the policy
   * refused one of its requests (codex-acp can only abort a refused tool call). Default 0.
   */
  continueAfterDenial?: number;
}

export interface AcpRunResult {
  agentName: string | null;
  agentVersion: string | null;
  protocolVersion: number | null;
  authMethods: number;
  stopReason: string | null;
  stats: AcpClientStats;
  durationMs: number;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  /** The phase the run stopped in: spawn, initialize, session/new, prompt, done. */
  phase: 'spawn' | 'initialize' | 'session/new' | 'prompt' | 'done';
  /** The error the agent or the connection reported, when the run did not reach "done". */
  error: { rpcCode: number | null; message: string } | null;
  /** Agent stderr (for classification only; never written to a receipt). */
  stderr: string;
  /** Every request the workspace policy refused. */
  denials: PolicyDenial[];
  /** Prompts sent: the task, then one for each turn a denial cancelled. */
  prompts: number;
  /** The session mode set, or null when none was asked for or the agent does not offer it. */
  mode: string | null;
}

/** Start the agent program in the root, its own process group; E_AGENT_NOT_INSTALLED when it cannot start at all. */
async function spawnAgent(o: AcpRunOptions): Promise<{ child: ChildProcess; stderr(): string }> {
  const child = spawn(o.command, o.args, {
    cwd: o.root,
    env: { ...process.env, NO_COLOR: '1', ...o.env, PDB_ENV_SESSION: o.sessionName, PWD: o.root },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString('utf8')).slice(-64 * 1024);
  });
  const spawned = await new Promise<NodeJS.ErrnoException | null>((res) => {
    child.once('spawn', () => res(null));
    child.once('error', (err) => res(err));
  });
  if (spawned) {
    throw new PdbError(
      'E_AGENT_NOT_INSTALLED',
      `could not start the ACP agent ${JSON.stringify(o.command)}: ${spawned.code ?? spawned.message}`,
      {
        hint: 'Install the agent or point its PDB_ENV_*_BIN variable at it.',
        cause: spawned,
      },
    );
  }
  return { child, stderr: () => stderr };
}

/** The prompt that lets an agent go on after the policy refused a request and it cancelled its turn. */
export function continuationPrompt(denials: readonly PolicyDenial[]): string {
  const what = denials.map((d) => `${d.access} ${d.path} (${d.code}: ${d.rule})`).join('; ');
  return `pdb-env: the workspace policy refused ${what}. That request stays refused; go on with the rest of the task.`;
}

/** Initialize, a session with cwd = root (in the requested mode), the prompt (and continuations), every update counted. */
async function converse(agent: ClientContext, o: AcpRunOptions, rc: RootClient, result: AcpRunResult): Promise<void> {
  const init = await agent.request('initialize', {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
    clientInfo: { name: 'pdb-env', version: '1' },
  });
  result.protocolVersion = init.protocolVersion;
  result.agentName = init.agentInfo?.name ?? null;
  result.agentVersion = init.agentInfo?.version ?? null;
  result.authMethods = init.authMethods?.length ?? 0;
  result.phase = 'session/new';
  const session = await agent.buildSession(o.root).start();
  try {
    if (o.mode && session.modes?.availableModes.some((m) => m.id === o.mode)) {
      await agent.request('session/set_mode', { sessionId: session.sessionId, modeId: o.mode });
      result.mode = o.mode;
    }
    result.phase = 'prompt';
    let prompt = o.prompt;
    for (;;) {
      const denied = rc.denials.length;
      result.prompts++;
      const response = await session.prompt(prompt);
      // The active session queued every update of the turn before its stop message: count them here,
      // in arrival order (the app-level handler may run after the response has resolved).
      for (let m = await session.nextUpdate(); m.kind !== 'stop'; m = await session.nextUpdate())
        countUpdate(result.stats, m.update.sessionUpdate);
      result.stopReason = response.stopReason;
      const refused = rc.denials.slice(denied);
      if (response.stopReason !== 'cancelled' || refused.length === 0 || result.prompts > (o.continueAfterDenial ?? 0)) break;
      prompt = continuationPrompt(refused);
    }
    result.phase = 'done';
  } finally {
    session.dispose();
  }
}

/** Rejects when the run's time is up or its signal aborts (marking the result timed out); `clear` stops the clock. */
function runLimit(o: AcpRunOptions, result: AcpRunResult): { limit: Promise<never>; clear(): void } {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      result.timedOut = true;
      reject(new PdbError('E_AGENT_TIMEOUT', `the ACP agent did not finish within ${o.timeoutMs} ms`));
    }, o.timeoutMs);
    o.signal?.addEventListener('abort', () => {
      result.timedOut = true;
      reject(new PdbError('E_AGENT_TIMEOUT', 'the run was aborted (the case timed out)'));
    });
  });
  return { limit, clear: () => clearTimeout(timer) };
}

function emptyResult(stats: AcpClientStats): AcpRunResult {
  return {
    agentName: null,
    agentVersion: null,
    protocolVersion: null,
    authMethods: 0,
    stopReason: null,
    stats,
    durationMs: 0,
    exitCode: null,
    signal: null,
    timedOut: false,
    phase: 'initialize',
    error: null,
    stderr: '',
    denials: [],
    prompts: 0,
    mode: null,
  };
}

/**
 * Start an ACP agent in `root`, initialize, open one session with cwd = root, send the prompt and
 * wait for the turn to end. Never throws for agent failures: the result says how far it got and
 * what was reported, and the adapter classifies it. Throws E_AGENT_NOT_INSTALLED when the program
 * cannot be started at all.
 */
export async function runAcpAgent(o: AcpRunOptions): Promise<AcpRunResult> {
  const t0 = performance.now();
  const rc = createRootClient(o.root, { env: { ...o.env, PDB_ENV_SESSION: o.sessionName }, policies: o.policies });
  const { child, stderr } = await spawnAgent(o);
  const exited = new Promise<{ exitCode: number | null; signal: string | null }>((res) =>
    child.once('close', (code, signal) => res({ exitCode: code, signal })),
  );
  // Write errors after the agent exits are reported through the closed connection, not thrown.
  child.stdin!.on('error', () => {});
  const stream = ndJsonStream(
    Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
    Readable.toWeb(child.stdout!) as unknown as ReadableStream<Uint8Array>,
  );
  const result = emptyResult(rc.stats);
  const { limit, clear } = runLimit(o, result);
  const agentGone = exited.then((s) => {
    throw new PdbError(
      'E_STEP_FAILED',
      `the ACP agent exited (code ${s.exitCode ?? 'none'}, signal ${s.signal ?? 'none'}) during ${result.phase}`,
    );
  });
  try {
    await Promise.race([limit, agentGone, rc.app.connectWith(stream, (agent) => converse(agent, o, rc, result))]);
  } catch (err) {
    if (err instanceof RequestError)
      result.error = { rpcCode: err.code, message: `${err.message}${err.data ? ` ${JSON.stringify(err.data)}` : ''}` };
    else result.error = { rpcCode: null, message: err instanceof Error ? err.message : String(err) };
  } finally {
    clear();
    agentGone.catch(() => {}); // settled by the race above or moot once the run is over
    limit.catch(() => {});
    child.stdin!.end();
    // An ACP agent ends on stdin's end; TERM only what has not gone within a moment.
    await Promise.race([exited, new Promise((r) => setTimeout(r, 1500))]);
    killGroup(child, 'SIGTERM');
    const hard = setTimeout(() => killGroup(child, 'SIGKILL'), 2000);
    const s = await exited;
    clearTimeout(hard);
    killGroup(child, 'SIGKILL');
    await rc.closeTerminals();
    result.exitCode = s.exitCode;
    result.signal = s.signal;
    result.stderr = stderr();
    result.denials = [...rc.denials];
    result.durationMs = performance.now() - t0;
  }
  return result;
}

/** The error code a JSON-RPC error from an agent maps to, when it says enough (ACP: -32000 = auth required). */
export function rpcErrorCode(rpcCode: number | null): PdbErrorCode | null {
  return rpcCode === -32000 ? 'E_AGENT_AUTH' : null;
}
