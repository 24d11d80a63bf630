// Real agents, really run: two pinned agent CLIs at the same time, one per session from one base,
// each through `pdb-env agent run` (the user's own command: the scripted model server, the agent
// through pdb-env run, a loopback-only network namespace as root). Registered twice: real-agents
// (Codex and Claude Code as commands) and real-agents-acp (codex-acp and claude-agent-acp over ACP,
// their writes decided by pdb-env's workspace policy). Each session must equal the tree its
// cassette describes, made by pdb-env itself without any agent (agents/cassette/replay.ts): session
// a through the `expected` check and the block's full-copy oracle, session b through its own check.
// The model is scripted and the receipt says so; the agent binaries and their file writes are real.
import { existsSync } from 'node:fs';
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { loadCassette, type LoadedCassette } from '../../agents/cassette/cassette.js';
import { replayCassette } from '../../agents/cassette/replay.js';
import { isRunnableAgent, REAL_AGENTS, RUNNABLE_AGENTS, type RunnableAgent } from '../../agents/real/catalog.js';
import { failureClassOf } from '../../agents/real/run.js';
import { PdbError, type PdbErrorCode } from '../../model/errors.js';
import { packageFile } from '../../model/paths.js';
import { scanTree } from '../../model/scan/scan.js';
import { countMismatches, diffEntries, totalMismatches, type Entry } from '../../model/snapshot.js';
import { commitFixture } from '../commit-fixture.js';
import { writeEntryKinds } from '../entry-kinds.js';
import type { AgentRecord, ParamIssue, SessionHandle, Step, StepContext, Workload, WorkloadCheck } from '../types.js';
import { writeRealAgentsBase } from './base.js';

export interface RealAgentsParams {
  /** The agent in the case session (role a) and in its peer (role b). */
  agentA: RunnableAgent;
  agentB: RunnableAgent;
  /** Each role's cassette: a name in workloads/real-agents/cassettes/, or a path to a cassette file. */
  cassetteA: string;
  cassetteB: string;
  /** Each agent's deadline. */
  agentTimeoutMs: number;
}

const ROLES = ['a', 'b'] as const;
type Role = (typeof ROLES)[number];

/** A cassette by name (shipped with the workload) or by path. */
export function cassetteFile(name: string): string {
  return name.includes('/') || name.endsWith('.json') ? name : packageFile('workloads', 'real-agents', 'cassettes', `${name}.json`);
}

function paramIssues(defaults: RealAgentsParams) {
  return (params: Record<string, unknown>): ParamIssue[] => {
    const p = { ...defaults, ...params } as Record<string, unknown>;
    const issues: ParamIssue[] = [];
    for (const k of Object.keys(params))
      if (!(k in defaults)) issues.push({ pointer: `/${k}`, message: `unknown parameter; known: ${Object.keys(defaults).join(', ')}` });
    for (const k of ['agentA', 'agentB'])
      if (!isRunnableAgent(p[k])) issues.push({ pointer: `/${k}`, message: `must be one of ${RUNNABLE_AGENTS.join(', ')}` });
    for (const k of ['cassetteA', 'cassetteB'])
      if (typeof p[k] !== 'string' || !existsSync(cassetteFile(p[k] as string)))
        issues.push({ pointer: `/${k}`, message: 'must name a cassette in workloads/real-agents/cassettes/ or a cassette file' });
    if (typeof p.agentTimeoutMs !== 'number' || !Number.isInteger(p.agentTimeoutMs) || p.agentTimeoutMs < 1000)
      issues.push({ pointer: '/agentTimeoutMs', message: 'must be an integer >= 1000' });
    return issues;
  };
}

function parseParams(defaults: RealAgentsParams, params: Record<string, unknown>): RealAgentsParams {
  const issues = paramIssues(defaults)(params);
  if (issues.length) throw new PdbError('E_PLAN_INVALID', `real-agents: ${issues.map((i) => `${i.pointer} ${i.message}`).join('; ')}`);
  return { ...defaults, ...params } as RealAgentsParams;
}

const cassetteOf = (p: RealAgentsParams, role: Role) => (role === 'a' ? p.cassetteA : p.cassetteB);
const agentOf = (p: RealAgentsParams, role: Role) => (role === 'a' ? p.agentA : p.agentB);

/** Where prepareFixture left the tree a cassette describes (entries as JSON), next to the fixture. */
const expectedFile = (workDir: string, digest: string) => join(workDir, 'real-agents-expected', `${digest.slice(7, 23)}.json`);

/** The tree `cassette` describes: played by pdb-env itself on a copy of the base. */
async function describedTree(base: string, copy: string, c: LoadedCassette): Promise<Entry[]> {
  await rm(copy, { recursive: true, force: true });
  await cp(base, copy, { recursive: true, verbatimSymlinks: true, filter: (src) => !src.split('/').includes('.git') });
  const r = await replayCassette(copy, c.cassette);
  if (r.failure) throw new PdbError('E_CASSETTE_INVALID', `the cassette cannot be played on the real-agents base: ${r.failure.message}`);
  const entries = (await scanTree(copy, { excludes: [] })).entries;
  await rm(copy, { recursive: true, force: true });
  return entries;
}

/** What `pdb-env agent run --json` printed: its result, or its error. */
interface AgentRunOutput {
  agent?: string;
  product?: string;
  version?: string;
  boundary?: 'command' | 'acp';
  protocol?: string;
  cassette?: string;
  turns?: number;
  steps?: { total: number; done: number };
  network?: 'loopback-only' | 'not-enforced';
  denials?: { code: string; path: string; rule: string }[];
  outcome?: string;
  failure?: { code: string; message: string } | null;
  durationMs?: number;
  error?: { code: string; message: string };
}

function parseOutput(stdout: string): AgentRunOutput {
  try {
    return JSON.parse(stdout) as AgentRunOutput;
  } catch {
    return { error: { code: 'E_INTERNAL', message: `pdb-env agent run printed no JSON: ${stdout.slice(0, 200)}` } };
  }
}

function agentRecord(role: Role, agent: RunnableAgent, cassette: string, digest: string, out: AgentRunOutput, ms: number): AgentRecord {
  const spec = REAL_AGENTS[agent];
  const outcome = out.error?.code ?? out.outcome ?? 'E_INTERNAL';
  return {
    role,
    agent,
    product: out.product ?? spec.product,
    version: out.version ?? spec.version,
    boundary: spec.boundary,
    protocol: spec.protocol,
    model: 'scripted',
    cassette,
    cassetteDigest: digest,
    turns: out.turns ?? 0,
    steps: out.steps?.total ?? 0,
    stepsDone: out.steps?.done ?? 0,
    network: out.network ?? 'not-enforced',
    policyDenials: out.denials?.length ?? 0,
    outcome,
    failureClass: failureClassOf(outcome),
    durationMs: Math.round(out.durationMs ?? ms),
  };
}

/** Run one agent in one session through `pdb-env agent run`; its JSON goes to the case's scratch dir for the checks. */
async function runOne(
  ctx: StepContext,
  s: SessionHandle,
  role: Role,
  p: RealAgentsParams,
): Promise<{ record: AgentRecord; out: AgentRunOutput }> {
  const agent = agentOf(p, role);
  const file = cassetteFile(cassetteOf(p, role));
  const { digest } = await loadCassette(file);
  const t0 = performance.now();
  const args = ['agent', 'run', s.name, '--agent', agent, '--cassette', file, '--timeout', String(p.agentTimeoutMs), '--json'];
  const r = await ctx.pdbEnv(args, { timeoutMs: p.agentTimeoutMs + 60_000 });
  const out = r.timedOut
    ? { error: { code: 'E_AGENT_TIMEOUT', message: 'pdb-env agent run outlived its deadline' } }
    : parseOutput(r.stdout);
  await writeFile(join(ctx.scratchDir, `agent-${role}.json`), JSON.stringify(out));
  return { record: agentRecord(role, agent, cassetteOf(p, role), digest, out, performance.now() - t0), out };
}

function recordMetrics(ctx: StepContext, r: AgentRecord): void {
  const k = (name: string) => `agent${r.role.toUpperCase()}${name}`;
  for (const [name, v] of Object.entries({
    Product: r.product,
    Version: r.version,
    Boundary: r.boundary,
    Protocol: r.protocol,
    Model: r.model,
  }))
    ctx.metric(k(name), v);
  ctx.metric(k('Cassette'), r.cassetteDigest);
  ctx.metric(k('Outcome'), r.outcome);
  ctx.metric(k('Turns'), r.turns);
  ctx.metric(k('Network'), r.network);
  ctx.metric(k('PolicyDenials'), r.policyDenials);
  ctx.metric(k('DurationMs'), r.durationMs);
}

function realAgentSteps(defaults: RealAgentsParams) {
  return (params: Record<string, unknown>): Step[] => {
    const p = parseParams(defaults, params);
    return [
      {
        name: 'agents',
        timeoutMs: p.agentTimeoutMs + 90_000,
        async run(ctx) {
          if (ctx.sessions.length < 2) throw new PdbError('E_INTERNAL', 'the real-agents workload needs two sessions');
          // Both at once, one per session: neither may see the other's work.
          const t0 = performance.now();
          const runs = await Promise.all(ROLES.map((role, i) => runOne(ctx, ctx.sessions[i]!, role, p)));
          for (const { record } of runs) {
            ctx.recordAgent?.(record);
            recordMetrics(ctx, record);
          }
          ctx.metric('agentsWallMs', Math.round(performance.now() - t0));
          const failed = runs.find(({ record }) => record.outcome !== 'ok');
          if (failed) {
            const msg = failed.out.error?.message ?? failed.out.failure?.message ?? 'no result';
            throw new PdbError(
              failed.record.outcome as PdbErrorCode,
              `agent ${failed.record.role} (${failed.record.product} ${failed.record.version}): ${msg}`,
              {
                hint: `pdb-env agent run SESSION --agent ${failed.record.agent} --cassette <${failed.record.cassette}> replays it; docs/agents.md lists the failure classes.`,
              },
            );
          }
          return { milestones: Object.fromEntries(runs.map(({ record }) => [`agent${record.role.toUpperCase()}Ms`, record.durationMs])) };
        },
      },
    ];
  };
}

function treeCheck(name: string, expected: Entry[], actual: Entry[], what: string): WorkloadCheck {
  const mismatches = countMismatches(expected, actual);
  const n = totalMismatches(mismatches);
  const paths = diffEntries(expected, actual)
    .slice(0, 3)
    .map((c) => c.path);
  return {
    name,
    passed: n === 0,
    mismatches,
    detail: n === 0 ? `equals ${what}` : `${n} entries differ from ${what} (${paths.join(', ')})`,
  };
}

/** Paths of a tree that the base does not have (what a cassette created). */
function createdPaths(tree: Entry[], base: Entry[]): Set<string> {
  const had = new Set(base.map((e) => e.path));
  return new Set(tree.map((e) => e.path).filter((p) => !had.has(p)));
}

async function checkResults(
  defaults: RealAgentsParams,
  workDir: () => string | null,
  ctx: StepContext,
  results: Entry[][],
): Promise<WorkloadCheck[]> {
  const p = parseParams(defaults, ctx.params);
  const dir = workDir();
  const checks: WorkloadCheck[] = [];
  const trees: Entry[][] = [];
  for (const [i, role] of ROLES.entries()) {
    const { digest, cassette } = await loadCassette(cassetteFile(cassetteOf(p, role)));
    const tree = dir ? (JSON.parse(await readFile(expectedFile(dir, digest), 'utf8')) as Entry[]) : [];
    trees.push(tree);
    const actual = results[i];
    if (!actual) checks.push({ name: `cassette-tree-${role}`, passed: false, detail: 'no result for this session' });
    else checks.push(treeCheck(`cassette-tree-${role}`, tree, actual, `the tree cassette ${cassetteOf(p, role)} describes`));
    // Every step the cassette expects refused must show up as an E_POLICY_DENIED, and nothing of it outside the root.
    const wanted = cassette.steps.filter((s) => s.expect === 'denied').length;
    if (wanted === 0) continue;
    const out = JSON.parse(await readFile(join(ctx.scratchDir, `agent-${role}.json`), 'utf8').catch(() => '{}')) as AgentRunOutput;
    const denied = (out.denials ?? []).filter((d) => d.code === 'E_POLICY_DENIED');
    const leaked = cassette.steps.filter((s) => s.expect === 'denied' && 'path' in s && existsSync(join(ctx.sessions[i]!.root, s.path)));
    checks.push({
      name: `policy-denied-${role}`,
      passed: denied.length >= wanted && leaked.length === 0,
      detail: `${denied.length} requests refused with E_POLICY_DENIED (${[...new Set(denied.map((d) => d.path))].join(', ')}) for ${wanted} steps that must be; ${leaked.length} of their paths exist`,
    });
  }
  // Neither session holds anything that only its peer's cassette creates.
  const base = ctx.baseEntries ?? [];
  for (const [i, role] of ROLES.entries()) {
    const mine = createdPaths(trees[i]!, base);
    const peerOnly = [...createdPaths(trees[1 - i]!, base)].filter((x) => !mine.has(x));
    const seen = (results[i] ?? []).filter((e) => peerOnly.includes(e.path)).map((e) => e.path);
    checks.push({
      name: `peer-output-absent-${role}`,
      passed: peerOnly.length > 0 && seen.length === 0,
      detail: `${seen.length} of the ${peerOnly.length} paths only the peer creates are here${seen.length ? ` (${seen.slice(0, 3).join(', ')})` : ''}`,
    });
  }
  return checks;
}

/** The workload for one pair of agents; `name` is its registry name. */
export function createRealAgentsWorkload(name: string, defaults: RealAgentsParams): Workload {
  let workDir: string | null = null;
  return {
    name,
    description: `two real agent CLIs (${defaults.agentA} and ${defaults.agentB}, ${REAL_AGENTS[defaults.agentA].boundary} boundary) at the same time in two sessions from one base, driven by pdb-env's scripted model through their own tools; each session equals its cassette's tree`,
    deterministic: true,
    sessions: 2,
    defaultParams: { ...defaults },
    paramIssues: paramIssues(defaults),
    async prepareFixture(dir, params, proc) {
      const p = parseParams(defaults, params);
      workDir = dir;
      const source = join(dir, 'real-agents-base');
      const ready = join(dir, 'real-agents-base.ready');
      if (!existsSync(ready)) {
        await rm(source, { recursive: true, force: true });
        writeRealAgentsBase(source);
        await writeEntryKinds(source);
        await commitFixture(source, proc);
        await writeFile(ready, '');
      }
      for (const role of ROLES) {
        const c = await loadCassette(cassetteFile(cassetteOf(p, role)));
        const file = expectedFile(dir, c.digest);
        await mkdir(dirname(file), { recursive: true });
        await writeFile(file, JSON.stringify(await describedTree(source, join(dir, `real-agents-replay-${role}`), c)));
      }
      return { name: 'real-agents@2', sourceDir: source };
    },
    steps: realAgentSteps(defaults),
    project: (entries) => entries,
    projectionNote: "the whole result: the agents' writes are scripted and byte-exact",
    async expected(_base, params) {
      const p = parseParams(defaults, params);
      const { digest } = await loadCassette(cassetteFile(p.cassetteA));
      if (!workDir) throw new PdbError('E_INTERNAL', 'real-agents: expected() before prepareFixture()');
      return JSON.parse(await readFile(expectedFile(workDir, digest), 'utf8')) as Entry[];
    },
    check: (ctx, results) => checkResults(defaults, () => workDir, ctx, results),
    classifyFailure: (failure) => (failure.code === 'E_AGENT_NOT_INSTALLED' ? 'unavailable' : 'failed'),
  };
}

const TIMEOUT_MS = 300_000;

export const realAgentsWorkload = createRealAgentsWorkload('real-agents', {
  agentA: 'codex',
  agentB: 'claude',
  cassetteA: 'command-a',
  cassetteB: 'command-b',
  agentTimeoutMs: TIMEOUT_MS,
});

export const realAgentsAcpWorkload = createRealAgentsWorkload('real-agents-acp', {
  agentA: 'codex-acp',
  agentB: 'claude-acp',
  cassetteA: 'acp-a',
  cassetteB: 'acp-b',
  agentTimeoutMs: TIMEOUT_MS,
});
