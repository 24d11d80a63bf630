// checkpoint from inside a session's own run: the name comes from PDB_ENV_SESSION and the run's
// own lease does not block; another process of the session still running does, named in the error.
// From outside, a running command still blocks it (E_LEASE_BUSY).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CLI, cli, cliJson, tempDir, writeTree } from '../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());
const src = join(t.dir, 'src');
writeTree(src, { 'a.txt': 'A\n' });
const env = { PDB_ENV_STORE: join(t.dir, 'store') };
const pdb = `"${process.execPath}" "${CLI}"`;
cliJson(['create', 's', '--from', src], { env });

test('checkpoint with no name works from inside its own run', () => {
  const r = cli(['run', 's', '--', 'sh', '-c', `echo B > b.txt && ${pdb} checkpoint --json`], { env });
  assert.is(r.code, 0, r.stderr);
  const cp = JSON.parse(r.stdout);
  assert.is(cp.session, 's');
  assert.is(cp.changes, 1);
  assert.is(cliJson(['list'], { env }).sessions[0].lastCheckpoint.snapshot, cp.snapshot);
});

test('from inside, another process of the session still running is named and the checkpoint refused', () => {
  const r = cli(['run', 's', '--', 'sh', '-c', `sleep 30 & ${pdb} checkpoint; rc=$?; kill $!; exit $rc`], { env });
  assert.is(r.code, 1, r.stdout);
  assert.match(r.stderr, /E_SESSION_BUSY/);
  assert.match(r.stderr, /\d+ \(sleep 30\)/);
});

test('from outside, a running command still blocks it; no name outside a run is a usage error', async () => {
  const run = spawn(process.execPath, [CLI, 'run', 's', '--', 'sleep', '30'], { env: { ...process.env, ...env }, stdio: 'ignore' });
  try {
    for (let i = 0; i < 100 && cliJson(['ps', 's'], { env }).processes.length === 0; i++) await sleep(50);
    const r = cli(['checkpoint', 's'], { env });
    assert.is(r.code, 1);
    assert.match(r.stderr, /E_LEASE_BUSY/);
  } finally {
    cli(['stop', 's', '--grace', '1000'], { env });
    run.kill('SIGKILL');
  }
  const noName = cli(['checkpoint'], { env: { ...env, PDB_ENV_SESSION: '' } });
  assert.is(noName.code, 2);
  assert.match(noName.stderr, /needs a session name/);
});

test.run();
