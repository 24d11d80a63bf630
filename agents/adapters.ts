// Agents behind two boundaries: a command (`pdb-env run NAME -- <agent CLI>`) and ACP (pdb-env as
// client). Each adapter says how to launch its agent, detects the installed binary, its version
// and its credentials, and classifies failures before blame reaches the filesystem. Measured on
// this machine without credentials or network (codex-cli 0.171.0, Claude Code 2.1.197):
// `claude -p` prints "Not logged in · Please run /login" and exits 1 within a second;
// `codex exec` does not check its login first: it retries the Responses WebSocket, falls back to
// HTTPS ("failed to lookup address information: Name does not resolve") and then waits for the
// network indefinitely ("Reconnecting... waiting for network"); `codex login status` prints
// "Not logged in" and exits 1. Hence the credential preflight: it turns a stuck launch into a
// typed E_AGENT_AUTH before any process touches the session.
import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PdbErrorCode } from '../model/errors.js';
import { scriptedAgentVersion, SCRIPTED_AGENT_NAME } from './scripted-agent.js';

export const AGENT_NAMES = ['scripted', 'codex', 'claude'] as const;
export type AgentName = (typeof AGENT_NAMES)[number];
export const AGENT_BOUNDARIES = ['command', 'acp'] as const;
export type AgentBoundary = (typeof AGENT_BOUNDARIES)[number];

export function isAgentName(v: unknown): v is AgentName {
  return typeof v === 'string' && (AGENT_NAMES as readonly string[]).includes(v);
}
export function isAgentBoundary(v: unknown): v is AgentBoundary {
  return typeof v === 'string' && (AGENT_BOUNDARIES as readonly string[]).includes(v);
}

/** Failures of the agent's adapter (not installed, no credentials, model, network), as opposed to "it ran and failed". */
export const AGENT_UNAVAILABLE_CODES: readonly PdbErrorCode[] = [
  'E_AGENT_NOT_INSTALLED',
  'E_AGENT_AUTH',
  'E_AGENT_MODEL',
  'E_AGENT_NETWORK',
];

/** The compiled scripted agent (dist/agents/scripted-agent.js). */
export const SCRIPTED_AGENT_PATH = fileURLToPath(new URL('./scripted-agent.js', import.meta.url));

interface BinarySpec {
  bin: string;
  envVar: string;
  /** Product name recorded in receipts. */
  product: string;
}

const BINARIES: Record<Exclude<AgentName, 'scripted'>, Record<AgentBoundary, BinarySpec>> = {
  codex: {
    command: { bin: 'codex', envVar: 'PDB_ENV_CODEX_BIN', product: 'codex-cli' },
    acp: { bin: 'codex-acp', envVar: 'PDB_ENV_CODEX_ACP_BIN', product: 'codex-acp' },
  },
  claude: {
    command: { bin: 'claude', envVar: 'PDB_ENV_CLAUDE_BIN', product: 'claude-code' },
    acp: { bin: 'claude-agent-acp', envVar: 'PDB_ENV_CLAUDE_ACP_BIN', product: 'claude-agent-acp' },
  },
};

export type AuthState = 'ok' | 'missing' | 'unknown';

export interface AgentDetection {
  agent: AgentName;
  boundary: AgentBoundary;
  /** Product name, path-free (e.g. "codex-cli", "claude-agent-acp", "pdb-env-scripted-agent"). */
  product: string;
  installed: boolean;
  /** Absolute program path; used to launch, never written to a receipt. */
  program: string | null;
  version: string | null;
  auth: AuthState;
  /** Path-free note on how auth was judged (e.g. "env:OPENAI_API_KEY", "codex login status: not logged in"). */
  authEvidence: string;
}

export interface AgentLaunch {
  command: string;
  args: string[];
  env: Record<string, string>;
}

/** Run a short probe command; never throws. */
export interface ProbeExec {
  (file: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }>;
}

export const defaultProbeExec: ProbeExec = (file, args, env) =>
  new Promise((res) => {
    execFile(file, args, { env, timeout: 15_000, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : null) : 0;
      res({ code, output: `${stdout}${stderr}` });
    });
  });

function isExecutable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function findProgram(spec: BinarySpec, env: NodeJS.ProcessEnv): string | null {
  const override = env[spec.envVar];
  if (override) return isExecutable(override) ? override : null;
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, spec.bin);
    if (isExecutable(p)) return p;
  }
  return null;
}

/** First dotted version number in a tool's output ("codex-cli 0.171.0" -> "0.171.0"). */
export function parseVersion(text: string): string | null {
  return /\b(\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?)\b/.exec(text)?.[1] ?? null;
}

/** The version in the package.json nearest above a program (npm-installed adapters have no --version). */
export function packageVersionOf(program: string): string | null {
  let dir: string;
  try {
    dir = dirname(realpathSync(program));
  } catch {
    return null;
  }
  for (let i = 0; i < 6; i++) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        const v = (JSON.parse(readFileSync(pkg, 'utf8')) as { version?: unknown }).version;
        if (typeof v === 'string') return v;
      } catch {
        /* keep looking */
      }
    }
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return null;
}

const CODEX_KEYS = ['OPENAI_API_KEY', 'CODEX_API_KEY'];
const CLAUDE_KEYS = ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN', 'ANTHROPIC_AUTH_TOKEN'];

async function detectAuth(
  agent: Exclude<AgentName, 'scripted'>,
  program: string,
  boundary: AgentBoundary,
  env: NodeJS.ProcessEnv,
  exec: ProbeExec,
): Promise<{ auth: AuthState; authEvidence: string }> {
  const keys = agent === 'codex' ? CODEX_KEYS : CLAUDE_KEYS;
  const key = keys.find((k) => (env[k] ?? '') !== '');
  if (key) return { auth: 'ok', authEvidence: `env:${key}` };
  const home = env.HOME ?? homedir();
  if (agent === 'codex') {
    const codexHome = env.CODEX_HOME ?? join(home, '.codex');
    if (existsSync(join(codexHome, 'auth.json'))) return { auth: 'ok', authEvidence: 'file:codex auth.json' };
    if (boundary === 'command') {
      const r = await exec(program, ['login', 'status'], env);
      if (r.code === 0) return { auth: 'ok', authEvidence: 'codex login status: logged in' };
      if (/not logged in/i.test(r.output)) return { auth: 'missing', authEvidence: 'codex login status: not logged in' };
      return { auth: 'unknown', authEvidence: `codex login status exited ${r.code ?? 'abnormally'}` };
    }
    return { auth: 'missing', authEvidence: `no ${CODEX_KEYS.join('/')} and no codex auth.json` };
  }
  const configDir = env.CLAUDE_CONFIG_DIR ?? join(home, '.claude');
  if (existsSync(join(configDir, '.credentials.json'))) return { auth: 'ok', authEvidence: 'file:claude .credentials.json' };
  if (boundary === 'command') {
    const r = await exec(program, ['auth', 'status'], env);
    const loggedIn = /"loggedIn"\s*:\s*(true|false)/.exec(r.output)?.[1];
    if (loggedIn === 'true') return { auth: 'ok', authEvidence: 'claude auth status: logged in' };
    if (loggedIn === 'false') return { auth: 'missing', authEvidence: 'claude auth status: not logged in' };
    return { auth: 'unknown', authEvidence: `claude auth status exited ${r.code ?? 'abnormally'}` };
  }
  return { auth: 'missing', authEvidence: `no ${CLAUDE_KEYS.join('/')} and no claude .credentials.json` };
}

/** Find the agent's program for a boundary, its version and whether credentials are present. */
export async function detectAgent(
  agent: AgentName,
  boundary: AgentBoundary,
  options: { env?: NodeJS.ProcessEnv; exec?: ProbeExec } = {},
): Promise<AgentDetection> {
  const env = options.env ?? process.env;
  const exec = options.exec ?? defaultProbeExec;
  if (agent === 'scripted') {
    const installed = existsSync(SCRIPTED_AGENT_PATH);
    return {
      agent,
      boundary,
      product: SCRIPTED_AGENT_NAME,
      installed,
      program: installed ? process.execPath : null,
      version: scriptedAgentVersion(),
      auth: 'ok',
      authEvidence: 'none needed',
    };
  }
  const spec = BINARIES[agent][boundary];
  const program = findProgram(spec, env);
  if (!program)
    return {
      agent,
      boundary,
      product: spec.product,
      installed: false,
      program: null,
      version: null,
      auth: 'unknown',
      authEvidence: 'not installed',
    };
  let version: string | null = null;
  if (boundary === 'command') version = parseVersion((await exec(program, ['--version'], env)).output);
  version ??= packageVersionOf(program);
  return {
    agent,
    boundary,
    product: spec.product,
    installed: true,
    program,
    version,
    ...(await detectAuth(agent, program, boundary, env, exec)),
  };
}

/** How to run the agent as a plain command in its session root, given the contract prompt. */
export function commandLaunch(d: AgentDetection, prompt: string): AgentLaunch {
  if (!d.program) throw new Error(`${d.product} is not installed`);
  switch (d.agent) {
    case 'scripted':
      return { command: d.program, args: [SCRIPTED_AGENT_PATH, '--prompt', prompt], env: {} };
    case 'codex':
      // workspace-write: the agent may write its cwd (the session root) and nothing else.
      return {
        command: d.program,
        args: ['exec', '--skip-git-repo-check', '--ephemeral', '--sandbox', 'workspace-write', '--color', 'never', prompt],
        env: { NO_COLOR: '1' },
      };
    case 'claude':
      // The prompt goes before the variadic --allowedTools. Root may not skip permissions, so allow the tools the contract needs.
      return {
        command: d.program,
        args: ['-p', prompt, '--output-format', 'text', '--allowedTools', 'Bash,Edit,Write,Read'],
        env: { NO_COLOR: '1' },
      };
    default: {
      const never: never = d.agent;
      throw new Error(`unknown agent ${String(never)}`);
    }
  }
}

/** How to start the agent as an ACP server on stdio. */
export function acpLaunch(d: AgentDetection): AgentLaunch {
  if (!d.program) throw new Error(`${d.product} is not installed`);
  switch (d.agent) {
    case 'scripted':
      return { command: d.program, args: [SCRIPTED_AGENT_PATH, '--acp'], env: {} };
    case 'codex':
      return { command: d.program, args: [], env: { NO_COLOR: '1' } };
    case 'claude':
      // claude-agent-acp 0.23.1 computes ALLOW_BYPASS = !IS_ROOT || IS_SANDBOX; as root without it the
      // Claude process exits before session/new answers ("Query closed before response received",
      // -32603), hiding the real failure. Its permission mode stays "default": every tool use still
      // asks this client. Workspace isolation, not a sandbox, is what pdb-env claims.
      return { command: d.program, args: [], env: { NO_COLOR: '1', ...(process.getuid?.() === 0 ? { IS_SANDBOX: '1' } : {}) } };
    default: {
      const never: never = d.agent;
      throw new Error(`unknown agent ${String(never)}`);
    }
  }
}

export interface FailureInput {
  exitCode: number | null;
  timedOut: boolean;
  /** Agent output (stdout + stderr, or ACP error messages + stderr); inspected, never stored. */
  output: string;
  /** JSON-RPC error code from an ACP agent, if one was returned. */
  rpcCode?: number | null;
}

export interface Classification {
  code: PdbErrorCode;
  /** Path-free label of what matched (e.g. "auth: not logged in"). */
  reason: string;
}

const PATTERNS: { code: PdbErrorCode; label: string; re: RegExp }[] = [
  { code: 'E_AGENT_AUTH', label: 'auth: not logged in', re: /not logged in|please run \/login|login required|logged out/i },
  {
    code: 'E_AGENT_AUTH',
    label: 'auth: credentials rejected or expired',
    re: /invalid (x-)?api[ _-]?key|incorrect api key|authentication[ _](required|failed|error)|auth(entication)?_required|unauthori[sz]ed|\b401\b|token (has )?expired|expired (token|login|credentials|session)|missing (an )?api key|OPENAI_API_KEY|ANTHROPIC_API_KEY/i,
  },
  {
    code: 'E_AGENT_MODEL',
    label: 'model: not supported',
    re: /model_not_found|unsupported model|invalid model|unknown model|model\b[^\n]{0,80}\b(is not supported|not supported|does not exist|not found|is not available|not available)/i,
  },
  {
    code: 'E_AGENT_NETWORK',
    label: 'network: host unreachable',
    re: /failed to lookup address|name does not resolve|name or service not known|temporary failure in name resolution|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ENETUNREACH|EHOSTUNREACH|getaddrinfo|waiting for network|stream disconnected|error sending request|could not resolve host|network is unreachable|connection refused|fetch failed/i,
  },
];

/**
 * Classify a failed agent run. Auth and model errors outrank network errors (a CLI that is not
 * logged in may also fail to connect); a run killed by its timeout while it was waiting for the
 * network is a network failure, not a timeout.
 */
export function classifyAgentFailure(f: FailureInput): Classification {
  if (f.rpcCode === -32000) return { code: 'E_AGENT_AUTH', reason: 'auth: ACP authentication required (-32000)' };
  for (const p of PATTERNS) if (p.re.test(f.output)) return { code: p.code, reason: p.label };
  if (f.timedOut) return { code: 'E_AGENT_TIMEOUT', reason: 'timeout: no recognised cause in the output' };
  return { code: 'E_STEP_FAILED', reason: `exit ${f.exitCode ?? 'none'}: no recognised cause in the output` };
}
