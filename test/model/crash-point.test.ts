import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CRASH_POINTS, crashPoint } from '../../model/crash-point.js';
import { REPO_ROOT } from '../helpers/index.js';

const module = join(REPO_ROOT, 'dist', 'model', 'crash-point.js');
const child = (env: Record<string, string>) =>
  spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { crashPoint } from ${JSON.stringify(module)}; crashPoint('create:after-intent'); console.log('passed');`,
    ],
    {
      env: { ...process.env, ...env },
      encoding: 'utf8',
    },
  );

test('a crash point kills the process with SIGKILL only when PDB_ENV_CRASH_AT names it', () => {
  const named = child({ PDB_ENV_CRASH_AT: 'create:after-intent' });
  assert.is(named.signal, 'SIGKILL');
  assert.is(named.stdout, '');
  const other = child({ PDB_ENV_CRASH_AT: 'discard:after-intent' });
  assert.is(other.status, 0);
  assert.is(other.stdout, 'passed\n');
  crashPoint('create:after-intent', {}); // inert without the variable
});

test('the crash points are unique and name their operation', () => {
  assert.is(new Set(CRASH_POINTS).size, CRASH_POINTS.length);
  for (const p of CRASH_POINTS) assert.match(p, /^(create|checkpoint|publish|discard|apply|restore):after-[a-z-]+$/);
});

test.run();
