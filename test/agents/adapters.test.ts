import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { acpLaunch, classifyAgentFailure, commandLaunch, detectAgent, parseVersion } from '../../agents/adapters.js';
import { contractPrompt } from '../../agents/contract.js';
import { REPO_ROOT, tempDir } from '../helpers/index.js';

// Tiny fake agents (TEST FIXTURES, not agents): they print what the real tools printed on a
// machine without credentials or network, and exit the way those did.
const FAKE_CLAUDE = join(REPO_ROOT, 'test', 'fixtures', 'agents', 'fake-claude.sh');
const FAKE_CODEX = join(REPO_ROOT, 'test', 'fixtures', 'agents', 'fake-codex.sh');

const t = tempDir();
test.after(() => t.cleanup());
// An environment with no agent on PATH and no credentials, whatever this host has.
const bare: NodeJS.ProcessEnv = { PATH: '/nonexistent', HOME: t.dir };

test('a missing binary is detected as not installed, per agent and boundary', async () => {
  for (const agent of ['codex', 'claude'] as const) {
    for (const boundary of ['command', 'acp'] as const) {
      const d = await detectAgent(agent, boundary, { env: bare });
      assert.is(d.installed, false, `${agent}/${boundary}`);
      assert.is(d.program, null);
    }
  }
  // An override that points at nothing is not silently replaced by PATH.
  const d = await detectAgent('claude', 'command', { env: { ...bare, PDB_ENV_CLAUDE_BIN: join(t.dir, 'no-such-claude') } });
  assert.is(d.installed, false);
});

test('the scripted agent is always installed and needs no credentials', async () => {
  for (const boundary of ['command', 'acp'] as const) {
    const d = await detectAgent('scripted', boundary, { env: bare });
    assert.ok(d.installed);
    assert.is(d.auth, 'ok');
    assert.ok(d.version);
  }
});

test('an installed CLI without a login: version recorded, auth judged missing by its own status command', async () => {
  const claude = await detectAgent('claude', 'command', { env: { ...bare, PDB_ENV_CLAUDE_BIN: FAKE_CLAUDE } });
  assert.ok(claude.installed);
  assert.is(claude.version, '2.1.197');
  assert.is(claude.auth, 'missing');
  assert.is(claude.authEvidence, 'claude auth status: not logged in');
  const codex = await detectAgent('codex', 'command', { env: { ...bare, PDB_ENV_CODEX_BIN: FAKE_CODEX } });
  assert.is(codex.version, '0.171.0');
  assert.is(codex.auth, 'missing');
  // A key in the environment counts as credentials without asking the tool.
  const keyed = await detectAgent('codex', 'command', { env: { ...bare, PDB_ENV_CODEX_BIN: FAKE_CODEX, OPENAI_API_KEY: 'sk-test' } });
  assert.is(keyed.auth, 'ok');
  assert.is(keyed.authEvidence, 'env:OPENAI_API_KEY');
});

test("an auth failure is classified from the tool's own output (fake claude -p without a login)", async () => {
  const d = await detectAgent('claude', 'command', { env: { ...bare, PDB_ENV_CLAUDE_BIN: FAKE_CLAUDE } });
  const l = commandLaunch(d, contractPrompt('a'));
  assert.equal(l.args.slice(0, 2), ['-p', contractPrompt('a')]);
  const r = spawnSync(l.command, l.args, { encoding: 'utf8' });
  assert.is(r.status, 1);
  const c = classifyAgentFailure({ exitCode: r.status, timedOut: false, output: `${r.stdout}${r.stderr}` });
  assert.is(c.code, 'E_AGENT_AUTH');
  assert.is(c.reason, 'auth: not logged in');
});

test('classification: network outranks timeout, auth outranks network, ACP -32000 is auth, unknown stays unknown', () => {
  const codexHang =
    'ERROR: Reconnecting... 5/5\nwarning: Falling back from WebSockets to HTTPS transport. stream disconnected before completion: failed to lookup address information: Name does not resolve\nERROR: Reconnecting... waiting for network\n';
  assert.is(classifyAgentFailure({ exitCode: null, timedOut: true, output: codexHang }).code, 'E_AGENT_NETWORK');
  assert.is(classifyAgentFailure({ exitCode: 1, timedOut: false, output: `Not logged in\n${codexHang}` }).code, 'E_AGENT_AUTH');
  assert.is(
    classifyAgentFailure({ exitCode: null, timedOut: false, output: 'Authentication required', rpcCode: -32000 }).code,
    'E_AGENT_AUTH',
  );
  assert.is(
    classifyAgentFailure({
      exitCode: 1,
      timedOut: false,
      output: "The 'gpt-9' model is not supported when using Codex with a ChatGPT account.",
    }).code,
    'E_AGENT_MODEL',
  );
  assert.is(
    classifyAgentFailure({
      exitCode: 1,
      timedOut: false,
      output: 'OAuth token has expired. Please obtain a new token or refresh your existing token.',
    }).code,
    'E_AGENT_AUTH',
  );
  assert.is(classifyAgentFailure({ exitCode: null, timedOut: true, output: 'thinking...' }).code, 'E_AGENT_TIMEOUT');
  assert.is(classifyAgentFailure({ exitCode: 3, timedOut: false, output: 'segfault' }).code, 'E_STEP_FAILED');
});

test('launch lines: the same contract prompt for every command agent; ACP agents start bare', async () => {
  const prompt = contractPrompt('b');
  const scripted = await detectAgent('scripted', 'command', { env: bare });
  assert.ok(commandLaunch(scripted, prompt).args.includes(prompt));
  const codex = await detectAgent('codex', 'command', { env: { ...bare, PDB_ENV_CODEX_BIN: FAKE_CODEX } });
  const cl = commandLaunch(codex, prompt);
  assert.is(cl.args[0], 'exec');
  assert.is(cl.args.at(-1), prompt);
  assert.ok(cl.args.includes('workspace-write'));
  const acp = await detectAgent('scripted', 'acp', { env: bare });
  assert.ok(acpLaunch(acp).args.includes('--acp'));
  assert.is(parseVersion('codex-cli 0.171.0'), '0.171.0');
  assert.is(parseVersion('no version here'), null);
});

test.run();
