import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { assertBackendName, getBackend, isBackendName, listBackends } from '../../backends/registry.js';
import { BACKENDS, BACKEND_NAMES } from '../../backends/table.js';
import { isPdbError } from '../../model/errors.js';
import { cli, cliJson, tempDir, writeTree } from '../helpers/index.js';

const t = tempDir('pdb-reg-');
test.after(() => t.cleanup());

test('backends --json lists all seven user backends with the typed fields', () => {
  const out = cliJson<{ backends: Array<Record<string, unknown>> }>(['backends', '--store', join(t.dir, 'store')], { cwd: t.dir });
  assert.equal(
    out.backends.map((b) => b.name),
    [...BACKEND_NAMES],
  );
  for (const b of out.backends) {
    assert.is(typeof b.available, 'boolean', String(b.name));
    assert.is(b.securityIsolation, false);
    assert.is(typeof b.experimental, 'boolean');
    assert.ok(b.evidence && typeof b.evidence === 'object');
    if (b.available) assert.is(b.reason, null);
    else assert.match(String(b.reason), /^E_[A-Z_]+$/, `${String(b.name)} is unavailable without a typed reason`);
    // Declared capabilities are claims: only a backend probed available makes them.
    if (b.available) assert.is(typeof b.capabilities, 'object', `${String(b.name)} is available without its capabilities`);
    else assert.not.ok('capabilities' in b, `${String(b.name)} is unavailable but claims capabilities`);
  }
  const by = Object.fromEntries(out.backends.map((b) => [b.name, b]));
  assert.is(by['full-copy']!.available, true);
  assert.is(by['apfs-clone']!.experimental, true);
  assert.is(by['agentfs']!.experimental, true);
  if (process.platform !== 'darwin') assert.is(by['apfs-clone']!.reason, 'E_UNSUPPORTED_OS');
  // The temp dir is not a git repository.
  assert.is(by['git-worktree']!.reason, 'E_NOT_GIT_REPO');
  assert.not.ok(
    out.backends.some((b) => b.name === 'hardlink-farm'),
    'the negative control is never offered',
  );
  // No absolute path leaks into the evidence.
  assert.not.match(JSON.stringify(out.backends.map((b) => b.evidence)), /"\//);
});

test('selecting an unavailable backend fails closed with its reason, leaving no session', () => {
  const src = join(t.dir, 'src');
  writeTree(src, { 'a.txt': 'a' });
  const r = cli(['create', 's1', '--from', src, '--backend', 'apfs-clone', '--store', join(t.dir, 'store2'), '--json']);
  assert.is.not(r.code, 0);
  const err = JSON.parse(r.stdout).error;
  assert.is(err.code, 'E_BACKEND_UNAVAILABLE');
  assert.match(err.message, process.platform === 'darwin' ? /apfs-clone/ : /E_UNSUPPORTED_OS/);
  const list = cliJson<unknown>(['list', '--store', join(t.dir, 'store2')]);
  assert.not.match(JSON.stringify(list), /"s1"/);
});

test('an unknown or test-only backend name is E_BACKEND_UNKNOWN from the CLI', () => {
  const src = join(t.dir, 'src3');
  writeTree(src, { 'a.txt': 'a' });
  const r = cli(['create', 's1', '--from', src, '--backend', 'hardlink-farm', '--store', join(t.dir, 'store3'), '--json']);
  assert.is(JSON.parse(r.stdout).error.code, 'E_BACKEND_UNKNOWN');
});

test('the registry serves the table: each user backend by name, the negative control only when allowed', async () => {
  assert.equal(
    (await listBackends()).map((b) => b.name),
    [...BACKEND_NAMES],
  );
  for (const name of BACKEND_NAMES) {
    assert.ok(isBackendName(name));
    assert.is(await getBackend(name), await BACKENDS[name].load(), name);
  }
  assert.not.ok(isBackendName('hardlink-farm'));
  assert.is((await getBackend('hardlink-farm', { allowTestOnly: true })).name, 'hardlink-farm');
  for (const [name, pattern] of [
    ['hardlink-farm', /test-only/],
    ['zfs-clone', /unknown backend/],
  ] as const) {
    assert.throws(
      () => assertBackendName(name),
      (e: unknown) => isPdbError(e, 'E_BACKEND_UNKNOWN') && pattern.test(e.message),
    );
    try {
      await getBackend(name);
      assert.unreachable(`${name} was served`);
    } catch (err) {
      assert.ok(isPdbError(err, 'E_BACKEND_UNKNOWN'), String(err));
      if (name === 'zfs-clone') assert.match(err.hint ?? '', BACKEND_NAMES.join(', '));
    }
  }
});

test.run();
