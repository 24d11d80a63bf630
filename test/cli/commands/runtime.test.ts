// The runtime layer through the real CLI: two sessions run servers on their own PORTs at once and
// each answers as itself; every session has a port block (list --json) no other session shares,
// and a private TMPDIR outside its root that discard removes.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CLI, cli, cliJson, tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());
const src = join(t.dir, 'src');
writeTree(src, {
  // Answers with what the session gave it: its name, its ports, its temp dir, its root.
  'server.js': `require('http').createServer((q, s) => s.end(JSON.stringify({
    session: process.env.PDB_ENV_SESSION, port: process.env.PORT, base: process.env.PDB_ENV_PORT_BASE,
    ports: process.env.PDB_ENV_PORTS, tmp: process.env.TMPDIR, tmp2: process.env.TMP, temp: process.env.TEMP,
    root: process.env.PDB_ENV_ROOT, os: require('os').tmpdir() }))).listen(Number(process.env.PORT), '127.0.0.1');`,
});
const env = { PDB_ENV_STORE: join(t.dir, 'store') };

async function get(port: number): Promise<any | null> {
  try {
    return await (await fetch(`http://127.0.0.1:${port}/`)).json();
  } catch {
    return null;
  }
}

async function waitFor(port: number, ms = 15_000): Promise<any> {
  const deadline = Date.now() + ms;
  for (;;) {
    const r = await get(port);
    if (r) return r;
    if (Date.now() > deadline) throw new Error(`nothing answered on ${port}`);
    await sleep(100);
  }
}

function startRun(name: string): ChildProcess {
  return spawn(process.execPath, [CLI, 'run', name, '--', process.execPath, 'server.js'], {
    env: { ...process.env, ...env },
    stdio: 'ignore',
  });
}

const exited = (c: ChildProcess) =>
  new Promise<number | null>((r) => (c.exitCode !== null ? r(c.exitCode) : c.once('exit', (code) => r(code))));

test('two sessions serve on their own PORTs at once, each answering as itself with a private TMPDIR outside its root', async () => {
  cliJson(['create', 'a', '--from', src], { env });
  cliJson(['create', 'b', '--from', src], { env });
  const listed = cliJson(['list'], { env }).sessions as Array<{ name: string; root: string; ports: number[]; tmpDir: string }>;
  const [a, b] = listed;
  assert.is(a!.ports.length, 10, 'a block of 10 by default');
  assert.is(b!.ports.length, 10);
  assert.ok(!a!.ports.some((p) => b!.ports.includes(p)), `disjoint: ${a!.ports} / ${b!.ports}`);
  for (const s of listed) {
    assert.ok(statSync(s.tmpDir).isDirectory(), 'the temp dir exists from create on');
    assert.ok(relative(s.root, s.tmpDir).startsWith('..'), `${s.tmpDir} is outside ${s.root}`);
  }
  const runs = [startRun('a'), startRun('b')];
  try {
    const [ra, rb] = await Promise.all([waitFor(a!.ports[0]!), waitFor(b!.ports[0]!)]);
    for (const [r, s] of [
      [ra, a!],
      [rb, b!],
    ] as const) {
      assert.is(r.session, s.name, 'answers as itself');
      assert.is(r.port, String(s.ports[0]));
      assert.is(r.base, String(s.ports[0]));
      assert.is(r.ports, s.ports.join(','));
      assert.is(r.tmp, s.tmpDir);
      assert.is(r.tmp2, s.tmpDir);
      assert.is(r.temp, s.tmpDir);
      assert.is(r.os, s.tmpDir, "node's os.tmpdir() follows TMPDIR");
      assert.is(r.root, s.root);
    }
    assert.is.not(ra.tmp, rb.tmp);
  } finally {
    for (const r of runs) r.kill('SIGTERM');
    await Promise.all(runs.map(exited));
  }
  const tmpA = a!.tmpDir;
  cliJson(['discard', 'a'], { env });
  assert.not.ok(existsSync(tmpA), 'discard removes the temp dir');
  // The freed block may be taken again; b keeps its own.
  cliJson(['create', 'c', '--from', src], { env });
  const after = cliJson(['list'], { env }).sessions as Array<{ name: string; ports: number[] }>;
  const c = after.find((s) => s.name === 'c')!;
  assert.equal(after.find((s) => s.name === 'b')!.ports, b!.ports, 'a session keeps its ports');
  assert.ok(!c.ports.some((p) => b!.ports.includes(p)));
});

test('run sets the runtime variables for a plain command too', () => {
  const r = cli(['run', 'b', '--', 'sh', '-c', 'echo "$PORT $PDB_ENV_PORT_BASE $PDB_ENV_PORTS $TMPDIR $PDB_ENV_ROOT"'], { env });
  assert.is(r.code, 0, r.stderr);
  const b = (cliJson(['list'], { env }).sessions as Array<{ name: string; root: string; ports: number[]; tmpDir: string }>).find(
    (s) => s.name === 'b',
  )!;
  assert.is(r.stdout.trim(), `${b.ports[0]} ${b.ports[0]} ${b.ports.join(',')} ${b.tmpDir} ${b.root}`);
  // PWD names the root, not wherever pdb-env was started: opencode takes its working directory
  // from PWD, and an inherited one had it write into the source instead of the session.
  const pwd = cli(['run', 'b', '--', 'node', '-e', 'process.stdout.write(process.env.PWD)'], { env: { ...env, PWD: src } });
  assert.is(pwd.stdout, b.root);
});

test.run();
