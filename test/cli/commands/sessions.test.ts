// create's backend: --backend, else the project's pdb-env.json "backend", else full-copy.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cli, tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir('pdb-create-backend-');
test.after(() => t.cleanup());

const project = join(t.dir, 'proj');
writeTree(project, { 'a.txt': 'a\n' });
const env = { PDB_ENV_STORE: join(t.dir, 'store') };
const create = (name: string, extra: string[] = []) => cli(['create', name, '--from', project, '--json', ...extra], { env });

test('no pdb-env.json: full-copy', () => {
  const r = create('plain');
  assert.is(r.code, 0, r.stderr);
  assert.is(JSON.parse(r.stdout).backend, 'full-copy');
});

test('pdb-env.json names the backend: create takes it (an unknown name gets a did-you-mean); --backend wins', () => {
  writeFileSync(join(project, 'pdb-env.json'), JSON.stringify({ backend: 'overlya' }));
  const unknown = create('typo');
  assert.is(JSON.parse(unknown.stdout).error.code, 'E_BACKEND_UNKNOWN', unknown.stdout);
  assert.match(JSON.parse(unknown.stdout).error.hint, /Did you mean overlay\?/);
  writeFileSync(join(project, 'pdb-env.json'), JSON.stringify({ backend: 'apfs-clone' }));
  const named = create('named');
  assert.is(JSON.parse(named.stdout).error.code, 'E_BACKEND_UNAVAILABLE', 'apfs-clone was asked for (it runs on macOS only)');
  const chosen = create('chosen', ['--backend', 'full-copy']);
  assert.is(chosen.code, 0, chosen.stderr);
  assert.is(JSON.parse(chosen.stdout).backend, 'full-copy');
});

test.run();
