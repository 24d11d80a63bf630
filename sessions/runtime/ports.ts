// Port blocks: each session owns a block of consecutive ports from a range, so two dev servers in
// two sessions never both reach for 3000. Blocks are chosen under the store lock (the caller holds
// it) from the ports no other session of the store records, and probed: a block with a port that
// something else on the host already listens on is skipped.
import { PdbError, osErrorCode } from '../../model/errors.js';
import { sha256 } from '../../model/os/hash.js';
import { nativeOs } from '../../model/os/native.js';

export interface PortConfig {
  /** First and last port of the range blocks are taken from (inclusive). */
  first: number;
  last: number;
  /** Ports per session. */
  block: number;
}

export const DEFAULT_PORT_CONFIG: PortConfig = { first: 20000, last: 29999, block: 10 };

function portNumber(text: string, what: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 65535)
    throw new PdbError('E_USAGE', `${what} must be a port number (1-65535), got "${text}"`, {
      hint: 'PDB_ENV_PORT_RANGE=20000-29999 and PDB_ENV_PORT_BLOCK=10 are the defaults.',
    });
  return n;
}

/** The range and block size: PDB_ENV_PORT_RANGE ("FIRST-LAST") and PDB_ENV_PORT_BLOCK, else the defaults. */
export function portConfig(env: NodeJS.ProcessEnv = process.env): PortConfig {
  const cfg = { ...DEFAULT_PORT_CONFIG };
  const range = env.PDB_ENV_PORT_RANGE?.trim();
  if (range) {
    const m = /^(\d+)-(\d+)$/.exec(range);
    if (!m) throw new PdbError('E_USAGE', `PDB_ENV_PORT_RANGE must look like 20000-29999, got "${range}"`);
    cfg.first = portNumber(m[1]!, 'PDB_ENV_PORT_RANGE');
    cfg.last = portNumber(m[2]!, 'PDB_ENV_PORT_RANGE');
  }
  if (env.PDB_ENV_PORT_BLOCK?.trim()) cfg.block = portNumber(env.PDB_ENV_PORT_BLOCK.trim(), 'PDB_ENV_PORT_BLOCK');
  if (cfg.last - cfg.first + 1 < cfg.block)
    throw new PdbError('E_USAGE', `the port range ${cfg.first}-${cfg.last} is smaller than one block of ${cfg.block}`);
  return cfg;
}

/** Can something bind `port` on `host` right now? An address family the host lacks counts as free. */
async function bindable(port: number, host: string): Promise<boolean> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (err) => {
      const code = osErrorCode(err);
      resolve(code === 'EADDRNOTAVAIL' || code === 'EAFNOSUPPORT');
    });
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/**
 * Is `port` free on the loopback addresses (127.0.0.1 and ::1 where the host has it)? bind(2) and
 * listen(2) through the native addon where it is built (net.Server's address lookup compiles
 * Node's IPv6 pattern first: ~15 ms of a create), else a net.Server on each; the same answer.
 */
export async function portIsFree(port: number): Promise<boolean> {
  const os = nativeOs();
  if (os) return os.portsFree([port])[0] === 1;
  return (await bindable(port, '127.0.0.1')) && (await bindable(port, '::1'));
}

export type PortProbe = (port: number) => Promise<boolean>;

/**
 * The first port of a free block: none of its ports in `taken` (other sessions' blocks) and all of
 * them bindable. The search starts at a block picked from `seed` (the store), so two stores on one
 * host do not both start at the bottom of the range, and wraps around once.
 */
export async function allocatePortBlock(
  taken: ReadonlySet<number>,
  seed: string,
  cfg: PortConfig = portConfig(),
  probe: PortProbe = portIsFree,
): Promise<number[]> {
  const blocks = Math.floor((cfg.last - cfg.first + 1) / cfg.block);
  const start = sha256(seed).readUInt32BE(0) % blocks;
  for (let i = 0; i < blocks; i++) {
    const base = cfg.first + ((start + i) % blocks) * cfg.block;
    const ports = Array.from({ length: cfg.block }, (_, k) => base + k);
    if (ports.some((p) => taken.has(p))) continue;
    // The block's ports are probed at once: one after the other, the twenty binds (ten ports, two
    // addresses) took 21 ms of a profiled create --base.
    if ((await Promise.all(ports.map((p) => probe(p)))).every(Boolean)) return ports;
  }
  throw new PdbError('E_PORTS_EXHAUSTED', `no free block of ${cfg.block} ports is left in ${cfg.first}-${cfg.last}`, {
    hint: 'Discard sessions you no longer need, or widen the range with PDB_ENV_PORT_RANGE=FIRST-LAST.',
  });
}
