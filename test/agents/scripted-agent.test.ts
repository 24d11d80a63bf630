import { readFileSync } from 'node:fs';
import { readFile, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runAcpAgent } from '../../agents/acp-client.js';
import { SCRIPTED_AGENT_PATH } from '../../agents/adapters.js';
import {
  contractPaths,
  contractPrompt,
  expectedEntries,
  parseReport,
  verifyContract,
  writeContractBase,
  type AgentRole,
} from '../../agents/contract.js';
import type { Entry } from '../../model/snapshot.js';
import { SessionService } from '../../sessions/service.js';
import { cli, tempDir } from '../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());
const source = join(t.dir, 'source');
const storeDir = join(t.dir, 'store');
writeContractBase(source);
let svc: SessionService;

test.before(async () => {
  svc = await SessionService.open(storeDir, { create: true });
});

/** Checkpoint the session and return its result entries (what is verified "after the fact"). */
async function checkpointed(name: string): Promise<Entry[]> {
  const cp = await svc.checkpoint(name);
  return svc.readSnapshot(cp.snapshot).entries;
}

async function assertContract(name: string, role: AgentRole, entries: Entry[]) {
  const root = svc.sessionRoot(name);
  const findings = await verifyContract(entries, role, (rel) => readFile(join(root, rel)));
  assert.equal(
    findings.filter((f) => !f.passed).map((f) => f.item),
    [],
    'every contract item holds',
  );
  const report = parseReport(readFileSync(join(root, contractPaths(role).report), 'utf8'));
  assert.ok(report);
  assert.is(report!.session, name, 'PDB_ENV_SESSION named this session');
  assert.is(await realpath(report!.cwd), await realpath(root), 'the agent ran in the session root');
  assert.is(report!.peerOutputSeen, false);
  // Exactly the contract's result, apart from the report.
  assert.equal(
    entries.filter((e) => e.path !== contractPaths(role).report),
    expectedEntries(role),
  );
  return report!;
}

test('as a plain command through `pdb-env run`, the scripted agent performs the contract in a real session', async () => {
  await svc.create('cmd-a', { from: source });
  const r = cli(['run', 'cmd-a', '--store', storeDir, '--', process.execPath, SCRIPTED_AGENT_PATH, '--prompt', contractPrompt('a')]);
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, /contract done for role a/);
  await assertContract('cmd-a', 'a', await checkpointed('cmd-a'));
  await svc.discard('cmd-a');
});

test('over ACP, with pdb-env as the client, the scripted agent performs the contract through fs and terminal requests', async () => {
  await svc.create('acp-b', { from: source });
  const root = svc.sessionRoot('acp-b');
  const r = await runAcpAgent({
    command: process.execPath,
    args: [SCRIPTED_AGENT_PATH, '--acp'],
    root,
    sessionName: 'acp-b',
    prompt: contractPrompt('b'),
    timeoutMs: 30_000,
  });
  assert.is(r.phase, 'done', JSON.stringify(r.error));
  assert.is(r.stopReason, 'end_turn');
  assert.is(r.agentName, 'pdb-env-scripted-agent');
  assert.ok(r.stats.fsWrites >= 3 && r.stats.terminals >= 5, JSON.stringify(r.stats));
  assert.is(r.stats.refusedOutsideRoot, 1, "the agent's probe of ../session.json was refused");
  const report = await assertContract('acp-b', 'b', await checkpointed('acp-b'));
  assert.is(await realpath(report.sessionCwd!), await realpath(root), 'session/new cwd was the root');
  assert.is(report.outsideReadRefused, true);
  await svc.discard('acp-b');
});

test('the scripted agent refuses a prompt without a contract marker (turn ends with refusal, nothing changed)', async () => {
  await svc.create('acp-none', { from: source });
  const root = svc.sessionRoot('acp-none');
  const r = await runAcpAgent({
    command: process.execPath,
    args: [SCRIPTED_AGENT_PATH, '--acp'],
    root,
    sessionName: 'acp-none',
    prompt: 'say hello',
    timeoutMs: 30_000,
  });
  assert.is(r.stopReason, 'refusal');
  const cp = await svc.checkpoint('acp-none');
  assert.is(cp.changes, 0);
  await svc.discard('acp-none');
});

test('the command form rejects a missing role with usage and exit 2', () => {
  const r = cli(['run', 'x', '--store', storeDir, '--', process.execPath, SCRIPTED_AGENT_PATH]);
  // No session "x": pdb-env itself refuses first, with a typed error.
  assert.ok(r.code !== 0);
  assert.match(r.stdout + r.stderr, /E_SESSION_NOT_FOUND/);
});

test.run();
