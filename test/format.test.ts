// The formatter's check is part of the suite: `npm run format` fixes what this reports.
import { spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { REPO_ROOT } from './helpers/index.js';

test('every source, schema and plan is formatted (npm run format fixes it)', () => {
  const r = spawnSync('npm', ['run', '--silent', 'format:check'], { cwd: REPO_ROOT, encoding: 'utf8' });
  assert.is(r.status, 0, `${r.stdout}${r.stderr}`);
});

test.run();
