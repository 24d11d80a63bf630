// The host fingerprint of a receipt: what the machine is, never who or where it is. The host is
// identified by a hash of its machine id with a per-project salt, so receipts from one machine group
// together (whoever ran them, with whatever HOME) without naming it.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, statfsSync } from 'node:fs';
import { arch, cpus, hostname, loadavg, platform, release, totalmem } from 'node:os';
import { FS_MAGIC } from '../../backends/shared/fs-util.js';
import { mountContaining } from '../../model/os/mounts.js';
import { runTool } from '../../model/os/run-tool.js';
import type { HostFingerprint, HostIdSource } from './receipt-types.js';

/** Mount options without values that are paths (overlay lowerdir=..., subvol=/x): keep the name only. */
export function sanitizeMountOptions(options: string[]): string[] {
  return options.map((o) => {
    const eq = o.indexOf('=');
    if (eq < 0) return o;
    const value = o.slice(eq + 1);
    return value.includes('/') || value.includes('\\') ? (value === '/' ? o : o.slice(0, eq)) : o;
  });
}

/** statfs type names where there is no mount table: the backends' FS_MAGIC, and a few more a store may sit on. */
const STATFS_TYPES: Record<number, string> = {
  ...Object.fromEntries(Object.entries(FS_MAGIC).map(([name, magic]) => [magic, name])),
  0xcafe4a11: 'bcachefs',
  0x6969: 'nfs',
  0x2fc12fc1: 'zfs',
};

export function storeFilesystem(dir: string): HostFingerprint['storeFs'] {
  // Without a mount table (macOS) no mount holds it, and statfs names the type.
  const m = mountContaining(dir);
  if (m) return { type: m.fsType, mountOptions: sanitizeMountOptions([...new Set([...m.mountOptions, ...m.superOptions])]) };
  try {
    const t = Number(statfsSync(dir).type);
    return { type: STATFS_TYPES[t] ?? `statfs-0x${t.toString(16)}`, mountOptions: [] };
  } catch {
    return { type: 'unknown', mountOptions: [] };
  }
}

async function toolVersion(cmd: string, args: string[] = ['--version']): Promise<string | null> {
  const r = await runTool(cmd, args, { timeoutMs: 15_000, env: { NO_COLOR: '1', npm_config_update_notifier: 'false' } });
  if (r.exitCode !== 0) return null; // not installed, or it failed: the receipt records null
  const m = /(\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?)/.exec(r.stdout);
  return m ? m[1]! : null;
}

// A constant, per-project salt: the same machine gets the same id in every run and every user's
// run, and the id says nothing about other programs' ids of the same machine (as systemd's
// sd_id128_get_machine_app_specific() does for the machine id). Never HOME, XDG or user names.
export const HOST_ID_SALT = 'pdb-env host id v2';

/** What identifies the machine, and where it came from. */
export interface MachineId {
  id: string;
  source: HostIdSource;
}

/** The OS edges the host id reads, injectable for tests. */
export interface MachineIdSources {
  platform: string;
  readFile(path: string): string | null;
  /** `ioreg -rd1 -c IOPlatformExpertDevice` output on macOS, null when it cannot run. */
  ioreg(): string | null;
  hostname(): string;
}

function readFileOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null; // absent on this OS: the next source is tried
  }
}

export const defaultMachineIdSources: MachineIdSources = {
  platform: platform(),
  readFile: readFileOrNull,
  ioreg: () => {
    const r = spawnSync('ioreg', ['-rd1', '-c', 'IOPlatformExpertDevice'], { encoding: 'utf8', timeout: 10_000 });
    return r.status === 0 ? r.stdout : null;
  },
  hostname,
};

/** The machine's stable id: /etc/machine-id (or D-Bus's copy) on Linux, IOPlatformUUID on macOS, else the host name. */
export function machineId(src: MachineIdSources = defaultMachineIdSources): MachineId {
  if (src.platform === 'darwin') {
    const m = /"IOPlatformUUID"\s*=\s*"([0-9A-Fa-f-]+)"/.exec(src.ioreg() ?? '');
    if (m) return { id: m[1]!.toUpperCase(), source: 'platform-uuid' };
  }
  for (const f of ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
    const id = src.readFile(f)?.trim();
    if (id) return { id, source: 'machine-id' };
  }
  return { id: src.hostname(), source: 'hostname' };
}

/** sha256 of the per-project salt and the machine id: stable per machine, never the id itself. */
export function hostIdOf(machine: MachineId): string {
  return createHash('sha256').update(`${HOST_ID_SALT}\0${machine.id}`).digest('hex');
}

/** The host as a receipt records it; `loadAtStart` is os.loadavg() when the run started (kept across --resume). */
export async function hostFingerprint(storeDir: string, loadAtStart: number[] = loadavg()): Promise<HostFingerprint> {
  const [npm, git, pnpm] = await Promise.all([toolVersion('npm'), toolVersion('git'), toolVersion('pnpm')]);
  const cpu = cpus();
  const machine = machineId();
  return {
    hostId: hostIdOf(machine),
    hostIdSource: machine.source,
    os: platform(),
    kernel: release(),
    arch: arch(),
    cpuModel: (cpu[0]?.model ?? 'unknown').trim(),
    cores: Math.max(1, cpu.length),
    memoryBytes: totalmem(),
    loadAverage: loadAtStart,
    storeFs: storeFilesystem(storeDir),
    tools: { node: process.versions.node, npm, git, pnpm },
  };
}
