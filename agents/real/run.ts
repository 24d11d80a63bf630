// One real agent, really run, in one session against the scripted model: start the model server
// (inside a loopback-only network namespace where the host allows one), start the agent through
// `pdb-env run` (the session's ports, TMPDIR and process tracking) as a command or as an ACP
// server with pdb-env as the client, under a deadline; then read the server's log and say what
// happened. The failure classes stay apart: the agent crashed or stopped early, the server could
// not map a request (protocol mismatch), a step's tool result failed, or the time ran out. What
// the agent did to the files is judged elsewhere, against the tree its cassette describes.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Digest } from '../../model/canonical-json.js';
import { PdbError, type PdbErrorCode } from '../../model/errors.js';
import type { WorkspacePolicy } from '../../model/workspace-policy.js';
import { runAcpAgent, type AcpRunResult } from '../acp-client.js';
import type { PolicyDenial } from '../acp-permissions.js';
import { killGroup } from '../acp-terminals.js';
import { loadCassette } from '../cassette/cassette.js';
import { readEventLog, summarize, type ServerSummary } from '../model-server/events.js';
import { excerpt } from '../model-server/planner.js';
import { REAL_AGENTS, type RunnableAgent } from './catalog.js';
import { findInstalled, notInstalled } from './install.js';
import { agentLaunch, agentPrompt, CREDENTIAL_VARS } from './launch.js';
import { namespaceInterfaces, networkPlan, type NetworkMode, type NetworkPlan } from './network.js';

export interface RealAgentRunOptions {
  agent: RunnableAgent;
  cassetteFile: string;
  session: { name: string; root: string };
  /** The argv that runs a command in the session: [node, pdb-env, 'run', NAME, '--store', STORE, '--']. */
  runPrefix: string[];
  /** The argv that starts the model server: [node, pdb-env, 'model', 'serve']. */
  serverCommand: string[];
  /** A private directory for this run (the agent's home, the server's log), outside the root and not under TMPDIR. */
  stateDir: string;
  policies?: readonly WorkspacePolicy[];
  timeoutMs: number;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
}

export interface RealAgentResult {
  agent: RunnableAgent;
  product: string;
  version: string;
  boundary: 'command' | 'acp';
  protocol: string;
  /** Always "scripted": the model was pdb-env's cassette player, not a model. */
  model: 'scripted';
  cassette: Digest;
  exitCode: number | null;
  signal: string | null;
  /** Model turns the server answered. */
  turns: number;
  steps: { total: number; done: number };
  network: NetworkMode;
  /** What could not be enforced, when the network is not. */
  networkNote: string | null;
  /** The interfaces inside the agent's network namespace (["lo"]), when there is one. */
  interfaces: string[] | null;
  denials: PolicyDenial[];
  /** ok, or the failure's code. */
  outcome: 'ok' | PdbErrorCode;
  failure: { code: PdbErrorCode; message: string } | null;
  /** The requests the server could not map. */
  protocolErrors: string[];
  /** The ACP turn's stop reason (ACP agents only). */
  stopReason: string | null;
  durationMs: number;
}

interface ServerProcess {
  pid: number;
  url: string;
  stop(): Promise<void>;
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: string | null }> {
  return new Promise((res) => {
    if (child.exitCode !== null || child.signalCode !== null) res({ code: child.exitCode, signal: child.signalCode });
    else child.once('close', (code, signal) => res({ code, signal }));
  });
}

/** Stop a process group: TERM, then KILL after `graceMs`. */
async function stopGroup(child: ChildProcess, graceMs: number): Promise<void> {
  const done = exited(child);
  killGroup(child, 'SIGTERM');
  const hard = setTimeout(() => killGroup(child, 'SIGKILL'), graceMs);
  await done;
  clearTimeout(hard);
}

async function startServer(o: RealAgentRunOptions, plan: NetworkPlan, log: string, env: NodeJS.ProcessEnv): Promise<ServerProcess> {
  const argv = [
    ...plan.serverPrefix,
    ...o.serverCommand,
    '--cassette',
    o.cassetteFile,
    '--port',
    '0',
    '--log',
    log,
    '--root',
    o.session.root,
  ];
  const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString('utf8')).slice(-4000)));
  const url = await new Promise<string | null>((res) => {
    const timer = setTimeout(() => res(null), 20_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      const line = out.split('\n')[0]!;
      if (out.includes('\n')) {
        clearTimeout(timer);
        res(/^http:\/\/127\.0\.0\.1:\d+$/.test(line) ? line : null);
      }
    });
    child.once('close', () => res(null));
    child.once('error', () => res(null));
  });
  if (!url || child.pid === undefined) {
    await stopGroup(child, 1000);
    throw new PdbError('E_INTERNAL', `the scripted model server did not start: ${excerpt(err || out)}`, {
      hint: 'Run pdb-env model serve --cassette FILE by hand to see why.',
    });
  }
  return { pid: child.pid, url, stop: () => stopGroup(child, 3000) };
}

/** The environment of the agent: this one without real credentials, plus the agent's own settings. */
function agentEnv(base: NodeJS.ProcessEnv, extra: Record<string, string>): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...base };
  for (const k of CREDENTIAL_VARS) env[k] = undefined;
  return { ...env, ...extra };
}

interface CommandOutcome {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  stderr: string;
}

/** The command boundary: the agent's CLI through `pdb-env run`, stdin closed, under the deadline. */
async function runCommand(argv: string[], env: Record<string, string | undefined>, o: RealAgentRunOptions): Promise<CommandOutcome> {
  const child = spawn(argv[0]!, argv.slice(1), {
    cwd: o.session.root,
    env: { ...env, PWD: o.session.root },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString('utf8')).slice(-16_000)));
  let timedOut = false;
  // pdb-env run ends everything it started on TERM (then KILL after its grace).
  const stop = () => {
    timedOut = true;
    void stopGroup(child, 8000);
  };
  const timer = setTimeout(stop, o.timeoutMs);
  o.signal?.addEventListener('abort', stop, { once: true });
  const s = await exited(child);
  clearTimeout(timer);
  o.signal?.removeEventListener('abort', stop);
  return { exitCode: s.code, signal: s.signal, timedOut, stderr };
}

/** What went wrong, from the server's summary and how the agent ended; null when the run is ok. */
export function classifyRun(
  s: ServerSummary,
  steps: number,
  end: { timedOut: boolean; exitCode: number | null; signal: string | null; stderr: string; acp?: AcpRunResult | null },
): { code: PdbErrorCode; message: string } | null {
  const stopped = `after ${s.stepsDone} of ${steps} steps`;
  if (end.timedOut)
    return { code: 'E_AGENT_TIMEOUT', message: `the agent did not finish before its deadline (${stopped}, ${s.turns} turns)` };
  if (s.stepFailure) {
    const refused = end.acp?.denials ?? [];
    const why = refused.length
      ? ` (the workspace policy refused ${refused.map((d) => `${d.access} ${d.path}: ${d.rule}`).join('; ')})`
      : '';
    return { code: 'E_AGENT_STEP_FAILED', message: `${s.stepFailure}${why}` };
  }
  if (s.protocolErrors.length && !s.finalServed) return { code: 'E_MODEL_PROTOCOL', message: s.protocolErrors[0]! };
  const acp = end.acp;
  if (acp && acp.phase !== 'done')
    return {
      code: 'E_AGENT_CRASHED',
      message: `the ACP agent stopped in ${acp.phase} ${stopped}: ${excerpt(acp.error?.message ?? acp.stderr)}`,
    };
  const crashed = acp ? false : end.exitCode !== 0;
  if (crashed)
    return {
      code: 'E_AGENT_CRASHED',
      message: `the agent exited ${end.exitCode ?? end.signal} ${stopped}: ${excerpt(end.stderr.split('\n').slice(-6).join('\n'))}`,
    };
  if (!s.finalServed)
    return { code: 'E_AGENT_CONTRACT', message: `the agent ended its turn ${stopped} without reaching the cassette's end` };
  if (acp && acp.stopReason !== 'end_turn') return { code: 'E_AGENT_CONTRACT', message: `the ACP turn ended with ${acp.stopReason}` };
  return null;
}

/** Run one real agent in one session against a cassette. Throws only before the agent starts (not installed, bad cassette). */
export async function runRealAgent(o: RealAgentRunOptions): Promise<RealAgentResult> {
  const t0 = performance.now();
  const base = o.env ?? process.env;
  const spec = REAL_AGENTS[o.agent];
  const cassette = await loadCassette(o.cassetteFile);
  const installed = findInstalled(o.agent, base);
  if (!installed) throw notInstalled(o.agent, base);
  const home = join(o.stateDir, 'home');
  const log = join(o.stateDir, 'model.log');
  await mkdir(home, { recursive: true });
  const plan = networkPlan(base);
  const server = await startServer(o, plan, log, base);
  const interfaces = plan.mode === 'loopback-only' ? namespaceInterfaces(server.pid) : null;
  const prompt = agentPrompt(cassette.digest, cassette.cassette.steps.length);
  const launch = agentLaunch({
    agent: o.agent,
    program: installed.program,
    url: server.url,
    prompt,
    home,
    asRoot: process.getuid?.() === 0,
  });
  // Each CLI expects its home and config directories to exist (Codex: "CODEX_HOME points to ... that path does not exist").
  for (const dir of Object.values(launch.env).filter((v) => v.startsWith(home))) await mkdir(dir, { recursive: true });
  const env = agentEnv(base, launch.env);
  const argv = [...o.runPrefix, ...plan.agentPrefix(server.pid), launch.command, ...launch.args];
  let end: Parameters<typeof classifyRun>[2];
  try {
    if (spec.boundary === 'command') end = await runCommand(argv, env, o);
    else {
      const acp = await runAcpAgent({
        command: argv[0]!,
        args: argv.slice(1),
        root: o.session.root,
        sessionName: o.session.name,
        prompt,
        env,
        timeoutMs: o.timeoutMs,
        signal: o.signal,
        policies: o.policies,
        mode: launch.mode,
        continueAfterDenial: cassette.cassette.steps.length,
      });
      end = { timedOut: acp.timedOut, exitCode: acp.exitCode, signal: acp.signal, stderr: acp.stderr, acp };
    }
  } finally {
    await server.stop();
  }
  const summary = summarize(readEventLog(log));
  const failure = classifyRun(summary, cassette.cassette.steps.length, end);
  return {
    agent: o.agent,
    product: spec.product,
    version: spec.version,
    boundary: spec.boundary,
    protocol: spec.protocol,
    model: 'scripted',
    cassette: cassette.digest,
    exitCode: end.exitCode,
    signal: end.signal,
    turns: summary.turns,
    steps: { total: cassette.cassette.steps.length, done: summary.finalServed ? cassette.cassette.steps.length : summary.stepsDone },
    network: plan.mode,
    networkNote: plan.reason,
    interfaces,
    denials: end.acp?.denials ?? [],
    outcome: failure ? failure.code : 'ok',
    failure,
    protocolErrors: summary.protocolErrors,
    stopReason: end.acp?.stopReason ?? null,
    durationMs: Math.round(performance.now() - t0),
  };
}

/** The class of a run's failure, kept apart from filesystem mismatches (which the harness's checks find). */
export function failureClassOf(
  code: string | null,
): 'none' | 'agent-crash' | 'protocol-mismatch' | 'step-failure' | 'incomplete' | 'timeout' | 'not-installed' | 'harness' {
  switch (code) {
    case null:
    case 'ok':
      return 'none';
    case 'E_AGENT_CRASHED':
      return 'agent-crash';
    case 'E_MODEL_PROTOCOL':
      return 'protocol-mismatch';
    case 'E_AGENT_STEP_FAILED':
      return 'step-failure';
    case 'E_AGENT_CONTRACT':
      return 'incomplete';
    case 'E_AGENT_TIMEOUT':
    case 'E_TIMEOUT':
      return 'timeout';
    case 'E_AGENT_NOT_INSTALLED':
      return 'not-installed';
    default:
      return 'harness';
  }
}
