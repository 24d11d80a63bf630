// How a real agent's run is judged from the scripted server's log and the agent's end: the
// failure classes stay apart (crash, protocol mismatch, failed step, stopped early, timeout).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { summarize, type ServerEvent } from '../../../agents/model-server/events.js';
import { classifyRun, failureClassOf } from '../../../agents/real/run.js';
import { networkPlan } from '../../../agents/real/network.js';
import { agentLaunch, CREDENTIAL_VARS } from '../../../agents/real/launch.js';

const ev = (e: Partial<ServerEvent>): ServerEvent => ({ t: 0, event: 'request', ...e }) as ServerEvent;
const served = summarize([
  ev({ answer: 'call', stepsDone: 0 }),
  ev({ answer: 'call', stepsDone: 1 }),
  ev({ answer: 'final', stepsDone: 2 }),
]);
const ended = { timedOut: false, exitCode: 0, signal: null, stderr: '' };

test('each way a run ends has its own code and class', () => {
  assert.is(classifyRun(served, 2, ended), null);
  assert.equal(served, { requests: 3, turns: 3, stepsDone: 2, finalServed: true, stepFailure: null, protocolErrors: [], tools: null });
  const cases: [ReturnType<typeof summarize>, typeof ended, string][] = [
    [served, { ...ended, timedOut: true }, 'E_AGENT_TIMEOUT'],
    [summarize([ev({ answer: 'step-failed', stepsDone: 1, message: 'step 2 edit a: bad' })]), ended, 'E_AGENT_STEP_FAILED'],
    [
      summarize([ev({ answer: 'call', stepsDone: 1 }), ev({ event: 'protocol-error', message: 'cannot map' })]),
      { ...ended, exitCode: 1 },
      'E_MODEL_PROTOCOL',
    ],
    [summarize([ev({ answer: 'call', stepsDone: 1 })]), { ...ended, exitCode: 139, stderr: 'Segmentation fault' }, 'E_AGENT_CRASHED'],
    [summarize([ev({ answer: 'call', stepsDone: 1 })]), ended, 'E_AGENT_CONTRACT'],
    [served, { ...ended, exitCode: 2 }, 'E_AGENT_CRASHED'],
  ];
  for (const [s, end, code] of cases) assert.is(classifyRun(s, 2, end)?.code, code, `${code}: ${JSON.stringify(classifyRun(s, 2, end))}`);
  assert.match(classifyRun(cases[3]![0], 2, cases[3]![1])!.message, /exited 139 after 1 of 2 steps: Segmentation fault/);
  assert.equal(
    [
      'E_AGENT_CRASHED',
      'E_MODEL_PROTOCOL',
      'E_AGENT_STEP_FAILED',
      'E_AGENT_CONTRACT',
      'E_AGENT_TIMEOUT',
      'E_AGENT_NOT_INSTALLED',
      'ok',
      'E_INTERNAL',
    ].map(failureClassOf),
    ['agent-crash', 'protocol-mismatch', 'step-failure', 'incomplete', 'timeout', 'not-installed', 'none', 'harness'],
  );
});

test('a protocol error after the final message (a side request) does not fail a finished run', () => {
  const s = summarize([...[ev({ answer: 'final', stepsDone: 2 })], ev({ event: 'protocol-error', message: 'GET /v1/whatever' })]);
  assert.is(classifyRun(s, 2, ended), null);
});

test('the network: loopback-only needs root and the namespace tools; otherwise it says what was not enforced', () => {
  const off = networkPlan({ PDB_ENV_AGENT_NETNS: 'off' });
  assert.is(off.mode, 'not-enforced');
  assert.match(off.reason!, /shares the host network/);
  assert.equal(off.serverPrefix, []);
  const here = networkPlan({});
  if (process.getuid?.() === 0 && here.mode === 'loopback-only') {
    assert.equal(here.serverPrefix.slice(0, 3), ['unshare', '--net', '--']);
    assert.equal(here.agentPrefix(42), ['nsenter', '--net=/proc/42/ns/net', '--']);
  } else assert.is(here.mode, 'not-enforced');
});

test('launches point only at the scripted server, with private homes, and never carry real credentials', () => {
  const base = { program: '/p', url: 'http://127.0.0.1:9', prompt: 'go', home: '/h', asRoot: true };
  const codex = agentLaunch({ ...base, agent: 'codex' });
  assert.ok(
    codex.args.includes('model_providers.pdbenv={name="pdb-env scripted model",base_url="http://127.0.0.1:9/v1",wire_api="responses"}'),
  );
  assert.ok(codex.args.includes('analytics.enabled=false') && codex.args.includes('features.plugins=false'));
  assert.is(codex.env.CODEX_HOME, '/h/.codex');
  const claude = agentLaunch({ ...base, agent: 'claude-acp' });
  assert.equal(
    [claude.env.ANTHROPIC_BASE_URL, claude.env.IS_SANDBOX, claude.env.CLAUDE_CONFIG_DIR, claude.mode],
    ['http://127.0.0.1:9', '1', '/h/.claude', 'default'],
  );
  assert.is(agentLaunch({ ...base, asRoot: false, agent: 'claude' }).env.IS_SANDBOX, undefined);
  for (const v of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN']) assert.ok(CREDENTIAL_VARS.includes(v));
});

test.run();
