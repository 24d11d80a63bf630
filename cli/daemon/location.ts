// Where this user's pdb-env daemon listens (native/client.c finds it the same way):
// PDB_ENV_DAEMON_DIR, else $XDG_RUNTIME_DIR/pdb-env, else /tmp/pdb-env-UID. The directory is this
// user's and nobody else may write it: a socket another user put there first would be handed
// every command line and its environment. The client checks the same and otherwise runs the
// command itself.
import { lstatSync, mkdirSync } from 'node:fs';
import type net from 'node:net';
import { loadNativeAddon } from '../../model/os/native.js';
import { join } from 'node:path';
import { PdbError } from '../../model/errors.js';

export interface DaemonFiles {
  dir: string;
  socket: string;
  /** The running daemon's record: its pid, entry, build and start (JSON). */
  record: string;
  /** What the daemon prints (its errors), appended. */
  log: string;
}

const uid = (): number => (typeof process.getuid === 'function' ? process.getuid() : 0);

/** The daemon's files for this environment. */
export function daemonFiles(env: NodeJS.ProcessEnv = process.env): DaemonFiles {
  const dir = env.PDB_ENV_DAEMON_DIR || (env.XDG_RUNTIME_DIR ? join(env.XDG_RUNTIME_DIR, 'pdb-env') : `/tmp/pdb-env-${uid()}`);
  return { dir, socket: join(dir, 'daemon.sock'), record: join(dir, 'daemon.json'), log: join(dir, 'daemon.log') };
}

/** Why the directory may not hold the daemon's socket, or null when it may (it exists, is a directory, this user's, mode 0700 or narrower). */
export function unsafeDir(dir: string): string | null {
  let st;
  try {
    st = lstatSync(dir);
  } catch {
    return `${dir} does not exist`;
  }
  if (!st.isDirectory()) return `${dir} is not a directory`;
  if (st.uid !== uid()) return `${dir} belongs to uid ${st.uid}, not to this user (${uid()})`;
  if ((st.mode & 0o077) !== 0) return `${dir} can be entered or written by others (mode ${(st.mode & 0o777).toString(8)})`;
  return null;
}

/** Make the daemon's directory (mode 0700) where there is none; E_DAEMON_DIR when the one there is not safe. */
export function ensureDaemonDir(files: DaemonFiles): void {
  mkdirSync(files.dir, { recursive: true, mode: 0o700 });
  const why = unsafeDir(files.dir);
  if (why)
    throw new PdbError('E_DAEMON_DIR', `the pdb-env daemon's directory cannot be used: ${why}`, {
      hint: 'Set PDB_ENV_DAEMON_DIR to a directory of yours with mode 0700 (or remove that one).',
    });
}

/** Unix socket paths hold at most 107 bytes on Linux (sun_path). */
export const SOCKET_PATH_MAX = 107;

/** Why a socket file there may not be used (it is no socket, or another user's), or null when it may (or there is none). */
export function unsafeSocket(socket: string): string | null {
  let st;
  try {
    st = lstatSync(socket);
  } catch {
    return null;
  }
  if (!st.isSocket()) return `${socket} is not a socket`;
  if (st.uid !== uid()) return `${socket} belongs to uid ${st.uid}, not to this user (${uid()})`;
  return null;
}

const NO_PEER_CHECK = 'no peer-credentials check here (the native addon with peerCred did not load)';

/** The addon's SO_PEERCRED call, or null where the addon (or that call) is missing. */
function peerCredCall(): ((fd: number) => PeerCred | number) | null {
  const f = (loadNativeAddon().addon as { peerCred?: (fd: number) => PeerCred | number } | null)?.peerCred;
  return typeof f === 'function' ? f : null;
}

/** E_DAEMON_PEER where no connection's process could be checked: a daemon then serves nobody, so none starts. */
export function requirePeerCheck(): void {
  if (!peerCredCall())
    throw new PdbError('E_DAEMON_PEER', `the pdb-env daemon cannot start: ${NO_PEER_CHECK}`, {
      hint: 'npm rebuild pdb-env builds the addon (a C compiler is needed); commands run without a daemon meanwhile.',
    });
}

export interface PeerCred {
  pid: number;
  uid: number;
  gid: number;
}

/**
 * Why the process at the other end of a connected Unix socket may not be served or believed, or
 * null when it is this user's (SO_PEERCRED, native/addon.c peerCred: what the kernel recorded at
 * its connect or listen, which it cannot forge). Without the addon's call there is no check, and
 * that is a refusal too: the directory's mode alone is not trusted.
 */
export function untrustedPeer(sock: net.Socket): string | null {
  const peerCred = peerCredCall();
  if (!peerCred) return NO_PEER_CHECK;
  const fd = (sock as unknown as { _handle?: { fd?: number } })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) return 'the connection has no file descriptor to check';
  const cred = peerCred(fd);
  if (typeof cred === 'number') return `SO_PEERCRED failed (errno ${cred})`;
  if (cred.uid !== uid()) return `its process (pid ${cred.pid}) is uid ${cred.uid}, not this user (${uid()})`;
  return null;
}
