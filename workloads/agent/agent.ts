// The agent lane: two agents at the same time, one per session, both from one base, each handed
// only its session root through a boundary (a command via `pdb-env run`, or ACP with pdb-env as the
// client) and the same operation contract. Afterwards each result is verified on its own: the
// contract's changes are present, the peer's absent, the rest of the base untouched, and the
// agent's report names its own session and working directory. Real agents that cannot run here
// (not installed, no credentials, no network) fail with a typed code before any file is touched,
// and the case metrics say so; the agent's transcript is never kept, only counts and timings.
import { existsSync } from 'node:fs';
import { readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runAcpAgent } from '../../agents/acp-client.js';
import {
  AGENT_UNAVAILABLE_CODES,
  acpLaunch,
  classifyAgentFailure,
  commandLaunch,
  detectAgent,
  isAgentBoundary,
  isAgentName,
  type AgentBoundary,
  type AgentDetection,
  type AgentName,
} from '../../agents/adapters.js';
import {
  AGENT_ROLES,
  baseEntries,
  contractPrompt,
  expectedEntries,
  parseReport,
  contractPaths,
  verifyContract,
  writeContractBase,
  type AgentRole,
} from '../../agents/contract.js';
import { PdbError, toPdbError, type PdbErrorCode } from '../../model/errors.js';
import { scanTree } from '../../model/scan/scan.js';
import { diffEntries, sortEntries, type Entry } from '../../model/snapshot.js';
import { commitFixture } from '../commit-fixture.js';
import { writeEntryKinds } from '../entry-kinds.js';
import type { ProcessResult, SessionHandle, Step, StepContext, Workload, WorkloadCheck } from '../types.js';

export interface AgentParams {
  /** The agent in the case session (role a) and in its peer (role b). */
  agentA: AgentName;
  agentB: AgentName;
  /** How each agent is reached: a command via `pdb-env run`, or ACP with pdb-env as the client. */
  boundaryA: AgentBoundary;
  boundaryB: AgentBoundary;
  /** Each agent's own time limit. */
  agentTimeoutMs: number;
  /** Check credentials before launching (a CLI without a login may otherwise wait for the network). */
  preflight: boolean;
}

// By default the case exercises both boundaries at once: agent a through a command, agent b over ACP.
export const AGENT_DEFAULTS: AgentParams = {
  agentA: 'scripted',
  agentB: 'scripted',
  boundaryA: 'command',
  boundaryB: 'acp',
  agentTimeoutMs: 120_000,
  preflight: true,
};

/** Validate plan parameters; unknown keys and bad values fail at once (E_PLAN_INVALID). */
export function agentParams(params: Record<string, unknown>): AgentParams {
  for (const k of Object.keys(params))
    if (!(k in AGENT_DEFAULTS))
      throw new PdbError('E_PLAN_INVALID', `agent: unknown parameter "${k}"; known: ${Object.keys(AGENT_DEFAULTS).join(', ')}`);
  const p = { ...AGENT_DEFAULTS, ...params } as Record<keyof AgentParams, unknown>;
  if (!isAgentName(p.agentA) || !isAgentName(p.agentB))
    throw new PdbError('E_PLAN_INVALID', `agent: agentA and agentB must be scripted, codex or claude`);
  for (const k of ['boundaryA', 'boundaryB'] as const)
    if (!isAgentBoundary(p[k])) throw new PdbError('E_PLAN_INVALID', `agent: ${k} must be "command" or "acp", got ${String(p[k])}`);
  if (typeof p.agentTimeoutMs !== 'number' || !Number.isInteger(p.agentTimeoutMs) || p.agentTimeoutMs < 1000)
    throw new PdbError('E_PLAN_INVALID', 'agent: agentTimeoutMs must be an integer >= 1000');
  if (typeof p.preflight !== 'boolean') throw new PdbError('E_PLAN_INVALID', 'agent: preflight must be true or false');
  return p as AgentParams;
}

/** What one agent's run came to; becomes case metrics (path-free) and, on failure, the step's error. */
export interface AgentRun {
  role: AgentRole;
  detection: AgentDetection;
  launched: boolean;
  failure: { code: PdbErrorCode; reason: string } | null;
  /** Whether the session differed from the base when the run ended (meaningful on failure). */
  filesTouched: boolean;
  changedPaths: number;
  startMs: number;
  endMs: number;
  exitCode: number | null;
  counts: Record<string, number>;
  stopReason: string | null;
  /** The command boundary's process (CPU, RSS, exit code for the receipt's step record). */
  process?: ProcessResult;
}

async function scanRoot(root: string): Promise<Entry[]> {
  return (await scanTree(root, { excludes: [] })).entries;
}

/** The command boundary: the agent's CLI through `pdb-env run`; records into `run`. */
async function runThroughCommand(
  ctx: Pick<StepContext, 'pdbEnvRun'>,
  session: SessionHandle,
  prompt: string,
  p: AgentParams,
  run: AgentRun,
): Promise<void> {
  const l = commandLaunch(run.detection, prompt);
  run.launched = true;
  const r = await ctx.pdbEnvRun(session, l.command, l.args, { env: l.env, timeoutMs: p.agentTimeoutMs, input: '' });
  run.exitCode = r.exitCode;
  run.process = r;
  run.counts = { stdoutBytes: Buffer.byteLength(r.stdout), stderrBytes: Buffer.byteLength(r.stderr) };
  if (r.timedOut || r.exitCode !== 0)
    run.failure = classifyAgentFailure({ exitCode: r.exitCode, timedOut: r.timedOut, output: `${r.stdout}\n${r.stderr}` });
}

/** The ACP boundary: pdb-env is the client, the session root the agent's workspace; records into `run`. */
async function runThroughAcp(
  ctx: Pick<StepContext, 'signal'>,
  session: SessionHandle,
  prompt: string,
  p: AgentParams,
  run: AgentRun,
): Promise<void> {
  const detection = run.detection;
  const l = acpLaunch(detection);
  run.launched = true;
  const r = await runAcpAgent({
    command: l.command,
    args: l.args,
    root: session.root,
    sessionName: session.name,
    prompt,
    env: l.env,
    timeoutMs: p.agentTimeoutMs,
    signal: ctx.signal,
  });
  run.exitCode = r.exitCode;
  run.stopReason = r.stopReason;
  run.counts = { ...r.stats };
  if (r.agentVersion && !detection.version) detection.version = r.agentVersion;
  if (r.phase !== 'done')
    run.failure = classifyAgentFailure({
      exitCode: r.exitCode,
      timedOut: r.timedOut,
      output: `${r.error?.message ?? ''}\n${r.stderr}`,
      rpcCode: r.error?.rpcCode ?? null,
    });
  else if (r.stopReason !== 'end_turn') run.failure = { code: 'E_AGENT_CONTRACT', reason: `the turn ended with ${r.stopReason}` };
}

/** Run one agent in one session through the chosen boundary. Never throws for agent failures. */
export async function runAgentInSession(
  ctx: Pick<StepContext, 'pdbEnvRun' | 'signal' | 'baseEntries'>,
  session: SessionHandle,
  role: AgentRole,
  detection: AgentDetection,
  p: AgentParams,
  t0: number,
): Promise<AgentRun> {
  const boundary = detection.boundary;
  const run: AgentRun = {
    role,
    detection,
    launched: false,
    failure: null,
    filesTouched: false,
    changedPaths: 0,
    startMs: performance.now() - t0,
    endMs: 0,
    exitCode: null,
    counts: {},
    stopReason: null,
  };
  const before = ctx.baseEntries ?? (await scanRoot(session.root));
  const prompt = contractPrompt(role);
  try {
    if (!detection.installed) {
      run.failure = { code: 'E_AGENT_NOT_INSTALLED', reason: `${detection.product} not found on PATH or in its PDB_ENV_*_BIN variable` };
    } else if (p.preflight && detection.auth === 'missing') {
      run.failure = { code: 'E_AGENT_AUTH', reason: `preflight: ${detection.authEvidence}` };
    } else if (boundary === 'command') {
      await runThroughCommand(ctx, session, prompt, p, run);
    } else {
      await runThroughAcp(ctx, session, prompt, p, run);
    }
  } catch (err) {
    const e = toPdbError(err);
    run.failure = {
      code: e.code,
      reason: e.code === 'E_AGENT_NOT_INSTALLED' ? 'could not start the agent program' : 'the boundary failed',
    };
  }
  const after = await scanRoot(session.root);
  run.changedPaths = diffEntries(before, after).length;
  run.filesTouched = run.changedPaths > 0;
  if (!run.failure) {
    const findings = await verifyContract(after, role, (rel) => readFile(join(session.root, rel)));
    const missed = findings.filter((f) => !f.passed).map((f) => f.item);
    if (missed.length) run.failure = { code: 'E_AGENT_CONTRACT', reason: `not done: ${missed.join(', ')}` };
  }
  run.endMs = performance.now() - t0;
  return run;
}

function recordMetrics(ctx: Pick<StepContext, 'metric'>, run: AgentRun): void {
  const k = (name: string) => `agent${run.role.toUpperCase()}${name}`;
  const d = run.detection;
  ctx.metric(k('Name'), d.product);
  ctx.metric(k('Version'), d.version ?? 'unknown');
  ctx.metric(k('Boundary'), d.boundary);
  ctx.metric(k('Auth'), d.auth);
  ctx.metric(k('Launched'), run.launched);
  ctx.metric(k('Outcome'), run.failure ? run.failure.code : 'ok');
  if (run.failure) ctx.metric(k('FailureReason'), run.failure.reason);
  ctx.metric(k('FilesTouched'), run.filesTouched);
  ctx.metric(k('ChangedPaths'), run.changedPaths);
  ctx.metric(k('DurationMs'), Math.round(run.endMs - run.startMs));
  if (run.exitCode !== null) ctx.metric(k('ExitCode'), run.exitCode);
  if (run.stopReason) ctx.metric(k('StopReason'), run.stopReason);
  for (const [name, n] of Object.entries(run.counts)) ctx.metric(k(name[0]!.toUpperCase() + name.slice(1)), n);
}

function agentSteps(params: Record<string, unknown>): Step[] {
  const p = agentParams(params);
  return [
    {
      name: 'agents',
      timeoutMs: p.agentTimeoutMs + 30_000,
      async run(ctx) {
        if (ctx.sessions.length < 2) throw new PdbError('E_INTERNAL', 'the agent workload needs two sessions (workload.sessions = 2)');
        // Detect both first (version and credential probes take a second), then start both agents
        // together so they run at the same time, one per session.
        const detections = await Promise.all([detectAgent(p.agentA, p.boundaryA), detectAgent(p.agentB, p.boundaryB)]);
        const t0 = performance.now();
        const runs = await Promise.all(AGENT_ROLES.map((role, i) => runAgentInSession(ctx, ctx.sessions[i]!, role, detections[i]!, p, t0)));
        for (const r of runs) recordMetrics(ctx, r);
        const [a, b] = runs as [AgentRun, AgentRun];
        ctx.metric('agentsOverlapMs', Math.max(0, Math.round(Math.min(a.endMs, b.endMs) - Math.max(a.startMs, b.startMs))));
        const failed = runs.find((r) => r.failure);
        if (failed?.failure) {
          const touched = failed.filesTouched ? 'after files were touched' : 'before any file was touched';
          throw new PdbError(
            failed.failure.code,
            `agent ${failed.role} (${failed.detection.product}, ${failed.detection.boundary}) failed ${touched}: ${failed.failure.reason}`,
          );
        }
        return { process: a.process ?? b.process, milestones: { agentAMs: a.endMs - a.startMs, agentBMs: b.endMs - b.startMs } };
      },
    },
  ];
}

/** The report and its directory's name differ per session by design: they are checked, not compared. */
function isReport(path: string): boolean {
  return AGENT_ROLES.some((r) => path === contractPaths(r).report);
}

/**
 * Scripted agents: the result without the reports. Real agents: the result's shape (paths, kinds,
 * exec bits, symlink targets), because a model's text varies; the contract checks judge content.
 */
export function projectAgentResult(entries: Entry[], params: Record<string, unknown>): Entry[] {
  const p = agentParams(params);
  const kept = entries.filter((e) => !isReport(e.path));
  if (p.agentA === 'scripted') return kept;
  return kept.map((e) =>
    e.kind === 'file' ? { ...e, digest: 'sha256:0000000000000000000000000000000000000000000000000000000000000000', size: 0 } : e,
  );
}

export async function checkAgentResults(ctx: Pick<StepContext, 'sessions'>, results: Entry[][]): Promise<WorkloadCheck[]> {
  const checks: WorkloadCheck[] = [];
  const roots = new Set<string>();
  for (const [i, role] of AGENT_ROLES.entries()) {
    const s = ctx.sessions[i];
    const entries = results[i];
    if (!s || !entries) {
      checks.push({ name: `contract-${role}`, passed: false, detail: 'no result for this session' });
      continue;
    }
    const findings = await verifyContract(entries, role, (rel) => readFile(join(s.root, rel)));
    const missed = findings.filter((f) => !f.passed).map((f) => f.item);
    checks.push({
      name: `contract-${role}`,
      passed: missed.length === 0,
      detail: missed.length ? `failed: ${missed.join(', ')}` : `${findings.length} contract items present, the peer's absent`,
    });

    const reportEntry = entries.find((e) => e.path === contractPaths(role).report);
    const text = reportEntry ? await readFile(join(s.root, contractPaths(role).report), 'utf8').catch(() => null) : null;
    const report = parseReport(text);
    const realRoot = await realpath(s.root).catch(() => s.root);
    const same = async (p: string | null | undefined) => (p ? (await realpath(p).catch(() => p)) === realRoot : true);
    const problems: string[] = [];
    if (!report) problems.push('no readable report');
    else {
      if (report.role !== role) problems.push('report names the wrong role');
      if (report.session !== s.name)
        problems.push(report.session === null ? 'PDB_ENV_SESSION was not set' : 'PDB_ENV_SESSION names another session');
      if (!(await same(report.cwd))) problems.push('working directory was not the session root');
      if (!(await same(report.sessionCwd))) problems.push('ACP session/new cwd was not the session root');
      if (report.peerOutputSeen === true) problems.push("the peer's output was visible");
      if (report.outsideReadRefused === false) problems.push('a read outside the root was served');
    }
    roots.add(realRoot);
    checks.push({
      name: `identity-${role}`,
      passed: problems.length === 0,
      detail: problems.length ? problems.join('; ') : 'its own session name and working directory',
    });
  }
  checks.push({
    name: 'distinct-sessions',
    passed: roots.size === AGENT_ROLES.length && new Set(ctx.sessions.slice(0, 2).map((s) => s.name)).size === 2,
    detail: 'two names, two roots',
  });
  return checks;
}

export const agentWorkload: Workload = {
  name: 'agent',
  description:
    'two agents (scripted, Codex or Claude Code) at the same time in two sessions from one base, through a command or ACP, each verified from its own result',
  deterministic: true,
  sessions: 2,
  defaultParams: { ...AGENT_DEFAULTS },
  async prepareFixture(workDir, params, proc) {
    agentParams(params);
    const name = 'agent-contract@3';
    const dir = join(workDir, 'agent-contract');
    const done = join(workDir, 'agent-contract.ready');
    if (existsSync(done)) return { name, sourceDir: dir };
    await rm(dir, { recursive: true, force: true });
    writeContractBase(dir);
    await writeEntryKinds(dir);
    // A committed git fixture lets git-worktree run this lane too.
    await commitFixture(dir, proc);
    await writeFile(done, '');
    return { name, sourceDir: dir };
  },
  steps: agentSteps,
  project: projectAgentResult,
  projectionNote:
    "scripted agents: the case session's result without the agents' reports (they name each session's own root and name, checked by identity-a/b); real agents: the same reduced to its shape (paths, kinds, exec bits, symlink targets), since model text varies and the contract checks judge content",
  async expected(base, params) {
    // The contract's result for role a, known in advance from the fixture (it equals a scan of it),
    // with the fixture's entry kinds (kinds/), which no agent touches.
    const kinds = base.filter((e) => e.path === 'kinds' || e.path.startsWith('kinds/'));
    return projectAgentResult(sortEntries([...expectedEntries('a'), ...kinds]), params);
  },
  check: checkAgentResults,
  classifyFailure: classifyAgentCase,
};

/**
 * What a failed agent case is. Every agent that failed did so in its adapter, before touching any
 * file: unavailable when one was not installed (the lane cannot run on this machine), environment
 * when the others lacked credentials, a supported model or the network (nothing is blamed on the
 * filesystem). Anything else, or a failure after files were touched, is failed.
 */
export function classifyAgentCase(
  failure: { code: string },
  metrics: Record<string, string | number | boolean>,
): 'unavailable' | 'environment' | 'failed' {
  const failedRoles = AGENT_ROLES.filter((r) => {
    const outcome = metrics[`agent${r.toUpperCase()}Outcome`];
    return outcome !== undefined && outcome !== 'ok';
  });
  if (failedRoles.length === 0 || !AGENT_UNAVAILABLE_CODES.includes(failure.code as PdbErrorCode)) return 'failed';
  const codes = failedRoles.map((r) => metrics[`agent${r.toUpperCase()}Outcome`]);
  const adapterOnly = failedRoles.every(
    (r, i) => AGENT_UNAVAILABLE_CODES.includes(codes[i] as PdbErrorCode) && metrics[`agent${r.toUpperCase()}FilesTouched`] === false,
  );
  if (!adapterOnly) return 'failed';
  return codes.includes('E_AGENT_NOT_INSTALLED') ? 'unavailable' : 'environment';
}

/** The base the fixture writes, as entries (for tests and for checking the fixture itself). */
export const agentBaseEntries = baseEntries;
