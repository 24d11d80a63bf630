// The real-agents plan, run: Codex and Claude Code as commands, codex-acp and claude-agent-acp
// over ACP, each pair at once in two sessions from one base, on full-copy and overlay (as root),
// with the hard-link negative control beside them to show the checks can fail with real agents.
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runBench } from '../../../harness/bench.js';
import { loadPlan } from '../../../harness/plan/plan.js';
import type { CaseRecord } from '../../../harness/receipt/receipt-types.js';
import { WORKLOADS } from '../../../workloads/registry.js';
import { cassetteFile, realAgentsAcpWorkload, realAgentsWorkload } from '../../../workloads/real-agents/real-agents.js';
import { isRoot, realAgentsMissing, REPO_ROOT, skipPart, skipTest, tempDir } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());

test('parameters are checked before any work: agents, cassettes, the deadline, unknown keys', () => {
  const issues = realAgentsWorkload.paramIssues!({ agentA: 'gpt', cassetteB: 'no-such-cassette', agentTimeoutMs: 5, colour: 'red' });
  assert.equal(issues.map((i) => i.pointer).sort(), ['/agentA', '/agentTimeoutMs', '/cassetteB', '/colour']);
  assert.equal(realAgentsWorkload.paramIssues!({}), []);
  assert.equal(realAgentsAcpWorkload.paramIssues!({}), []);
  assert.match(cassetteFile('acp-a'), /workloads\/real-agents\/cassettes\/acp-a\.json$/);
  assert.is(cassetteFile('/x/mine.json'), '/x/mine.json');
});

const agentsOf = (c: CaseRecord) => (c.agents ?? []).map((a) => [a.role, a.product, a.version, a.boundary, a.protocol, a.model]);

test('plans/real-agents.json: four real agents finish, each session equals its cassette tree and the full-copy case, neither sees its peer', async () => {
  const missing = realAgentsMissing();
  if (missing) return skipTest('the real-agents plan', 'real-agents', missing);
  if (!isRoot()) skipPart('the real-agents plan on overlay', 'root', 'overlay mounts need root');
  const { plan } = loadPlan(join(REPO_ROOT, 'plans', 'real-agents.json'), WORKLOADS);
  const backends = isRoot() ? ['full-copy', 'overlay', 'hardlink-farm'] : ['full-copy', 'hardlink-farm'];
  const { receipt } = await runBench({
    plan: { ...plan, backends: backends as typeof plan.backends, allowTestOnlyBackends: true },
    outDir: join(t.dir, 'out'),
    storeParent: t.dir,
  });
  const real = receipt.cases.filter((c) => c.backend !== 'hardlink-farm');
  assert.is(real.length, isRoot() ? 4 : 2);
  for (const c of real) {
    assert.is(c.outcome, 'ok', `${c.backend} x ${c.workload}: ${JSON.stringify(c.failures)}`);
    for (const name of ['expected', 'cassette-tree-a', 'cassette-tree-b', 'peer-output-absent-a', 'peer-output-absent-b', 'base-unchanged'])
      assert.ok(c.checks.find((k) => k.name === name)?.passed, `${c.backend} x ${c.workload}: ${name}`);
    if (c.backend !== 'full-copy') assert.ok(c.checks.find((k) => k.name === 'oracle')?.passed, 'the full-copy oracle');
    assert.ok(c.agents!.every((a) => a.outcome === 'ok' && a.failureClass === 'none' && a.stepsDone === a.steps && a.turns >= a.steps));
    assert.ok(c.agents!.every((a) => a.network === (isRoot() ? 'loopback-only' : 'not-enforced')));
    assert.match(c.agents![0]!.cassetteDigest, /^sha256:[0-9a-f]{64}$/);
  }
  const command = real.find((c) => c.workload === 'real-agents')!;
  assert.equal(agentsOf(command), [
    ['a', 'codex-cli', '0.171.0', 'command', 'responses', 'scripted'],
    ['b', 'claude-code', '2.1.197', 'command', 'messages', 'scripted'],
  ]);
  const acp = real.find((c) => c.workload === 'real-agents-acp')!;
  assert.equal(agentsOf(acp), [
    ['a', 'codex-acp', '0.16.0', 'acp', 'responses', 'scripted'],
    ['b', 'claude-agent-acp', '0.49.0', 'acp', 'messages', 'scripted'],
  ]);
  for (const role of ['a', 'b']) assert.ok(acp.checks.find((k) => k.name === `policy-denied-${role}`)?.passed, `policy-denied-${role}`);
  assert.ok(acp.agents!.every((a) => a.policyDenials >= 2));
  // The two agents of a case ran at the same time.
  assert.ok(Number(command.metrics.agentsWallMs) < Number(command.metrics.agentADurationMs) + Number(command.metrics.agentBDurationMs));
  // Real agents write in place: the hard-link farm's shared inodes change the base, and the checks say so.
  for (const c of receipt.cases.filter((x) => x.backend === 'hardlink-farm')) {
    assert.is.not(c.outcome, 'ok', `${c.workload}: the negative control must be caught`);
    assert.ok(c.checks.some((k) => ['base-unchanged', 'sibling-unchanged', 'oracle'].includes(k.name) && k.evaluated && !k.passed));
  }
});

test.run();
