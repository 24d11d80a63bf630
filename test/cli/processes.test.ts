// Process tracking through the real CLI: ps lists a session's server and its port; stop ends a
// run; a SIGTERMed run leaves no survivor (a shell with a background child and a grandchild);
// discard of a busy session is refused and keeps the root, --force stops what runs first; a
// process a finished run left behind is listed as left over until stopped.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CLI, cli, cliJson, hasCommand, processAlive, skipTest, tempDir, until, writeTree } from '../helpers/index.js';
import { spawnSync } from 'node:child_process';

const t = tempDir();
test.after(() => t.cleanup());
const src = join(t.dir, 'src');
writeTree(src, {
  'server.js': `require('http').createServer((q, s) => s.end(process.env.PDB_ENV_SESSION)).listen(Number(process.env.PORT), '127.0.0.1');`,
  // A shell whose background child starts a grandchild; both write their pids, then everyone waits.
  'tree.sh': "sh -c 'sleep 300 & echo $! > grand.pid; wait' &\necho $! > child.pid\necho $$ > top.pid\nwait\n",
});
// Process groups here; the cgroup v2 path has its own test (test/sessions/runtime/cgroup-v2.test.ts).
const env = { PDB_ENV_STORE: join(t.dir, 'store'), PDB_ENV_CGROUP: 'off' };

function startRun(name: string, ...command: string[]): ChildProcess {
  return spawn(process.execPath, [CLI, 'run', name, '--', ...command], { env: { ...process.env, ...env }, stdio: 'ignore' });
}

const exited = (c: ChildProcess) =>
  new Promise<number | null>((r) => (c.exitCode !== null || c.signalCode !== null ? r(c.exitCode) : c.once('exit', (code) => r(code))));

function pidIn(root: string, file: string): number | null {
  try {
    const n = Number(readFileSync(join(root, file), 'utf8').trim());
    return n > 0 ? n : null;
  } catch {
    return null;
  }
}

cliJson(['create', 's', '--from', src], { env });
const root = cli(['path', 's'], { env }).stdout.trim();
const port = (cliJson(['list'], { env }).sessions[0].ports as number[])[0]!;

test('ps lists the server with its port; discard of the busy session is refused and keeps the root; stop ends the run', async () => {
  const run = startRun('s', process.execPath, 'server.js');
  try {
    const ps = await until('the server in ps', () => {
      const r = cliJson(['ps', 's'], { env });
      return r.processes.some((p: { ports: number[] }) => p.ports.includes(port)) ? r : null;
    });
    assert.is(ps.tracking === 'cgroup' || ps.tracking === 'process-group', true);
    const server = ps.processes.find((p: { ports: number[] }) => p.ports.includes(port));
    assert.match(server.command, /server\.js/);
    assert.ok(server.ageMs >= 0 && server.ageMs < 60_000, String(server.ageMs));
    assert.is(server.runActive, true);
    assert.match(cli(['ps', 's'], { env }).stdout, new RegExp(`${server.pid}\\s+\\d+s\\s+${port}`));

    const refused = cli(['discard', 's'], { env });
    assert.is(refused.code, 1);
    assert.match(refused.stderr, /E_SESSION_BUSY/);
    assert.match(refused.stderr, new RegExp(`${server.pid} \\(.*server\\.js\\)`));
    assert.ok(existsSync(join(root, 'server.js')), 'the root is kept');

    const stopped = cliJson(['stop', 's', '--grace', '2000'], { env });
    assert.ok(stopped.stopped.includes(server.pid));
    assert.is(await exited(run), 143, 'the run ended with its command (128 + TERM)');
    assert.not.ok(processAlive(server.pid));
    assert.equal(cliJson(['ps', 's'], { env }).processes, []);
  } finally {
    run.kill('SIGKILL');
  }
});

test('a SIGTERMed run stops its whole tree: the shell, its background child and the grandchild', async () => {
  const run = startRun('s', 'sh', 'tree.sh');
  const pids = await until('three pids', () => {
    const all = ['top.pid', 'child.pid', 'grand.pid'].map((f) => pidIn(root, f));
    return all.every((p) => p !== null && processAlive(p)) ? (all as number[]) : null;
  });
  run.kill('SIGTERM');
  await exited(run);
  for (const pid of pids) assert.not.ok(processAlive(pid), `pid ${pid} survived`);
  assert.equal(cliJson(['ps', 's'], { env }).processes, []);
});

test('on a terminal, a run stays in the foreground group and is tracked as its process tree (or its cgroup, where there is one)', () => {
  if (!hasCommand('script')) return skipTest('run on a terminal', 'pty', 'util-linux script is not installed');
  const inner = `"${process.execPath}" "${CLI}" run s -- sh -c 'sleep 2 & "${process.execPath}" "${CLI}" ps s --json; wait'`;
  for (const cgroup of ['off', 'auto']) {
    const r = spawnSync('script', ['-qec', inner, '/dev/null'], {
      env: { ...process.env, ...env, PDB_ENV_CGROUP: cgroup },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.is(r.status, 0, r.stderr);
    const json = JSON.parse(r.stdout.slice(r.stdout.indexOf('{'), r.stdout.lastIndexOf('}') + 1).replace(/\r/g, ''));
    const sleep2 = json.processes.find((p: { command: string }) => p.command === 'sleep 2');
    assert.ok(sleep2, 'the background child is listed');
    if (cgroup === 'off') assert.is(json.tracking, 'process-group');
    assert.is(sleep2.mode, json.tracking === 'cgroup' ? 'cgroup' : 'process-tree');
  }
});

test('what a finished run leaves behind is listed as left over; discard --force stops it and discards', async () => {
  const r = cli(['run', 's', '--', 'sh', '-c', 'sleep 300 > /dev/null 2>&1 & echo $!'], { env });
  assert.is(r.code, 0, r.stderr);
  const pid = Number(r.stdout.trim());
  assert.ok(processAlive(pid));
  const ps = cliJson(['ps', 's'], { env });
  assert.equal(
    ps.processes.map((p: { pid: number; runActive: boolean }) => [p.pid, p.runActive]),
    [[pid, false]],
  );
  assert.match(cli(['ps', 's'], { env }).stdout, /left over/);
  const strays = cliJson(['doctor'], { env }).findings.filter((f: { kind: string }) => f.kind === 'stray-process');
  assert.is(strays.length, 1, 'doctor reports the stray');
  assert.is(strays[0].repair, 'pdb-env stop s');
  assert.match(strays[0].detail, new RegExp(`run that started them has ended: ${pid} \\(sleep 300\\)`));
  assert.is(cli(['discard', 's'], { env }).code, 1, 'busy');
  const gone = cliJson(['discard', 's', '--force'], { env });
  assert.is(gone.discarded, true);
  assert.not.ok(processAlive(pid), 'stopped before the discard');
  assert.not.ok(existsSync(root));
});

test('doctor names live processes of a session that is gone; stop ends them and gc forgets their record', async () => {
  cliJson(['create', 'g', '--from', src], { env });
  const r = cli(['run', 'g', '--', 'sh', '-c', 'sleep 300 > /dev/null 2>&1 & echo $!'], { env });
  const pid = Number(r.stdout.trim());
  // As an older pdb-env (or a person) would: the session directory removed under a live process.
  rmSync(join(env.PDB_ENV_STORE, 'sessions', 'g'), { recursive: true, force: true });
  const f = cliJson(['doctor'], { env }).findings.find((x: { kind: string }) => x.kind === 'stray-process');
  assert.ok(f, 'a stray is reported');
  assert.match(f.detail, new RegExp(`session g is gone.*${pid}`));
  assert.equal(cliJson(['stop', 'g', '--grace', '1000'], { env }).stopped, [pid]);
  assert.not.ok(processAlive(pid));
  assert.not.ok(cliJson(['doctor'], { env }).findings.some((x: { kind: string }) => x.kind === 'stray-process'));
});

test.run();
