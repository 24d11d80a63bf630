// `pdb-env agent install` (the pinned agent CLIs, into a cache outside the project) and `pdb-env
// agent run` (one of them in a session, against a cassette played by the scripted model).
import { join } from 'node:path';
import { PdbError } from '../../model/errors.js';
import { cliEntry } from '../../model/paths.js';
import { emit, table } from '../output.js';
import { openService, type CliContext, type CommandDefinitions, type DefineCommand, type SubcommandStubs } from '../context.js';
import type { RealAgentResult } from '../../agents/real/run.js';

function parseTimeout(v: string | undefined): number {
  if (v === undefined) return 300_000;
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < 1000)
    throw new PdbError('E_USAGE', `--timeout must be a whole number of milliseconds, at least 1000; got "${v}"`);
  return n;
}

type Change = { kind: string; path: string };

function runText(name: string, r: RealAgentResult & { changes: Change[] }): string {
  const head = `${r.product} ${r.version} (${r.boundary}, ${r.protocol}, model: scripted) in ${name}: ${r.outcome}`;
  const lines = [
    head,
    `  cassette ${r.cassette}: ${r.steps.done} of ${r.steps.total} steps, ${r.turns} turns, exit ${r.exitCode ?? r.signal}`,
    `  network: ${r.network}${r.networkNote ? ` (${r.networkNote})` : r.interfaces ? ` (interfaces: ${r.interfaces.join(', ')})` : ''}`,
  ];
  if (r.denials.length)
    lines.push(`  denied by the workspace policy: ${r.denials.map((d) => `${d.access} ${d.path} (${d.rule})`).join('; ')}`);
  if (r.failure) lines.push(`  ${r.failure.code}: ${r.failure.message}`);
  lines.push(`  changes: ${r.changes.length ? r.changes.map((c) => `${c.kind} ${c.path}`).join(', ') : 'none'}`);
  return lines.join('\n');
}

const run = (cmd: SubcommandStubs<'agent'>['run'], ctx: CliContext) =>
  cmd
    .argument('<name>', 'the session')
    .addHelpText(
      'after',
      `
Starts the scripted model server (pdb-env model serve) and the pinned agent, installed by
pdb-env agent install, in session NAME through pdb-env run: the session's ports, private
TMPDIR and tracked processes, a private HOME and config directory, and only 127.0.0.1 as
its model. codex, claude and opencode run as commands; codex-acp and claude-acp over the Agent
Client Protocol with pdb-env as the client, their writes and commands decided by the
session's workspace policy (a refusal is E_POLICY_DENIED and the agent goes on). As root
the agent runs in a network namespace with only loopback (network: loopback-only);
elsewhere network says not-enforced and why.

Prints agent, product, version, boundary, protocol, model ("scripted"), cassette digest,
exitCode, turns, steps, network, denials, changes and the outcome; exits 1 unless ok.
Failures: E_AGENT_NOT_INSTALLED, E_AGENT_CRASHED (the agent ended abnormally),
E_MODEL_PROTOCOL (a request the server could not map), E_AGENT_STEP_FAILED (a step's tool
result failed), E_AGENT_CONTRACT (it stopped before the end), E_AGENT_TIMEOUT.

Example:
  pdb-env create agent-a && pdb-env agent run agent-a --agent codex --cassette demo.json`,
    )
    .action(async (name, _o, command) => {
      const o = command.optsWithGlobals();
      const [{ isRunnableAgent, RUNNABLE_AGENTS }, { runRealAgent }, { loadPolicies }] = await Promise.all([
        import('../../agents/real/catalog.js'),
        import('../../agents/real/run.js'),
        import('../../sessions/runtime/load-policies.js'),
      ]);
      if (!isRunnableAgent(o.agent))
        throw new PdbError('E_USAGE', `--agent must be one of ${RUNNABLE_AGENTS.join(', ')}, got "${o.agent}"`);
      const timeoutMs = parseTimeout(o.timeout);
      const svc = await openService(o.store);
      const root = await svc.path(name);
      const r = await runRealAgent({
        agent: o.agent,
        cassetteFile: o.cassette,
        session: { name, root },
        runPrefix: [process.execPath, cliEntry(), 'run', name, '--store', svc.store.paths.root, '--'],
        serverCommand: [process.execPath, cliEntry(), 'model', 'serve'],
        stateDir: join(svc.sessionDir(name), 'agents', `${o.agent}-${Date.now()}`),
        policies: await loadPolicies(root, o.policy),
        timeoutMs,
      });
      const changes = (await svc.diff(name)).changes.map((c) => ({ kind: c.kind, path: c.path }));
      const result = { ...r, changes };
      emit(o.json === true, result, () => runText(name, result));
      ctx.exitCode = r.outcome === 'ok' ? 0 : 1;
    });

const install = (cmd: SubcommandStubs<'agent'>['install']) =>
  cmd
    .argument('[agents...]', 'codex, claude, codex-acp, claude-acp (the default: all four), opencode, gemini')
    .addHelpText(
      'after',
      `
Installs each agent's pinned exact version with npm install --prefix into its own
directory of the agent cache: $PDB_ENV_AGENTS_DIR, else $XDG_CACHE_HOME/pdb-env/agents,
else ~/.cache/pdb-env/agents. An agent whose pinned version is there already is left as
it is. pdb-env itself never depends on them (together about 900 MB).

  codex       @openai/codex 0.171.0
  claude      @anthropic-ai/claude-code 2.1.197
  codex-acp   @zed-industries/codex-acp 0.16.0
  claude-acp  @agentclientprotocol/claude-agent-acp 0.49.0
  opencode    opencode-ai 1.18.33 (optional)
  gemini      @google/gemini-cli 0.61.0 (optional)

--json prints one {agent, product, version, program, action} per agent.

Example:
  pdb-env agent install --json`,
    )
    .action(async (names: string[], _o, command) => {
      const o = command.optsWithGlobals();
      const [{ REAL_AGENTS, isRealAgentName, requiredAgents }, { installAgent, agentsCacheDir }] = await Promise.all([
        import('../../agents/real/catalog.js'),
        import('../../agents/real/install.js'),
      ]);
      const bad = names.filter((n) => !isRealAgentName(n));
      if (bad.length) throw new PdbError('E_USAGE', `unknown agent ${bad.join(', ')}; known: ${Object.keys(REAL_AGENTS).join(', ')}`);
      const agents = names.length ? names.filter(isRealAgentName) : requiredAgents();
      const results: Awaited<ReturnType<typeof installAgent>>[] = [];
      for (const a of agents) {
        if (!o.json) process.stderr.write(`${REAL_AGENTS[a].package}@${REAL_AGENTS[a].version} -> ${agentsCacheDir()}\n`);
        results.push(await installAgent(a));
      }
      emit(o.json === true, results, () =>
        table([
          ['AGENT', 'PRODUCT', 'VERSION', 'ACTION', 'PROGRAM'],
          ...results.map((r) => [r.agent, r.product, r.version, r.action, r.program]),
        ]),
      );
    });

const agent: DefineCommand<'agent'> = (cmd, ctx, sub) => {
  cmd.addHelpText('after', '\nReal agent CLIs against the scripted model: see docs/agents.md.');
  install(sub.install);
  run(sub.run, ctx);
};

export const commands: CommandDefinitions<'agent'> = { agent };
