// Where the pinned agents live and when they count as installed, and what npm is asked to do.
// npm itself is injected here (a runner that records its arguments or fails); the real install
// runs in .ci/run, and the installed agents run in test/cli/commands/agent-run.test.ts.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { REAL_AGENTS, requiredAgents } from '../../../agents/real/catalog.js';
import { agentPrefix, agentsCacheDir, findInstalled, installAgent, npmInstallArgs, type NpmRunner } from '../../../agents/real/install.js';
import { isPdbError } from '../../../model/errors.js';
import { REPO_ROOT, tempDir } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());

test('the cache: PDB_ENV_AGENTS_DIR, else XDG_CACHE_HOME, else ~/.cache; one prefix per package and version', () => {
  assert.is(agentsCacheDir({ PDB_ENV_AGENTS_DIR: '/a/b', XDG_CACHE_HOME: '/x', HOME: '/h' }), '/a/b');
  assert.is(agentsCacheDir({ XDG_CACHE_HOME: '/x', HOME: '/h' }), '/x/pdb-env/agents');
  assert.is(agentsCacheDir({ XDG_CACHE_HOME: 'relative', HOME: '/h' }), '/h/.cache/pdb-env/agents');
  assert.is(agentPrefix('codex', { PDB_ENV_AGENTS_DIR: '/a' }), '/a/@openai/codex@0.171.0');
  assert.equal(requiredAgents(), ['codex', 'claude', 'codex-acp', 'claude-acp']);
  assert.equal(npmInstallArgs('claude-acp', { PDB_ENV_AGENTS_DIR: '/a' }), [
    'install',
    '--prefix',
    '/a/@agentclientprotocol/claude-agent-acp@0.49.0',
    '--no-audit',
    '--no-fund',
    '--save-exact',
    '--loglevel=warn',
    '@agentclientprotocol/claude-agent-acp@0.49.0',
  ]);
});

/** Lay out what npm leaves in a prefix: the package's package.json and its .bin link target. */
function layOut(env: NodeJS.ProcessEnv, agent: 'codex', version: string, exec = true): void {
  const spec = REAL_AGENTS[agent];
  const prefix = agentPrefix(agent, env);
  mkdirSync(join(prefix, 'node_modules', spec.package), { recursive: true });
  writeFileSync(join(prefix, 'node_modules', spec.package, 'package.json'), JSON.stringify({ name: spec.package, version }));
  mkdirSync(join(prefix, 'node_modules', '.bin'), { recursive: true });
  const bin = join(prefix, 'node_modules', '.bin', spec.bin);
  writeFileSync(bin, '#!/bin/sh\n');
  chmodSync(bin, exec ? 0o755 : 0o644);
}

test('installed means the pinned version and an executable, nothing less', () => {
  const env = { PDB_ENV_AGENTS_DIR: join(t.dir, 'cache1') };
  assert.is(findInstalled('codex', env), null);
  layOut(env, 'codex', '0.170.0');
  assert.is(findInstalled('codex', env), null, 'another version');
  layOut(env, 'codex', '0.171.0', false);
  assert.is(findInstalled('codex', env), null, 'not executable');
  layOut(env, 'codex', '0.171.0');
  assert.equal(findInstalled('codex', env), {
    agent: 'codex',
    product: 'codex-cli',
    version: '0.171.0',
    program: join(agentPrefix('codex', env), 'node_modules', '.bin', 'codex'),
  });
});

test('install runs npm once, and not at all when the pinned version is there', async () => {
  const env = { PDB_ENV_AGENTS_DIR: join(t.dir, 'cache2') };
  const calls: string[][] = [];
  const npm: NpmRunner = async (args) => {
    calls.push(args);
    layOut(env, 'codex', '0.171.0');
    return { code: 0, output: 'added 2 packages' };
  };
  assert.is((await installAgent('codex', { env, npm })).action, 'installed');
  assert.is((await installAgent('codex', { env, npm })).action, 'present');
  assert.is(calls.length, 1);
});

test('npm failures are typed: no registry, or npm installed the wrong thing', async () => {
  const env = { PDB_ENV_AGENTS_DIR: join(t.dir, 'cache3') };
  const offline: NpmRunner = async () => ({ code: 1, output: 'npm error code ENOTFOUND\nnpm error network request failed' });
  await installAgent('codex', { env, npm: offline }).then(
    () => assert.unreachable(),
    (err) => assert.ok(isPdbError(err, 'E_REGISTRY_UNREACHABLE'), String(err)),
  );
  const wrong: NpmRunner = async () => (layOut(env, 'codex', '0.1.0'), { code: 0, output: '' });
  await installAgent('codex', { env, npm: wrong }).then(
    () => assert.unreachable(),
    (err) => assert.ok(isPdbError(err, 'E_AGENT_NOT_INSTALLED') && /not version 0\.171\.0/.test(err.message), String(err)),
  );
});

test('a cache inside the project tree is refused before npm runs', async () => {
  let ran = false;
  const npm: NpmRunner = async () => ((ran = true), { code: 0, output: '' });
  await installAgent('claude', { env: { PDB_ENV_AGENTS_DIR: join(REPO_ROOT, 'agent-cache') }, npm }).then(
    () => assert.unreachable(),
    (err) => assert.ok(isPdbError(err, 'E_USAGE') && /inside the pdb-env project/.test(err.message), String(err)),
  );
  assert.not.ok(ran);
});

test.run();
