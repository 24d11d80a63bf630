// The pdb-env daemon (cli/daemon/) and its native client (native/client.c, run by bin/pdb-env for
// a checkpoint or a restore): a plain checkpoint is run by the daemon with the same output and exit status as
// without it, for the client's process (its own run tolerated); anything it cannot run exactly as
// the command would is declined and run by the client itself; no daemon, a dead one, an unsafe
// directory or a new build never make a checkpoint fail.
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { environmentDiffers } from '../../cli/daemon/server.js';
import { encodeRequest, parseRequest, readFrames, frame, exitFrame } from '../../cli/daemon/protocol.js';
import { packageFile } from '../../model/paths.js';
import { cli, cliJson, processAlive, REPO_ROOT, skipTest, tempDir, until, writeTree } from '../helpers/index.js';

const t = tempDir('pdb-daemon-');
const BIN = packageFile('bin', 'pdb-env');
const CLIENT = join(REPO_ROOT, 'native', 'build', 'Release', 'pdb-env-client');
const store = join(t.dir, 'store');
const started: number[] = [];

test.after(() => {
  for (const pid of started) if (processAlive(pid)) process.kill(pid, 'SIGKILL');
  t.cleanup();
});

/** bin/pdb-env as a user runs it, with this test's daemon directory. */
function bin(args: string[], env: Record<string, string | undefined> = {}, cwd?: string) {
  const r = spawnSync(BIN, args, { encoding: 'utf8', cwd, env: { ...process.env, NO_COLOR: '1', ...env } as NodeJS.ProcessEnv });
  return { code: r.status ?? 128, stdout: r.stdout, stderr: r.stderr };
}

function startDaemon(dir: string, more: string[] = []): { pid: number } {
  const r = cliJson<{ pid: number; started: boolean }>(['daemon', 'start', '--idle-timeout', '120', ...more], {
    env: { PDB_ENV_DAEMON_DIR: dir },
  });
  assert.ok(r.started);
  started.push(r.pid);
  return r;
}

const status = (dir: string) =>
  cliJson<{ running: boolean; record: { pid: number; served: number; declined: number } | null }>(['daemon', 'status'], {
    env: { PDB_ENV_DAEMON_DIR: dir },
  });
const numberless = (out: string) => out.replace(/^checkpoint \d+ of/, 'checkpoint N of');

test('the wire format: a request reads back as written, in any pieces; frames too', () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.string({ unit: 'grapheme' }).filter((s) => !s.includes('\0')),
        { maxLength: 6 },
      ),
      fc.dictionary(
        fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,8}$/),
        fc.string().filter((s) => !s.includes('\0')),
      ),
      fc.integer({ min: 1, max: 4_000_000 }),
      (args, env, pid) => {
        const req = { pid, cwd: '/some/where', entry: '/pkg/dist/cli/pdb-env.cjs', args, env: { ...env } };
        const bytes = encodeRequest(req);
        for (let cut = 0; cut < bytes.length; cut += 7) assert.is(parseRequest(bytes.subarray(0, cut)), null);
        assert.equal(parseRequest(bytes), req);
      },
    ),
  );
  assert.throws(() => parseRequest(Buffer.from('GET / HTTP/1.1\r\n')), /not a pdb-env daemon request/);
  assert.throws(
    () => parseRequest(Buffer.concat([encodeRequest({ pid: 1, cwd: '/', entry: 'e', args: [], env: {} }), Buffer.from('x')])),
    /after its end/,
  );
  const { frames, rest } = readFrames(Buffer.concat([frame('o', 'out'), frame('e', 'err'), exitFrame(3), Buffer.from([0x6f, 9])]));
  assert.equal(
    frames.map((f) => [f.type, f.type === 'x' ? f.data.readUInt32LE(0) : f.data.toString()]),
    [
      ['o', 'out'],
      ['e', 'err'],
      ['x', 3],
    ],
  );
  assert.is(rest.length, 2);
});

test("the environment: only PDB_ENV_STORE and PDB_ENV_SESSION may differ from the daemon's", () => {
  const own = { HOME: '/h', PDB_ENV_STORE: '/a', PATH: '/bin' };
  assert.is(environmentDiffers({ HOME: '/h', PDB_ENV_STORE: '/b', PDB_ENV_SESSION: 's', PATH: '/usr/bin' }, own), null);
  assert.is(
    environmentDiffers({ HOME: '/h', PDB_ENV_ROOT: '/r', PDB_ENV_PORTS: '8', PDB_ENV_PORT_BASE: '1' }, own),
    null,
    "a run's own variables",
  );
  assert.match(environmentDiffers({ HOME: '/h', PDB_ENV_SCANNER: 'js' }, own) ?? '', /PDB_ENV_SCANNER/);
  assert.match(environmentDiffers({ HOME: '/h' }, { ...own, PDB_ENV_NO_BUNDLE: '1' }) ?? '', /PDB_ENV_NO_BUNDLE/);
  assert.match(environmentDiffers({ HOME: '/other' }, own) ?? '', /HOME/);
  assert.match(environmentDiffers({ HOME: '/h', XDG_DATA_HOME: '/x' }, own) ?? '', /XDG_DATA_HOME/);
});

test('a daemon runs plain checkpoints with the same output and status, and declines what it cannot run exactly', async () => {
  if (!existsSync(CLIENT))
    return skipTest('the daemon and its client', 'native-scan', 'native/build has no pdb-env-client (no compiler at install)');
  const dir = join(t.dir, 'd1');
  const env = { PDB_ENV_DAEMON_DIR: dir };
  writeTree(join(t.dir, 'src'), { 'a.txt': 'a\n', lib: { 'b.txt': 'b\n' } });
  assert.is(cli(['create', 's', '--from', join(t.dir, 'src'), '--store', store]).code, 0);
  const root = cli(['path', 's', '--store', store]).stdout.trim();
  const before = bin(['checkpoint', 's', '--store', store], env);
  assert.is(before.code, 0, before.stderr);
  const { pid } = startDaemon(dir);

  appendFileSync(join(root, 'a.txt'), 'more\n');
  const served = bin(['checkpoint', 's', '--store', store, '--json'], env);
  assert.is(served.code, 0, served.stderr);
  const r = JSON.parse(served.stdout);
  assert.equal([r.changes, r.modified, r.scanner], [1, 1, 'native']);
  const rec = status(dir).record!;
  assert.equal([rec.pid, rec.served, rec.declined], [pid, 1, 0]);
  // The same text as a checkpoint without the daemon (cli() runs node itself).
  assert.is(
    numberless(bin(['checkpoint', 's', '--store', store], env).stdout),
    numberless(cli(['checkpoint', 's', '--store', store]).stdout),
  );
  // An error: the same lines on stderr and the same status.
  const [a, b] = [bin(['checkpoint', 'nope', '--store', store], env), cli(['checkpoint', 'nope', '--store', store])];
  assert.equal([a.code, a.stdout, a.stderr], [b.code, b.stdout, b.stderr]);
  assert.is(a.code, 1);
  // The client's working directory and environment: a relative --store, PDB_ENV_SESSION.
  assert.is(bin(['checkpoint', '--store', 'store'], { ...env, PDB_ENV_SESSION: 's' }, t.dir).code, 0);
  assert.is(status(dir).record!.served, 4);
  assert.is(status(dir).record!.declined, 0);
  // A restore, the other command an agent loop runs between steps: the file as the first checkpoint had it.
  const back = bin(['restore', 's', '--to', '1', '--store', store, '--json'], env);
  assert.is(back.code, 0, back.stderr);
  assert.is(readFileSync(join(root, 'a.txt'), 'utf8'), 'a\n');
  assert.is(status(dir).record!.served, 5);

  // Declined, then run by the client itself: --help, a PDB_ENV_* setting, another HOME.
  assert.match(bin(['checkpoint', '--help'], env).stdout, /Usage: pdb-env checkpoint/);
  const js = bin(['checkpoint', 's', '--store', store, '--json'], { ...env, PDB_ENV_SCANNER: 'js' });
  assert.is(js.code, 0, js.stderr);
  assert.is(JSON.parse(js.stdout).scanner, 'js', 'the setting took effect: the client ran it');
  assert.is(bin(['checkpoint', 's', '--store', store], { ...env, HOME: t.dir }).code, 0);
  assert.equal([status(dir).record!.served, status(dir).record!.declined], [5, 3]);

  // A reader that went away before the answer came: the checkpoint is taken and its status is 0, as without the daemon.
  const gone = await new Promise<number | null>((resolve) => {
    const child = spawn(BIN, ['checkpoint', 's', '--store', store], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child.stdout!.destroy();
    child.once('exit', (code, signal) => resolve(signal ? -1 : code));
  });
  assert.is(gone, 0, 'the client died of SIGPIPE (-1) or failed');
  assert.is(status(dir).record!.served, 6);

  assert.is(cli(['daemon', 'stop'], { env }).code, 0);
  assert.not.ok(status(dir).running);
  assert.not.ok(existsSync(join(dir, 'daemon.sock')));
  assert.not.ok(processAlive(pid));
});

test("a checkpoint from inside the session's own run is run by the daemon for that run", () => {
  if (!existsSync(CLIENT))
    return skipTest('the daemon inside a run', 'native-scan', 'native/build has no pdb-env-client (no compiler at install)');
  const dir = join(t.dir, 'd2');
  const env = { PDB_ENV_DAEMON_DIR: dir };
  writeTree(join(t.dir, 'src2'), { 'a.txt': 'a\n' });
  assert.is(cli(['create', 'r', '--from', join(t.dir, 'src2'), '--store', store]).code, 0);
  startDaemon(dir);
  // The run holds the session's lease; its child's checkpoint (the daemon's work) must see it as its own.
  const r = cli(['run', 'r', '--store', store, '--', 'sh', '-c', `echo x > new.txt && "${BIN}" checkpoint --store "${store}" --json`], {
    env,
  });
  assert.is(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /"changes": 1/);
  assert.is(status(dir).record!.served, 1);
  assert.is(cli(['daemon', 'stop'], { env }).code, 0);
});

test('no daemon, a dead one, an unsafe directory, a new build: the checkpoint runs anyway', async () => {
  if (!existsSync(CLIENT))
    return skipTest('the client without a daemon', 'native-scan', 'native/build has no pdb-env-client (no compiler at install)');
  writeTree(join(t.dir, 'src3'), { 'a.txt': 'a\n' });
  assert.is(cli(['create', 'f', '--from', join(t.dir, 'src3'), '--store', store]).code, 0);
  const ok = (env: Record<string, string>) => {
    const r = bin(['checkpoint', 'f', '--store', store], env);
    assert.is(r.code, 0, r.stderr);
  };
  ok({ PDB_ENV_DAEMON_DIR: join(t.dir, 'none') });

  // Killed: its socket is left, and nothing answers on it.
  const dead = join(t.dir, 'd3');
  const { pid } = startDaemon(dead);
  process.kill(pid, 'SIGKILL');
  await until('the killed daemon gone', () => !processAlive(pid));
  assert.ok(existsSync(join(dead, 'daemon.sock')));
  ok({ PDB_ENV_DAEMON_DIR: dead });
  // A new daemon takes the dead one's place.
  startDaemon(dead);
  assert.is(cli(['daemon', 'stop'], { env: { PDB_ENV_DAEMON_DIR: dead } }).code, 0);

  // A directory others may write: the client does not use it, and start refuses it.
  const open = join(t.dir, 'd4');
  startDaemon(open);
  chmodSync(open, 0o777);
  ok({ PDB_ENV_DAEMON_DIR: open });
  chmodSync(open, 0o700);
  assert.is(status(open).record!.served, 0, 'the client used a socket in a directory others may write');
  assert.is(cli(['daemon', 'stop'], { env: { PDB_ENV_DAEMON_DIR: open } }).code, 0);
  chmodSync(open, 0o755);
  const refused = cli(['daemon', 'start'], { env: { PDB_ENV_DAEMON_DIR: open } });
  assert.is(refused.code, 1);
  assert.match(refused.stderr, /E_DAEMON_DIR/);

  // A new build (here: one file the daemon watches) is declined, and the daemon exits.
  const fresh = join(t.dir, 'd5');
  mkdirSync(fresh, { mode: 0o700 });
  const stamp = join(t.dir, 'build-stamp');
  writeFileSync(stamp, '1');
  const code = `const { runDaemon } = await import(${JSON.stringify(packageFile('dist', 'cli', 'daemon', 'server.js'))}); await runDaemon({ idleTimeoutMs: 0, buildFiles: [${JSON.stringify(stamp)}], onListening: () => console.log('listening') }); process.exit(0);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], {
    env: { ...process.env, PDB_ENV_DAEMON_DIR: fresh },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  started.push(child.pid!);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  await until('the daemon listening', () => out.includes('listening'));
  ok({ PDB_ENV_DAEMON_DIR: fresh });
  assert.is(status(fresh).record!.served, 1);
  appendFileSync(stamp, '2');
  ok({ PDB_ENV_DAEMON_DIR: fresh });
  await until('the daemon of the old build gone', () => child.exitCode !== null);
  assert.not.ok(existsSync(join(fresh, 'daemon.sock')));
});

test('an idle daemon exits by itself and leaves no socket or record', async () => {
  const dir = join(t.dir, 'd6');
  const r = cliJson<{ pid: number }>(['daemon', 'start', '--idle-timeout', '1'], { env: { PDB_ENV_DAEMON_DIR: dir } });
  started.push(r.pid);
  await until('the idle daemon gone', () => !processAlive(r.pid), 10_000);
  assert.not.ok(existsSync(join(dir, 'daemon.sock')));
  assert.not.ok(existsSync(join(dir, 'daemon.json')));
  assert.match(readFileSync(join(dir, 'daemon.log'), 'utf8'), /listening/);
  const bad = cli(['daemon', 'start', '--idle-timeout', 'soon'], { env: { PDB_ENV_DAEMON_DIR: dir } });
  assert.equal([bad.code, /--idle-timeout must be a whole number/.test(bad.stderr)], [2, true]);
});

test('a daemon started with --watch checkpoints through its watch what a walk of everything finds', async () => {
  if (!existsSync(CLIENT) || process.platform !== 'linux')
    return skipTest("the daemon's watch", 'native-scan', 'native/build has no pdb-env-client, or this is no Linux');
  const dir = join(t.dir, 'dw');
  const env = { PDB_ENV_DAEMON_DIR: dir };
  const wstore = join(t.dir, 'wstore');
  writeTree(join(t.dir, 'wsrc'), { 'a.txt': 'a\n', lib: { 'b.txt': 'b\n', deep: { 'c.txt': 'c\n' } } });
  assert.is(cli(['create', 'w', '--from', join(t.dir, 'wsrc'), '--store', wstore]).code, 0);
  const root = cli(['path', 'w', '--store', wstore]).stdout.trim();
  startDaemon(dir, ['--watch']);
  const st = cliJson<{ record: { watch: boolean } }>(['daemon', 'status'], { env });
  assert.ok(st.record.watch, 'status says it watches');
  const checkpoint = () => {
    const r = bin(['checkpoint', 'w', '--store', wstore, '--json'], env);
    assert.is(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as { snapshot: string; filesHashed: number };
  };
  await new Promise((r) => setTimeout(r, 150));
  checkpoint(); // sets the watch up
  checkpoint(); // recorded: the next is vouched for
  for (let round = 0; round < 3; round++) {
    appendFileSync(join(root, 'lib', 'deep', 'c.txt'), `round ${round}\n`);
    writeFileSync(join(root, `new${round}.txt`), `${round}\n`);
    await new Promise((r) => setTimeout(r, 150));
    const watched = checkpoint();
    assert.is(watched.filesHashed, 2, 'the two files an event named');
    // The same tree walked whole, by a checkpoint the daemon does not run: the same Snapshot.
    const walked = cliJson<{ snapshot: string }>(['checkpoint', 'w', '--store', wstore]);
    assert.is(walked.snapshot, watched.snapshot, `round ${round}`);
  }
  assert.is(cli(['daemon', 'stop'], { env }).code, 0);
});

test.run();
