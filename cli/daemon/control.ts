// `pdb-env daemon start | stop | status`: the node side of the daemon's socket (native/client.c
// is the other), and the start of a daemon in the background.
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { PdbError } from '../../model/errors.js';
import { readProcStat } from '../../model/os/proc.js';
import { cliEntry } from '../../model/paths.js';
import { daemonFiles, ensureDaemonDir, unsafeDir, unsafeSocket, untrustedPeer, type DaemonFiles } from './location.js';
import { encodeRequest, readFrames, type DaemonRecord } from './protocol.js';

/** Ask the daemon (status or stop); null when none answers, or what answers is not this user's (its socket file, or its process). */
export function askDaemon(what: 'status' | 'stop', files: DaemonFiles = daemonFiles(), timeoutMs = 5000): Promise<DaemonRecord | null> {
  if (unsafeDir(files.dir) !== null || !existsSync(files.socket) || unsafeSocket(files.socket) !== null) return Promise.resolve(null);
  return new Promise((resolve) => {
    const sock = net.connect(files.socket);
    let buf: Buffer = Buffer.alloc(0);
    let out = '';
    const t = setTimeout(() => {
      sock.destroy();
      resolve(null);
    }, timeoutMs);
    const end = (v: DaemonRecord | null) => {
      clearTimeout(t);
      sock.destroy();
      resolve(v);
    };
    sock.once('error', () => end(null));
    sock.once('connect', () =>
      untrustedPeer(sock) !== null
        ? end(null)
        : sock.write(encodeRequest({ pid: process.pid, cwd: '/', entry: cliEntry(), args: ['__daemon', what], env: {} })),
    );
    sock.on('data', (chunk: Buffer) => {
      const { frames, rest } = readFrames(Buffer.concat([buf, chunk]));
      buf = rest;
      for (const f of frames) {
        if (f.type === 'o') out += f.data.toString('utf8');
        else if (f.type === 'x') {
          try {
            end(JSON.parse(out) as DaemonRecord);
          } catch {
            end(null);
          }
        }
      }
    });
    sock.once('close', () => end(null));
  });
}

/** The last error line of the daemon's log, as ": LINE" (or nothing). */
function lastError(log: string): string {
  try {
    const line = readFileSync(log, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('pdb-env: E_'))
      .pop();
    return line ? `: ${line.slice('pdb-env: '.length)}` : '';
  } catch {
    return '';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Start a daemon in the background (or find the one running); its record. */
export async function startDaemon(
  idleTimeoutMs: number,
  files: DaemonFiles = daemonFiles(),
  options: { watch?: boolean } = {},
): Promise<{ record: DaemonRecord; started: boolean }> {
  const running = await askDaemon('status', files);
  if (running) return { record: running, started: false };
  ensureDaemonDir(files);
  const log = openSync(files.log, 'a', 0o600);
  let exited: string | null = null;
  try {
    const child = spawn(
      process.execPath,
      [cliEntry(), 'daemon', 'run', '--idle-timeout', String(Math.round(idleTimeoutMs / 1000)), ...(options.watch ? ['--watch'] : [])],
      {
        detached: true,
        stdio: ['ignore', log, log],
        cwd: '/',
        env: { ...process.env, PDB_ENV_DAEMON_DIR: files.dir },
      },
    );
    child.once('exit', (code, signal) => (exited = signal ?? `exit status ${code}`));
    child.unref();
  } finally {
    closeSync(log);
  }
  for (let waited = 0; waited < 15_000; waited += 50) {
    await sleep(50);
    const record = await askDaemon('status', files);
    if (record) return { record, started: true };
    if (exited) break;
  }
  throw new PdbError('E_DAEMON_LOST', `the pdb-env daemon did not start${exited ? ` (${exited})` : ''}${lastError(files.log)}`, {
    hint: `Its log: ${files.log}`,
  });
}

/** Stop the daemon and wait until it has gone; its last record, or null when none ran. */
export async function stopDaemon(files: DaemonFiles = daemonFiles()): Promise<DaemonRecord | null> {
  const record = await askDaemon('stop', files);
  if (!record) return null;
  for (let waited = 0; waited < 15_000; waited += 20) {
    // Gone, or a zombie its new parent has not reaped yet (it was started detached).
    const st = readProcStat(record.pid);
    if (!st || st.state === 'Z' || st.state === 'X') return record;
    await sleep(20);
  }
  throw new PdbError('E_TIMEOUT', `the pdb-env daemon (pid ${record.pid}) did not stop within 15 s`, { hint: `kill ${record.pid}` });
}
