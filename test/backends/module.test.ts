// A user's own backend from a module: the docs' example is the file the tests run; it benches
// against the oracle through the CLI and its receipt records the module's digest, never its path;
// a module that misses the contract is E_BACKEND_MODULE_INVALID listing what is wrong; a test-only
// module is refused outside plans that allow it; a session made by a module is discarded by a later
// process that loads the module again from the session's record.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { contractProblems, loadBackendModule } from '../../backends/module.js';
import { isPdbError } from '../../model/errors.js';
import { REPO_ROOT, cli, cliJson, tempDir, writeTree } from '../helpers/index.js';
import { controlModule } from '../helpers/controls/run-controls.js';
import { readReceiptFile } from '../../harness/receipt/envelope.js';

const t = tempDir('pdb-module-');
test.after(() => t.cleanup());
const EXAMPLE = join(REPO_ROOT, 'test', 'fixtures', 'backends', 'copy-backend.mjs');

test('docs/your-backend.md shows the example module exactly as the tests run it', () => {
  const doc = readFileSync(join(REPO_ROOT, 'docs', 'your-backend.md'), 'utf8');
  const code = readFileSync(EXAMPLE, 'utf8');
  assert.ok(doc.includes('```js\n' + code + '```'), 'the example in the docs and test/fixtures/backends/copy-backend.mjs differ');
  assert.ok(code.split('\n').length <= 45);
});

test('bench --backend-module: the example is benched against the oracle; the receipt records its digest, never its path', () => {
  const plan = join(t.dir, 'plan.json');
  writeFileSync(
    plan,
    JSON.stringify({
      kind: 'pdb-env-plan',
      name: 'own-backend',
      backends: ['full-copy'],
      workloads: [{ name: 'fileops', params: { smallFiles: 40, largeFileBytes: 1048576, newSmallFiles: 5 } }],
      blocks: 1,
      warmupBlocks: 0,
      seed: 3,
      caseTimeoutMs: 120000,
    }),
  );
  const r = cliJson<{ receipt: string }>([
    'bench',
    '--plan',
    plan,
    '--backend-module',
    EXAMPLE,
    '--out',
    join(t.dir, 'out'),
    '--store',
    t.dir,
  ]);
  const receipt = readReceiptFile(r.receipt).document as any;
  const mine = receipt.cases.find((c: { backend: string }) => c.backend === 'my-copy');
  assert.is(mine.outcome, 'ok', JSON.stringify(mine.failures));
  const oracle = mine.checks.find((k: { name: string }) => k.name === 'oracle');
  assert.ok(oracle.evaluated && oracle.passed);
  const entry = receipt.backends.find((b: { name: string }) => b.name === 'my-copy');
  assert.is(entry.module.digest, `sha256:${createHash('sha256').update(readFileSync(EXAMPLE)).digest('hex')}`);
  assert.not.ok(JSON.stringify(readReceiptFile(r.receipt).document).includes('copy-backend.mjs'), 'the module path is not in the receipt');
});

test('a module that misses the contract is E_BACKEND_MODULE_INVALID listing every problem', async () => {
  assert.equal(contractProblems(null), ['the default export is not an object']);
  const bad = join(t.dir, 'bad.mjs');
  writeFileSync(bad, "export default { name: 'full-copy', testOnly: 'no', capabilities: { securityIsolation: true }, probe() {} };\n");
  try {
    await loadBackendModule(bad);
    assert.unreachable('a bad module must be refused');
  } catch (err) {
    assert.ok(isPdbError(err, 'E_BACKEND_MODULE_INVALID'), String(err));
    for (const part of ['is a built-in backend', 'testOnly must be', 'securityIsolation must be false', 'createSession must be a function'])
      assert.match((err as Error).message, part);
  }
  const missing = cli(['bench', '--plan', join(REPO_ROOT, 'plans', 'default.json'), '--backend-module', join(t.dir, 'nope.mjs')]);
  assert.is(missing.code, 1);
  assert.match(missing.stderr, 'E_BACKEND_MODULE_INVALID');
});

test('a test-only module (a negative control) is refused in a plan that does not allow test-only backends', () => {
  const plan = join(t.dir, 'control-plan.json');
  writeFileSync(
    plan,
    JSON.stringify({
      kind: 'pdb-env-plan',
      name: 'control',
      backends: ['full-copy', 'control-extra-file'],
      backendModules: [controlModule('extra-file')],
      workloads: [{ name: 'fileops' }],
      blocks: 1,
      warmupBlocks: 0,
      seed: 1,
      caseTimeoutMs: 60000,
    }),
  );
  const r = cli(['bench', '--plan', plan, '--out', join(t.dir, 'refused')]);
  assert.is(r.code, 1);
  assert.match(r.stderr, 'is a test-only backend');
  // validate runs no module (issue 41): it hashes it and says bench checks what the module declares.
  const v = cli(['validate', plan]);
  assert.is(v.code, 0, v.stdout);
  assert.match(v.stdout, /control-extra-file.*comes from a backend module validate does not run/);
});

test('a plan naming a backend no module declares is E_PLAN_INVALID, before any filesystem work', () => {
  const plan = join(t.dir, 'unknown-plan.json');
  const doc = JSON.parse(readFileSync(join(REPO_ROOT, 'plans', 'default.json'), 'utf8'));
  writeFileSync(plan, JSON.stringify({ ...doc, backends: ['full-copy', 'zfs-clone'] }));
  const r = cli(['bench', '--plan', plan, '--out', join(t.dir, 'unknown')]);
  assert.is(r.code, 1);
  assert.match(r.stderr, 'E_PLAN_INVALID');
  assert.match(r.stderr, 'unknown backend "zfs-clone": not built in, and no backend module declares it');
});

test('create --backend-module makes a session; a later process loads the module again to run and discard it', () => {
  const src = join(t.dir, 'src');
  writeTree(src, { 'a.txt': 'a\n', bin: { 'run.sh': { content: '#!/bin/sh\n', exec: true } } });
  const store = join(t.dir, 'store');
  const made = cliJson<{ backend: string; root: string }>(['create', 's1', '--from', src, '--backend-module', EXAMPLE, '--store', store]);
  assert.is(made.backend, 'my-copy');
  assert.is(readFileSync(join(made.root, 'a.txt'), 'utf8'), 'a\n');
  const run = cli(['run', 's1', '--store', store, '--', 'sh', '-c', 'echo b > b.txt']);
  assert.is(run.code, 0, run.stderr);
  const cp = cliJson<{ changes: number }>(['checkpoint', 's1', '--store', store]);
  assert.is(cp.changes, 1);
  const gone = cli(['discard', 's1', '--store', store]);
  assert.is(gone.code, 0, gone.stderr);
});

/** A module that, when imported, leaves a file behind: proof that code from a record or plan ran. */
function evilModule(name: string): { file: string; ran: string } {
  const ran = join(t.dir, `${name}.ran`);
  const file = join(t.dir, `${name}.mjs`);
  writeFileSync(file, `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(ran)}, 'ran');\nexport default {};\n`);
  return { file, ran };
}

test('a session record naming another module is refused before it is imported (E_BACKEND_MODULE_CHANGED)', () => {
  const src = join(t.dir, 'src-tamper');
  writeTree(src, { 'a.txt': 'a\n' });
  const store = join(t.dir, 'store-tamper');
  cliJson(['create', 'plain', '--from', src, '--store', store]);
  const evil = evilModule('evil-record');
  const recFile = join(store, 'sessions', 'plain', 'session.json');
  writeFileSync(recFile, JSON.stringify({ ...JSON.parse(readFileSync(recFile, 'utf8')), backendModule: evil.file }));
  const r = cli(['discard', 'plain', '--store', store]);
  assert.not.ok(existsSync(evil.ran), 'the module named by the record ran');
  assert.is(r.code, 1, r.stdout);
  assert.match(r.stderr, 'E_BACKEND_MODULE_CHANGED');
  // A session made by a module: the module's file changed since is refused too, unrun.
  const mod = join(t.dir, 'copy-backend-copy.mjs');
  writeFileSync(mod, readFileSync(EXAMPLE));
  cliJson(['create', 'bymod', '--from', src, '--backend-module', mod, '--store', store]);
  const rec = JSON.parse(readFileSync(join(store, 'sessions', 'bymod', 'session.json'), 'utf8'));
  assert.is(rec.backendModuleDigest, `sha256:${createHash('sha256').update(readFileSync(EXAMPLE)).digest('hex')}`);
  const changed = evilModule('evil-changed');
  writeFileSync(mod, readFileSync(changed.file));
  const again = cli(['discard', 'bymod', '--store', store]);
  assert.not.ok(existsSync(changed.ran), 'the changed module ran');
  assert.match(again.stderr, 'E_BACKEND_MODULE_CHANGED');
});

test("validate hashes a plan's backend modules and never imports them; a missing one is a problem", () => {
  const evil = evilModule('evil-plan');
  const plan = join(t.dir, 'evil-plan.json');
  const doc = JSON.parse(readFileSync(join(REPO_ROOT, 'plans', 'default.json'), 'utf8'));
  writeFileSync(plan, JSON.stringify({ ...doc, backendModules: [evil.file] }));
  const v = cli(['validate', plan]);
  assert.not.ok(existsSync(evil.ran), "validate ran the plan's module");
  assert.is(v.code, 0, v.stdout + v.stderr);
  writeFileSync(plan, JSON.stringify({ ...doc, backendModules: [join(t.dir, 'nope.mjs')] }));
  const missing = cli(['validate', plan]);
  assert.is(missing.code, 1);
  assert.match(missing.stdout, /backendModules.*nope\.mjs/);
});

test.run();
