// The daemon serves only its own user (issue 55 item 1): the peer's credentials (SO_PEERCRED) are
// checked by the daemon on every connection and by the client before it sends anything; a socket
// or a socket directory of another user is refused by `daemon run` with E_DAEMON_DIR, and the
// client then runs the command itself, as without a daemon. Needs root (to be another user in a
// child: uid 65534) and the native client.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeRequest, readFrames } from '../../cli/daemon/protocol.js';
import { cliEntry, packageFile } from '../../model/paths.js';
import { cli, isRoot, processAlive, REPO_ROOT, skipTest, tempDir, until, writeTree } from '../helpers/index.js';

const t = tempDir('pdb-daemon-trust-');
// Others may pass through (not read) the test's directory: the daemon of uid 65534 lives below it.
chmodSync(t.dir, 0o711);
const BIN = packageFile('bin', 'pdb-env');
const CLIENT = join(REPO_ROOT, 'native', 'build', 'Release', 'pdb-env-client');
const NOBODY = 65534;
const started: number[] = [];
const store = join(t.dir, 'store');

test.after(() => {
  for (const pid of started) if (processAlive(pid)) process.kill(pid, 'SIGKILL');
  t.cleanup();
});

const missing = (): string | null =>
  !isRoot() ? 'needs root (to run a child as uid 65534)' : !existsSync(CLIENT) ? 'native/build has no pdb-env-client' : null;

function bin(args: string[], env: Record<string, string>) {
  const r = spawnSync(BIN, args, { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', PDB_ENV_DAEMON: 'manual', ...env } });
  return { code: r.status ?? 128, stdout: r.stdout, stderr: r.stderr };
}

/**
 * A listener of uid 65534 on `socket` (bound as root in root's directory, then listening as
 * nobody: SO_PEERCRED names the listener). It prints how many bytes each connection sent.
 */
function foreignListener(socket: string, chownTo?: number) {
  const py = `
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])
if len(sys.argv) > 2: os.chown(sys.argv[1], int(sys.argv[2]), int(sys.argv[2]))
os.setgid(${NOBODY}); os.setuid(${NOBODY})
s.listen(4)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    c.settimeout(2)
    n = 0
    try:
        while True:
            b = c.recv(65536)
            if not b: break
            n += len(b)
    except socket.timeout:
        pass
    c.close()
    print("received", n, flush=True)
`;
  const child = spawn('python3', ['-c', py, socket, ...(chownTo === undefined ? [] : [String(chownTo)])], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  started.push(child.pid!);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  return { child, out: () => out };
}

test('the client sends nothing to a listener of another user, and runs the checkpoint itself', async () => {
  const why = missing();
  if (why) return skipTest('the client checks the peer', 'root', why);
  writeTree(join(t.dir, 'src'), { 'a.txt': 'a\n' });
  assert.is(cli(['create', 's', '--from', join(t.dir, 'src'), '--store', store]).code, 0);
  const dir = join(t.dir, 'd1');
  mkdirSync(dir, { mode: 0o700 });
  const l = foreignListener(join(dir, 'daemon.sock'));
  await until('the listener', () => l.out().includes('listening'));
  const r = bin(['checkpoint', 's', '--store', store], { PDB_ENV_DAEMON_DIR: dir });
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, /^checkpoint \d+ of s/);
  await until('the connection closed', () => l.out().includes('received'), 5000);
  assert.match(l.out(), /received 0\n/, 'the client sent its command line and environment to another user');
  l.child.kill('SIGKILL');
});

test('a socket file of another user: the client does not use it, and `daemon run` refuses it (E_DAEMON_DIR)', async () => {
  const why = missing();
  if (why) return skipTest('a planted socket', 'root', why);
  const dir = join(t.dir, 'd2');
  mkdirSync(dir, { mode: 0o700 });
  const l = foreignListener(join(dir, 'daemon.sock'), NOBODY);
  await until('the listener', () => l.out().includes('listening'));
  const r = bin(['checkpoint', 's', '--store', store], { PDB_ENV_DAEMON_DIR: dir });
  assert.is(r.code, 0, r.stderr);
  // The listener reports a connection when it closes (at most 2 s after its last byte).
  await new Promise((r) => setTimeout(r, 2500));
  assert.not.match(l.out(), /received/, 'the client connected to a socket file of another user');
  const run = cli(['daemon', 'run', '--idle-timeout', '5'], { env: { PDB_ENV_DAEMON_DIR: dir } });
  assert.is(run.code, 1, run.stdout + run.stderr);
  assert.match(run.stderr, /E_DAEMON_DIR: the pdb-env daemon's socket cannot be used: .*daemon\.sock belongs to uid 65534/);
  l.child.kill('SIGKILL');

  // A directory of another user, mode 0700 and all: refused too.
  const theirs = join(t.dir, 'd3');
  mkdirSync(theirs, { mode: 0o700 });
  chownSync(theirs, NOBODY, NOBODY);
  const start = cli(['daemon', 'start'], { env: { PDB_ENV_DAEMON_DIR: theirs } });
  assert.is(start.code, 1);
  assert.match(start.stderr, /E_DAEMON_DIR: .*belongs to uid 65534, not to this user \(0\)/);
  assert.is(bin(['checkpoint', 's', '--store', store], { PDB_ENV_DAEMON_DIR: theirs }).code, 0);
});

test('the daemon refuses a connection from another user (SO_PEERCRED), whatever the directory lets through', async () => {
  const why = missing();
  if (why) return skipTest('the daemon checks the peer', 'root', why);
  // A daemon of uid 65534 in its own directory; root (another user to it) connects.
  const dir = join(t.dir, 'd4');
  mkdirSync(dir, { mode: 0o700 });
  chownSync(dir, NOBODY, NOBODY);
  const code = `const { runDaemon } = await import(${JSON.stringify(packageFile('dist', 'cli', 'daemon', 'server.js'))}); await runDaemon({ idleTimeoutMs: 60000, onListening: () => console.log('listening') }); process.exit(0);`;
  const daemon = spawn(process.execPath, ['--input-type=module', '-e', code], {
    uid: NOBODY,
    gid: NOBODY,
    cwd: '/',
    env: { ...process.env, HOME: '/nonexistent', PDB_ENV_DAEMON_DIR: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(daemon.pid!);
  let out = '';
  let err = '';
  daemon.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  daemon.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  await until('the daemon of uid 65534 listening', () => out.includes('listening') || daemon.exitCode !== null);
  assert.ok(out.includes('listening'), err);
  const answer = await new Promise<{ bytes: number; frames: string }>((resolve) => {
    const sock = net.connect(join(dir, 'daemon.sock'));
    let buf = Buffer.alloc(0);
    sock.on('error', () => {});
    sock.on('connect', () =>
      sock.write(encodeRequest({ pid: process.pid, cwd: '/', entry: cliEntry(), args: ['__daemon', 'status'], env: {} })),
    );
    sock.on('data', (d: Buffer) => (buf = Buffer.concat([buf, d])));
    sock.on('close', () =>
      resolve({
        bytes: buf.length,
        frames: readFrames(buf)
          .frames.map((f) => f.type)
          .join(''),
      }),
    );
  });
  assert.equal(answer, { bytes: 0, frames: '' }, 'the daemon answered a connection of another user');
  await until('the refusal logged', () => err.includes('E_DAEMON_PEER'), 5000);
  assert.match(err, /E_DAEMON_PEER: a connection refused: its process \(pid \d+\) is uid 0, not this user \(65534\)/);
  daemon.kill('SIGTERM');
  await until('the daemon of uid 65534 gone', () => daemon.exitCode !== null || daemon.signalCode !== null);
  assert.not.ok(existsSync(join(dir, 'daemon.sock')));
  assert.not.ok(readFileSync('/proc/self/status', 'utf8').includes('Uid:\t65534'), 'this test process stays root');
});

test.run();
