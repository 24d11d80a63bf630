import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { baseEntries, expectedEntries } from '../../../agents/contract.js';
import { sortEntries, type Entry } from '../../../model/snapshot.js';
import { entryKindEntries } from '../../../workloads/entry-kinds.js';
import type { Digest } from '../../../model/canonical-json.js';
import { isPdbError } from '../../../model/errors.js';
import { scanTree } from '../../../model/scan/scan.js';
import { SessionService } from '../../../sessions/service.js';
import { agentParams, agentWorkload, classifyAgentCase } from '../../../workloads/agent/agent.js';
import { createProcessRunner } from '../../../workloads/process-runner.js';
import { WORKLOADS } from '../../../workloads/registry.js';
import type { StepContext } from '../../../workloads/types.js';
import { CLI, REPO_ROOT, tempDir } from '../../helpers/index.js';

// TEST FIXTURES (fake agents printing the real tools' no-login / no-network output).
const FAKE_CLAUDE = join(REPO_ROOT, 'test', 'fixtures', 'agents', 'fake-claude.sh');
const FAKE_CODEX = join(REPO_ROOT, 'test', 'fixtures', 'agents', 'fake-codex.sh');

const t = tempDir();
test.after(() => t.cleanup());
const proc = createProcessRunner();
const storeDir = join(t.dir, 'store');
let svc: SessionService;
let fixtureDir = '';
let caseNo = 0;

test.before(async () => {
  svc = await SessionService.open(storeDir, { create: true });
  const f = await agentWorkload.prepareFixture(join(t.dir, 'work'), {}, proc);
  fixtureDir = f.sourceDir;
});

interface CaseRun {
  error: unknown;
  metrics: Record<string, string | number | boolean>;
  results: Entry[][];
  ctx: StepContext;
  base: Digest;
}

/** What the harness does for one case, by hand: two sessions from one base, the steps, checkpoints. */
async function runCase(params: Record<string, unknown>, backend = 'full-copy', override: Partial<StepContext> = {}): Promise<CaseRun> {
  const n = ++caseNo;
  const names = [`case${n}`, `case${n}-peer1`];
  const made = [];
  for (const name of names) made.push(await svc.create(name, { from: fixtureDir, backend }));
  assert.is(made[0]!.base, made[1]!.base, 'both sessions from one base');
  const scratch = join(t.dir, `scratch${n}`);
  mkdirSync(scratch);
  const metrics: CaseRun['metrics'] = {};
  const sessions = names.map((name) => ({ name, root: svc.sessionRoot(name) }));
  const p = { ...agentWorkload.defaultParams, ...params };
  const ctx: StepContext = {
    session: sessions[0]!,
    sessions,
    scratchDir: scratch,
    sharedDir: scratch,
    params: p,
    proc,
    pdbEnvRun: (s, command, args, options) =>
      proc.run(process.execPath, [CLI, 'run', s.name, '--store', storeDir, '--', command, ...args], { ...options, cwd: scratch }),
    pdbEnv: (args, options) => proc.run(process.execPath, [CLI, ...args, '--store', storeDir], { ...options, cwd: scratch }),
    metric: (k, v) => {
      metrics[k] = v;
    },
    log: () => {},
    baseEntries: svc.readSnapshot(made[0]!.base).entries,
    ...override,
  };
  let error: unknown = null;
  try {
    for (const step of agentWorkload.steps(p)) await step.run(ctx);
  } catch (err) {
    error = err;
  }
  const results: Entry[][] = [];
  for (const name of names) results.push(svc.readSnapshot((await svc.checkpoint(name)).snapshot).entries);
  return { error, metrics, results, ctx, base: made[0]!.base };
}

async function discard(r: CaseRun) {
  for (const s of r.ctx.sessions) await svc.discard(s.name);
}

/** The contract's entries with the fixture's entry kinds (kinds/), in contract order. */
const withKinds = (entries: Entry[]): Entry[] => sortEntries([...entries, ...entryKindEntries()]);

async function assertProof(r: CaseRun) {
  assert.is(r.error, null, String(r.error));
  const checks = await agentWorkload.check!(r.ctx, r.results);
  assert.equal(
    checks.filter((c) => !c.passed).map((c) => `${c.name}: ${c.detail}`),
    [],
  );
  assert.equal(
    checks.map((c) => c.name),
    ['contract-a', 'identity-a', 'contract-b', 'identity-b', 'distinct-sessions'],
  );
  // The case session is exactly role a's contract result; the peer exactly role b's.
  assert.equal(agentWorkload.project(r.results[0]!, r.ctx.params), await agentWorkload.expected!(withKinds(baseEntries()), r.ctx.params));
  assert.equal(
    r.results[1]!.filter((e) => !e.path.endsWith('report.json')),
    withKinds(expectedEntries('b')),
  );
  // The base did not change: the source still scans to the contract's base (and the fixture's kinds/), and the store's base Snapshot is intact.
  assert.equal((await scanTree(fixtureDir, { excludes: [] })).entries, withKinds(baseEntries()));
  assert.equal(svc.readSnapshot(r.base).entries, withKinds(baseEntries()));
  assert.is(r.metrics.agentAOutcome, 'ok');
  assert.is(r.metrics.agentBOutcome, 'ok');
  assert.is(r.metrics.agentAName, 'pdb-env-scripted-agent');
  assert.ok(typeof r.metrics.agentsOverlapMs === 'number');
}

test('the workload is registered and rejects unknown or bad parameters at once', () => {
  assert.is(WORKLOADS.agent, agentWorkload);
  assert.is(agentWorkload.sessions, 2);
  for (const bad of [{ agents: 'x' }, { agentA: 'gpt' }, { boundaryA: 'ssh' }, { boundary: 'acp' }, { agentTimeoutMs: 5 }]) {
    try {
      agentParams(bad);
      assert.unreachable(JSON.stringify(bad));
    } catch (err) {
      assert.ok(isPdbError(err, 'E_PLAN_INVALID'), String(err));
    }
  }
});

test('two-agent proof on full-copy (default params): agent a via `pdb-env run`, agent b over ACP, at once, each verified from its checkpoint', async () => {
  const r = await runCase({});
  await assertProof(r);
  assert.is(r.metrics.agentABoundary, 'command');
  assert.is(r.metrics.agentBBoundary, 'acp');
  assert.is(r.metrics.agentBRefusedOutsideRoot, 1, "agent b's probe outside its root was refused");
  assert.ok(Number(r.metrics.agentBTerminals) >= 5);
  await discard(r);
});

test('two-agent proof on full-copy, both over one boundary (command, then ACP)', async () => {
  for (const boundary of ['command', 'acp']) {
    const r = await runCase({ boundaryA: boundary, boundaryB: boundary });
    await assertProof(r);
    assert.is(r.metrics.agentABoundary, boundary);
    assert.is(r.metrics.agentBBoundary, boundary);
    await discard(r);
  }
});

async function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const old = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(old)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

test('a missing agent binary fails as E_AGENT_NOT_INSTALLED before any file is touched; the peer still runs', async () => {
  const r = await withEnv({ PDB_ENV_CODEX_BIN: join(t.dir, 'no-such-codex') }, () => runCase({ agentA: 'codex', agentB: 'scripted' }));
  assert.ok(isPdbError(r.error, 'E_AGENT_NOT_INSTALLED'), String(r.error));
  assert.match((r.error as Error).message, /before any file was touched/);
  assert.is(r.metrics.agentAOutcome, 'E_AGENT_NOT_INSTALLED');
  assert.is(r.metrics.agentALaunched, false);
  assert.is(r.metrics.agentAFilesTouched, false);
  assert.is(r.metrics.agentBOutcome, 'ok');
  assert.is(r.metrics.agentBFilesTouched, true);
  await discard(r);
});

test("no login: E_AGENT_AUTH by preflight (not launched) and from the launched tool's own error (fake claude)", async () => {
  const pre = await withEnv({ PDB_ENV_CLAUDE_BIN: FAKE_CLAUDE }, () => runCase({ agentA: 'claude' }));
  assert.ok(isPdbError(pre.error, 'E_AGENT_AUTH'), String(pre.error));
  assert.is(pre.metrics.agentALaunched, false);
  assert.is(pre.metrics.agentAVersion, '2.1.197');
  assert.is(pre.metrics.agentAFilesTouched, false);
  assert.is(pre.metrics.agentAChangedPaths, 0);
  await discard(pre);

  const launched = await withEnv({ PDB_ENV_CLAUDE_BIN: FAKE_CLAUDE }, () => runCase({ agentA: 'claude', preflight: false }));
  assert.ok(isPdbError(launched.error, 'E_AGENT_AUTH'), String(launched.error));
  assert.is(launched.metrics.agentALaunched, true);
  assert.is(launched.metrics.agentAExitCode, 1);
  assert.is(launched.metrics.agentAFailureReason, 'auth: not logged in');
  assert.is(launched.metrics.agentAFilesTouched, false);
  await discard(launched);
});

test('a CLI that waits for the network is killed at its timeout and classified E_AGENT_NETWORK, not a timeout (fake codex)', async () => {
  // The kill that ends the wait comes on a signal, not a timer race: `pdb-env run` starts the fake
  // codex, and only once it has printed its network errors (its own output says so) is it killed,
  // as its timeout would. On a loaded machine a timer could fire before it printed anything.
  let killedAfterSignal = false;
  const pdbEnvRun: StepContext['pdbEnvRun'] = async (s, command, args, options) => {
    const p = proc.start(process.execPath, [CLI, 'run', s.name, '--store', storeDir, '--', command, ...args], {
      cwd: t.dir,
      env: options.env,
    });
    await p.waitForOutput((out) => out.includes('waiting for network'), 120_000, 'the fake codex waiting for the network');
    killedAfterSignal = true;
    return { ...(await p.stop()), timedOut: true };
  };
  const r = await withEnv({ PDB_ENV_CODEX_BIN: FAKE_CODEX }, () =>
    runCase({ agentA: 'codex', agentB: 'scripted', preflight: false, agentTimeoutMs: 1500 }, 'full-copy', { pdbEnvRun }),
  );
  assert.ok(killedAfterSignal);
  assert.ok(isPdbError(r.error, 'E_AGENT_NETWORK'), String(r.error));
  assert.is(r.metrics.agentAOutcome, 'E_AGENT_NETWORK');
  assert.is(r.metrics.agentAFailureReason, 'network: host unreachable');
  assert.is(r.metrics.agentAFilesTouched, false);
  assert.is(classifyAgentCase({ code: 'E_AGENT_NETWORK' }, r.metrics), 'environment');
  await discard(r);
});

test('an agent that exits 0 without doing the work fails as E_AGENT_CONTRACT (/bin/true standing in for claude)', async () => {
  const r = await withEnv({ PDB_ENV_CLAUDE_BIN: '/bin/true' }, () => runCase({ agentA: 'claude', preflight: false }));
  assert.ok(isPdbError(r.error, 'E_AGENT_CONTRACT'), String(r.error));
  assert.is(r.metrics.agentAExitCode, 0);
  assert.match(String(r.metrics.agentAFailureReason), /^not done: shared-edited/);
  assert.is(r.metrics.agentAFilesTouched, false);
  await discard(r);
});

test('receipt metrics are path-free: no absolute path, user or host name', async () => {
  const r = await withEnv({ PDB_ENV_CLAUDE_BIN: FAKE_CLAUDE }, () => runCase({ agentA: 'claude', preflight: false }));
  const text = JSON.stringify(r.metrics);
  assert.not.match(text, /\/(tmp|home|root|work|usr)\b/);
  assert.not.match(text, new RegExp(t.dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  await discard(r);
});

test('agents that failed only in their adapters, touching nothing: not installed is unavailable, credentials or network environment; otherwise failed', () => {
  const m = (a: string, aTouched: boolean, b = 'ok', bTouched = true) => ({
    agentAOutcome: a,
    agentAFilesTouched: aTouched,
    agentBOutcome: b,
    agentBFilesTouched: bTouched,
  });
  assert.is(classifyAgentCase({ code: 'E_AGENT_NOT_INSTALLED' }, m('E_AGENT_NOT_INSTALLED', false)), 'unavailable');
  assert.is(classifyAgentCase({ code: 'E_AGENT_AUTH' }, m('E_AGENT_AUTH', false, 'E_AGENT_NOT_INSTALLED', false)), 'unavailable');
  assert.is(classifyAgentCase({ code: 'E_AGENT_AUTH' }, m('E_AGENT_AUTH', false)), 'environment');
  assert.is(classifyAgentCase({ code: 'E_AGENT_NETWORK' }, m('E_AGENT_NETWORK', false, 'E_AGENT_AUTH', false)), 'environment');
  assert.is(classifyAgentCase({ code: 'E_AGENT_AUTH' }, m('E_AGENT_AUTH', true)), 'failed', 'it touched files before failing');
  assert.is(classifyAgentCase({ code: 'E_AGENT_CONTRACT' }, m('E_AGENT_CONTRACT', false)), 'failed');
  assert.is(
    classifyAgentCase({ code: 'E_AGENT_AUTH' }, m('E_AGENT_AUTH', false, 'E_AGENT_CONTRACT', true)),
    'failed',
    'the peer failed its contract',
  );
  assert.is(classifyAgentCase({ code: 'E_ORACLE_MISMATCH' }, m('ok', true)), 'failed');
});

test.run();
