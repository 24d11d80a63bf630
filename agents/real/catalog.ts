// The real agent CLIs pdb-env drives, pinned to exact versions: the newest of each that runs on
// Node 20 (npm silently picks an older release when the newest needs Node 22, hence exact pins).
// They are installed on purpose (`pdb-env agent install`) into a cache outside the project, never
// as dependencies of pdb-env: together they are about 900 MB.

export interface RealAgentSpec {
  /** The npm package. */
  package: string;
  /** The pinned exact version. */
  version: string;
  /** The executable the package installs (node_modules/.bin/<bin>). */
  bin: string;
  /** The product name receipts record. */
  product: string;
  /** How pdb-env reaches it: a command in the session (`pdb-env run`), or ACP with pdb-env as the client. */
  boundary: 'command' | 'acp';
  /** The model wire protocol it speaks. */
  protocol: 'responses' | 'messages' | 'chat' | 'gemini';
  /** Installed by `pdb-env agent install` without arguments, and required by the real-agents plan. */
  required: boolean;
}

export const REAL_AGENTS = {
  codex: {
    package: '@openai/codex',
    version: '0.171.0',
    bin: 'codex',
    product: 'codex-cli',
    boundary: 'command',
    protocol: 'responses',
    required: true,
  },
  claude: {
    package: '@anthropic-ai/claude-code',
    version: '2.1.197',
    bin: 'claude',
    product: 'claude-code',
    boundary: 'command',
    protocol: 'messages',
    required: true,
  },
  'codex-acp': {
    package: '@zed-industries/codex-acp',
    version: '0.16.0',
    bin: 'codex-acp',
    product: 'codex-acp',
    boundary: 'acp',
    protocol: 'responses',
    required: true,
  },
  'claude-acp': {
    package: '@agentclientprotocol/claude-agent-acp',
    version: '0.49.0',
    bin: 'claude-agent-acp',
    product: 'claude-agent-acp',
    boundary: 'acp',
    protocol: 'messages',
    required: true,
  },
  opencode: {
    package: 'opencode-ai',
    version: '1.18.33',
    bin: 'opencode',
    product: 'opencode',
    boundary: 'command',
    protocol: 'chat',
    required: false,
  },
  gemini: {
    package: '@google/gemini-cli',
    version: '0.61.0',
    bin: 'gemini',
    product: 'gemini-cli',
    boundary: 'command',
    protocol: 'gemini',
    required: false,
  },
} as const satisfies Record<string, RealAgentSpec>;

export type RealAgentName = keyof typeof REAL_AGENTS;

/** The agents `pdb-env agent run` can drive against the scripted model (gemini installs only: the server does not speak its protocol). */
export const RUNNABLE_AGENTS = ['codex', 'claude', 'codex-acp', 'claude-acp', 'opencode'] as const;
export type RunnableAgent = (typeof RUNNABLE_AGENTS)[number];

export function isRealAgentName(v: unknown): v is RealAgentName {
  return typeof v === 'string' && Object.hasOwn(REAL_AGENTS, v);
}

export function isRunnableAgent(v: unknown): v is RunnableAgent {
  return typeof v === 'string' && (RUNNABLE_AGENTS as readonly string[]).includes(v);
}

/** The agents installed when none is named: the four the real-agents plan needs. */
export function requiredAgents(): RealAgentName[] {
  return (Object.keys(REAL_AGENTS) as RealAgentName[]).filter((n) => REAL_AGENTS[n].required);
}
