// Installing the pinned agent CLIs into a cache outside the project tree, one npm prefix per
// package and version (`<cache>/<package>@<version>/node_modules/...`), and finding them there.
// The cache is $PDB_ENV_AGENTS_DIR, else $XDG_CACHE_HOME/pdb-env/agents, else
// ~/.cache/pdb-env/agents. An agent counts as installed only when its package.json there has the
// pinned version and its executable exists: a second install is a no-op, never a re-download.
import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, realpathSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, relative, resolve, isAbsolute } from 'node:path';
import { PdbError } from '../../model/errors.js';
import { packageRoot } from '../../model/paths.js';
import { REAL_AGENTS, type RealAgentName } from './catalog.js';

export interface InstalledAgent {
  agent: RealAgentName;
  product: string;
  version: string;
  /** The executable (absolute; shown to the user, never written to a receipt). */
  program: string;
}

export function agentsCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PDB_ENV_AGENTS_DIR) return resolve(env.PDB_ENV_AGENTS_DIR);
  const cache = env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(env.HOME ?? homedir(), '.cache');
  return join(cache, 'pdb-env', 'agents');
}

/** The npm prefix of one agent's pinned version. */
export function agentPrefix(agent: RealAgentName, env: NodeJS.ProcessEnv = process.env): string {
  const spec = REAL_AGENTS[agent];
  return join(agentsCacheDir(env), `${spec.package}@${spec.version}`);
}

function executable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The installed agent when its pinned version is in the cache, else null. */
export function findInstalled(agent: RealAgentName, env: NodeJS.ProcessEnv = process.env): InstalledAgent | null {
  const spec = REAL_AGENTS[agent];
  const prefix = agentPrefix(agent, env);
  const program = join(prefix, 'node_modules', '.bin', spec.bin);
  let version: unknown;
  try {
    version = (JSON.parse(readFileSync(join(prefix, 'node_modules', spec.package, 'package.json'), 'utf8')) as { version?: unknown })
      .version;
  } catch {
    return null;
  }
  if (version !== spec.version || !executable(program)) return null;
  return { agent, product: spec.product, version: spec.version, program };
}

/** E_AGENT_NOT_INSTALLED naming the install command. */
export function notInstalled(agent: RealAgentName, env: NodeJS.ProcessEnv = process.env): PdbError {
  const spec = REAL_AGENTS[agent];
  return new PdbError(
    'E_AGENT_NOT_INSTALLED',
    `${spec.product} ${spec.version} (${spec.package}) is not installed in ${agentsCacheDir(env)}`,
    {
      hint: `pdb-env agent install ${agent}`,
    },
  );
}

/** Refuse a cache inside the project tree: tools that crawl the project would find 900 MB of agents. */
function assertOutsideProject(cache: string): void {
  const project = realpathSync(packageRoot());
  let real = resolve(cache);
  for (let up = real; ; up = resolve(up, '..')) {
    if (existsSync(up)) {
      real = join(realpathSync(up), relative(up, real));
      break;
    }
    if (up === resolve(up, '..')) break;
  }
  const rel = relative(project, real);
  if (rel === '' || (!rel.startsWith('..') && !isAbsolute(rel)))
    throw new PdbError('E_USAGE', `the agent cache ${cache} is inside the pdb-env project`, {
      hint: 'Set PDB_ENV_AGENTS_DIR (or XDG_CACHE_HOME) to a directory outside the project tree.',
    });
}

export interface InstallResult extends InstalledAgent {
  /** installed: npm ran; present: the pinned version was already there. */
  action: 'installed' | 'present';
}

/** Runs npm; resolves with its exit code and the tail of its output. Injected by tests. */
export type NpmRunner = (args: string[], env: NodeJS.ProcessEnv) => Promise<{ code: number | null; output: string }>;

export const defaultNpm: NpmRunner = (args, env) =>
  new Promise((res) => {
    const child = spawn('npm', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (d: Buffer) => (output = (output + d.toString('utf8')).slice(-8000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', (err) => res({ code: null, output: `${output}${err.message}` }));
    child.on('close', (code) => res({ code, output }));
  });

/** The npm arguments that install one agent's pinned version into its own prefix. */
export function npmInstallArgs(agent: RealAgentName, env: NodeJS.ProcessEnv = process.env): string[] {
  const spec = REAL_AGENTS[agent];
  return [
    'install',
    '--prefix',
    agentPrefix(agent, env),
    '--no-audit',
    '--no-fund',
    '--save-exact',
    '--loglevel=warn',
    `${spec.package}@${spec.version}`,
  ];
}

/** Install one agent unless its pinned version is already in the cache. */
export async function installAgent(
  agent: RealAgentName,
  options: { env?: NodeJS.ProcessEnv; npm?: NpmRunner } = {},
): Promise<InstallResult> {
  const env = options.env ?? process.env;
  const present = findInstalled(agent, env);
  if (present) return { ...present, action: 'present' };
  assertOutsideProject(agentsCacheDir(env));
  await mkdir(agentPrefix(agent, env), { recursive: true });
  const r = await (options.npm ?? defaultNpm)(npmInstallArgs(agent, env), env);
  const spec = REAL_AGENTS[agent];
  if (r.code !== 0) {
    const offline = /ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNREFUSED|ECONNRESET|network/i.test(r.output);
    throw new PdbError(
      offline ? 'E_REGISTRY_UNREACHABLE' : 'E_STEP_FAILED',
      `npm install ${spec.package}@${spec.version} exited ${r.code ?? 'abnormally'}: ${r.output.trim().split('\n').slice(-5).join(' | ')}`,
      {
        hint: offline ? 'The npm registry must be reachable to install the agents.' : 'Run the npm command by hand to see its full output.',
      },
    );
  }
  const installed = findInstalled(agent, env);
  if (!installed)
    throw new PdbError(
      'E_AGENT_NOT_INSTALLED',
      `npm installed ${spec.package}, but not version ${spec.version} with its ${spec.bin} executable`,
      {
        hint: `Remove ${agentPrefix(agent, env)} and run pdb-env agent install ${agent} again.`,
      },
    );
  return { ...installed, action: 'installed' };
}
