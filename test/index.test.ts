// The public entry: the package resolves by its own name through package.json "exports", and the
// packed package carries the build but no tests.
import { spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as api from '../index.js';
import { REPO_ROOT } from './helpers/index.js';

test('pdb-env resolves to dist/index.js through "exports", with the public names', async () => {
  const pkg = (await import('pdb-env')) as typeof api;
  assert.is(pkg.SessionService, api.SessionService);
  for (const name of [
    'SessionService',
    'listBackends',
    'getBackend',
    'probeBackend',
    'runBench',
    'loadPlan',
    'analyzeReceipts',
    'evaluateGate',
    'renderMarkdown',
    'renderHtml',
    'renderJson',
    'validateAgainst',
    'detectSchema',
    'PdbError',
  ] as const)
    assert.type(pkg[name], 'function', name);
  assert.equal(pkg.BACKEND_NAMES.slice(0, 2), ['full-copy', 'reflink']);
  assert.ok(pkg.ERROR_CODES.includes('E_COMMAND_NOT_FOUND'));
  assert.ok(new pkg.PdbError('E_USAGE', 'x') instanceof Error);
});

test('npm pack ships the build, the schemas and plans, and no tests', () => {
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: REPO_ROOT, encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  const files = (JSON.parse(r.stdout) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path);
  for (const want of [
    'dist/index.js',
    'dist/cli/pdb-env.cjs',
    'dist/cli/checkpoint-bundle.cjs',
    'dist/cli/cli-bundle.cjs',
    'dist/scripts/proof.js',
    'schemas/receipt.schema.json',
    'plans/default.json',
    'package.json',
  ])
    assert.ok(files.includes(want), want);
  assert.equal(
    files.filter((f) => f.startsWith('dist/test/') || f.startsWith('test/')),
    [],
  );
});

test.run();
