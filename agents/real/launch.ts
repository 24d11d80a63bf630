// How each real agent is started against the scripted model: its command line, the settings that
// keep it on 127.0.0.1, and private home and config directories (each CLI keeps state there).
// Measured on these machines (WORKLOADS.md): without `-c analytics.enabled=false -c
// features.plugins=false` Codex looks up ab.chatgpt.com, github.com and chatgpt.com; Codex refuses
// to make its sandbox helper under the temp dir, so CODEX_HOME must not be under TMPDIR (the
// session's temp dir is a sibling of the home here); Codex's workspace-write sandbox lets commands
// write /tmp unless exclude_slash_tmp; Claude Code needs IS_SANDBOX=1 as root and Bash allowed in
// -p mode (acceptEdits alone asks for approval of most commands and fails them).
import { join } from 'node:path';
import type { RunnableAgent } from './catalog.js';

export interface LaunchInput {
  agent: RunnableAgent;
  program: string;
  /** The scripted model server's base URL (http://127.0.0.1:PORT). */
  url: string;
  prompt: string;
  /** A private directory for the agent's HOME, config and caches (outside the session root, not under TMPDIR). */
  home: string;
  asRoot: boolean;
}

export interface Launch {
  command: string;
  args: string[];
  /** Set on top of the environment; CREDENTIAL_VARS are removed from it first. */
  env: Record<string, string>;
  /** The ACP session mode to ask for (ACP agents only). */
  mode: string | null;
}

/** Real credentials never reach a scripted run: the model is pdb-env's server, and nothing else may be called. */
export const CREDENTIAL_VARS = [
  'OPENAI_API_KEY',
  'CODEX_API_KEY',
  'OPENAI_BASE_URL',
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_AUTH_TOKEN',
  'ANTHROPIC_BASE_URL',
  'CLAUDE_CODE_OAUTH_TOKEN',
  'CLAUDE_CODE_USE_BEDROCK',
  'CLAUDE_CODE_USE_VERTEX',
  'GEMINI_API_KEY',
  'GOOGLE_API_KEY',
];

const MODEL = 'pdb-env-scripted';

/** Codex's configuration as -c switches: a local provider, nothing else contacted, /tmp not writable. */
function codexConfig(url: string, extra: string[][] = []): string[] {
  return [
    ['model', `"${MODEL}"`],
    ['model_provider', '"pdbenv"'],
    ['model_providers.pdbenv', `{name="pdb-env scripted model",base_url="${url}/v1",wire_api="responses"}`],
    ['analytics.enabled', 'false'],
    ['features.plugins', 'false'],
    ...extra,
  ].flatMap(([k, v]) => ['-c', `${k}=${v}`]);
}

function privateDirs(home: string): Record<string, string> {
  return {
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    NO_COLOR: '1',
  };
}

function claudeEnv(i: LaunchInput): Record<string, string> {
  return {
    ...privateDirs(i.home),
    CLAUDE_CONFIG_DIR: join(i.home, '.claude'),
    ANTHROPIC_BASE_URL: i.url,
    ANTHROPIC_API_KEY: 'pdb-env-scripted-model',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    ...(i.asRoot ? { IS_SANDBOX: '1' } : {}),
  };
}

/**
 * opencode 1.18.33 through @ai-sdk/openai-compatible (Chat Completions), configured inline.
 * Measured in a loopback-only namespace: it still looks for plugin and model metadata and goes on
 * without them (its first request comes about 8 s after start); the OPENCODE_DISABLE_* switches
 * keep it from updating, sharing, fetching models.dev and reading ~/.claude.
 */
function opencodeEnv(i: LaunchInput): Record<string, string> {
  const provider = {
    npm: '@ai-sdk/openai-compatible',
    name: 'pdb-env scripted model',
    options: { baseURL: `${i.url}/v1`, apiKey: 'pdb-env-scripted-model' },
    models: { [MODEL]: { name: MODEL } },
  };
  const config = { provider: { pdbenv: provider }, model: `pdbenv/${MODEL}`, autoupdate: false, share: 'disabled' };
  const off = ['AUTOUPDATE', 'MODELS_FETCH', 'DEFAULT_PLUGINS', 'SHARE', 'LSP_DOWNLOAD', 'CLAUDE_CODE'];
  return {
    ...privateDirs(i.home),
    OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
    ...Object.fromEntries(off.map((k) => [`OPENCODE_DISABLE_${k}`, '1'])),
  };
}

export function agentLaunch(i: LaunchInput): Launch {
  const codexEnv = { ...privateDirs(i.home), CODEX_HOME: join(i.home, '.codex') };
  switch (i.agent) {
    case 'codex':
      return {
        command: i.program,
        args: [
          'exec',
          '--skip-git-repo-check',
          '--ephemeral',
          '--json',
          '--color',
          'never',
          '-s',
          'workspace-write',
          ...codexConfig(i.url, [['sandbox_workspace_write.exclude_slash_tmp', 'true']]),
          i.prompt,
        ],
        env: codexEnv,
        mode: null,
      };
    case 'claude':
      return {
        command: i.program,
        args: ['-p', i.prompt, '--output-format', 'stream-json', '--verbose', '--permission-mode', 'acceptEdits', '--allowedTools', 'Bash'],
        env: claudeEnv(i),
        mode: null,
      };
    case 'codex-acp':
      // untrusted approvals in the workspace-write sandbox: every patch and every command asks the
      // client, whose workspace policy decides. (Its read-only mode asks too, but an approved patch
      // there cannot make parent directories: "Failed to create parent directories".)
      return {
        command: i.program,
        args: codexConfig(i.url, [
          ['sandbox_mode', '"workspace-write"'],
          ['approval_policy', '"untrusted"'],
          ['sandbox_workspace_write.exclude_slash_tmp', 'true'],
        ]),
        env: codexEnv,
        mode: null,
      };
    case 'claude-acp':
      // default: every write and command asks the client, whose workspace policy decides.
      return { command: i.program, args: [], env: claudeEnv(i), mode: 'default' };
    case 'opencode':
      return { command: i.program, args: ['run', '--format', 'json', i.prompt], env: opencodeEnv(i), mode: null };
    default: {
      const never: never = i.agent;
      throw new Error(`unknown agent ${String(never)}`);
    }
  }
}

/** The task every agent is given; the scripted model plays the cassette whatever it says. */
export function agentPrompt(digest: string, steps: number): string {
  return [
    `Play the pdb-env cassette ${digest}: carry out its ${steps} steps with your own tools, one tool call per turn.`,
    "The model answering you is pdb-env's scripted model server; nothing it says is a model's output.",
  ].join(' ');
}
