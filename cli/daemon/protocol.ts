// The pdb-env daemon's wire format (native/client.c writes and reads the same).
// Request: "PDBD1\n", then NUL-terminated strings "pid=N", "cwd=DIR", "umask=OCTAL", "entry=FILE", "arg=A"
// (each argument, in order), "env=K=V" (each variable) and, for a turn hook, "stdin=TEXT" (what
// the client read from its stdin, no NUL in it), ended by an empty string.
// Answer: frames of a type byte and a 4-byte little-endian length, then that many bytes:
// 'o' stdout, 'e' stderr, 'x' the exit status (4 bytes LE, last), 'f' run it yourself (first and only).
import { PdbError } from '../../model/errors.js';
import type { CheapCall } from '../command-table.cjs';

export const MAGIC = 'PDBD1\n';
/** A request larger than this is refused (an environment is tens of kilobytes). */
export const MAX_REQUEST = 4 << 20;

export interface DaemonRequest {
  pid: number;
  cwd: string;
  /** The client's umask (files the command makes get the modes they would have got there); absent from an older client. */
  umask?: number;
  /** The pdb-env.cjs the client would run itself. */
  entry: string;
  args: string[];
  env: Record<string, string>;
  /** A turn hook's stdin, read by the client (`hook AGENT`); absent for other commands. */
  stdin?: string;
}

/** The request in `buf`, or null while it is not all there; E_USAGE for bytes that are no request. */
export function parseRequest(buf: Buffer): DaemonRequest | null {
  const bad = (why: string) => new PdbError('E_USAGE', `not a pdb-env daemon request: ${why}`);
  if (buf.length < MAGIC.length) {
    if (!Buffer.from(MAGIC).subarray(0, buf.length).equals(buf)) throw bad('no PDBD1 header');
    return null;
  }
  if (buf.toString('latin1', 0, MAGIC.length) !== MAGIC) throw bad('no PDBD1 header');
  if (buf.length > MAX_REQUEST) throw bad(`longer than ${MAX_REQUEST} bytes`);
  const req: DaemonRequest = { pid: 0, cwd: '', entry: '', args: [], env: {} };
  let at = MAGIC.length;
  for (;;) {
    const end = buf.indexOf(0, at);
    if (end < 0) return null;
    const s = buf.toString('utf8', at, end);
    at = end + 1;
    if (s === '') break;
    const eq = s.indexOf('=');
    const [key, value] = eq < 0 ? [s, ''] : [s.slice(0, eq), s.slice(eq + 1)];
    if (key === 'pid') req.pid = Number(value);
    else if (key === 'cwd') req.cwd = value;
    else if (key === 'umask') {
      if (!/^[0-7]{1,4}$/.test(value)) throw bad(`umask "${value}" is no octal mode`);
      req.umask = parseInt(value, 8);
    } else if (key === 'entry') req.entry = value;
    else if (key === 'arg') req.args.push(value);
    else if (key === 'stdin') req.stdin = value;
    else if (key === 'env') {
      const e = value.indexOf('=');
      if (e > 0) req.env[value.slice(0, e)] = value.slice(e + 1);
    } else throw bad(`unknown field "${key}"`);
  }
  if (at !== buf.length) throw bad('bytes after its end');
  if (!Number.isSafeInteger(req.pid) || req.pid <= 0) throw bad('no pid');
  if (!req.cwd.startsWith('/')) throw bad('no absolute cwd');
  return req;
}

/** Encode a request (the node side of the protocol: `pdb-env daemon status` and the tests). */
export function encodeRequest(req: DaemonRequest): Buffer {
  const parts = [
    `pid=${req.pid}`,
    `cwd=${req.cwd}`,
    ...(req.umask === undefined ? [] : [`umask=${req.umask.toString(8)}`]),
    `entry=${req.entry}`,
    ...req.args.map((a) => `arg=${a}`),
  ];
  for (const [k, v] of Object.entries(req.env)) parts.push(`env=${k}=${v}`);
  if (req.stdin !== undefined) parts.push(`stdin=${req.stdin}`);
  return Buffer.concat([Buffer.from(MAGIC), ...parts.map((p) => Buffer.from(`${p}\0`)), Buffer.from([0])]);
}

export type FrameType = 'o' | 'e' | 'x' | 'f';

export function frame(type: FrameType, data: Buffer | string = Buffer.alloc(0)): Buffer {
  const body = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeUInt32LE(body.length, 1);
  return Buffer.concat([head, body]);
}

export function exitFrame(status: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(status >>> 0, 0);
  return frame('x', b);
}

/** The frames in `buf` so far, and the bytes left over (a frame not yet complete). */
export function readFrames(buf: Buffer): { frames: Array<{ type: FrameType; data: Buffer }>; rest: Buffer } {
  const frames: Array<{ type: FrameType; data: Buffer }> = [];
  let at = 0;
  while (buf.length - at >= 5) {
    const len = buf.readUInt32LE(at + 1);
    if (buf.length - at - 5 < len) break;
    frames.push({ type: buf.toString('latin1', at, at + 1) as FrameType, data: buf.subarray(at + 5, at + 5 + len) });
    at += 5 + len;
  }
  return { frames, rest: buf.subarray(at) };
}

/** What the daemon says of itself (`pdb-env daemon status`). */
export interface DaemonRecord {
  pid: number;
  startedAt: string;
  socket: string;
  idleTimeoutMs: number;
  /** Whether it watches the roots of the sessions it checkpoints (model/scan/watch.ts). */
  watch: boolean;
  /** Commands run for clients, and declined (run by the client itself). */
  served: number;
  declined: number;
  /** Connections refused: their process was another user's (SO_PEERCRED), or no peer check could be made. */
  refused: number;
  /** Started by native/client.c on demand (no `daemon start`). */
  onDemand: boolean;
  /** Its resident set when asked, and the bound past which it exits after a command (its caches go with it; PDB_ENV_DAEMON_MAX_RSS_MB). */
  rssBytes: number;
  rssLimitBytes: number;
  /** The largest its resident set has been since it started (getrusage's maxrss). */
  peakRssBytes: number;
  uptimeMs: number;
}

/** cli/cheap-path.ts runHookFor, as the daemon calls it from the checkpoint bundle. */
export type RunHookFor = (
  args: readonly string[],
  stdin: string | undefined,
  client: { pid: number; watch?: boolean; sink: (fd: 1 | 2, text: string) => void },
) => Promise<number | null>;

/** cli/cheap-path.ts runCheapFor, as the daemon calls it from the checkpoint bundle. */
export type RunCheapFor = (
  call: CheapCall,
  client: { pid: number; watch?: boolean; sink: (fd: 1 | 2, text: string) => void },
) => Promise<number>;
