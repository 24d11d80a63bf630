// The host fingerprint of a receipt: what the machine is, never who or where it is. The host is
// identified by a hash of its machine id with a per-project salt, so receipts from one machine group
// together (whoever ran them, with whatever HOME) without naming it.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, statfsSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
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
/**
 * Since issue 52 the id also hashes a per-machine instance id: 128 random bits drawn on the machine
 * the first time pdb-env runs there as root, kept machine-wide in HOST_INSTANCE_FILE (never under
 * HOME, so every user's runs on one machine share it). /etc/machine-id alone is not enough: images
 * carry it, and every VM of this project's kind booted from one image had the same machine id, so
 * the v2 id named them all as one host. Two machines can share a v3 id only if one was copied from
 * the other after pdb-env had run there as root (the file travels with the image): remove the file
 * on such a copy, and the next run draws a new one.
 */
export const HOST_ID_SALT_V3 = 'pdb-env host id v3';
export const HOST_INSTANCE_FILE = '/var/lib/pdb-env/host-instance';
/** Where the instance id is read from instead (tests). */
export const HOST_INSTANCE_ENV = 'PDB_ENV_HOST_INSTANCE_FILE';

/** What identifies the machine, and where it came from. */
export interface MachineId {
  id: string;
  source: HostIdSource;
  /** The machine's instance id (HOST_INSTANCE_FILE), null where none could be read or made (not root). */
  instance?: string | null;
}

/** The OS edges the host id reads, injectable for tests. */
export interface MachineIdSources {
  platform: string;
  readFile(path: string): string | null;
  /** `ioreg -rd1 -c IOPlatformExpertDevice` output on macOS, null when it cannot run. */
  ioreg(): string | null;
  hostname(): string;
  /** The machine-wide instance id, made when it can be; null when it is absent and cannot be made. */
  instance(): string | null;
}

function readFileOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null; // absent on this OS: the next source is tried
  }
}

const INSTANCE = /^[0-9a-f]{32}$/;

/** Read the instance id at `file`, or draw one and write it there (atomically, world-readable); null when neither works. */
export function machineInstance(file: string): string | null {
  const had = readFileOrNull(file)?.trim();
  if (had && INSTANCE.test(had)) return had;
  const made = randomBytes(16).toString('hex');
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o755 });
    writeFileSync(tmp, `${made}\n`, { mode: 0o644, flag: 'wx' });
    renameSync(tmp, file);
  } catch {
    try {
      unlinkSync(tmp);
    } catch {
      // rollback: nothing was written, or it is already gone
    }
    return null; // not root: the id stays the machine id's alone (source says so)
  }
  // Two first runs at once: whichever rename came last is the file; read back what won.
  const now = readFileOrNull(file)?.trim();
  return now && INSTANCE.test(now) ? now : made;
}

export const defaultMachineIdSources: MachineIdSources = {
  platform: platform(),
  instance: () => machineInstance(process.env[HOST_INSTANCE_ENV] || HOST_INSTANCE_FILE),
  readFile: readFileOrNull,
  ioreg: () => {
    const r = spawnSync('ioreg', ['-rd1', '-c', 'IOPlatformExpertDevice'], { encoding: 'utf8', timeout: 10_000 });
    return r.status === 0 ? r.stdout : null;
  },
  hostname,
};

/** The machine's stable id: /etc/machine-id (or D-Bus's copy) on Linux, IOPlatformUUID on macOS, else the host name. */
export function machineId(src: MachineIdSources = defaultMachineIdSources): MachineId {
  const base = ((): MachineId => {
    if (src.platform === 'darwin') {
      const m = /"IOPlatformUUID"\s*=\s*"([0-9A-Fa-f-]+)"/.exec(src.ioreg() ?? '');
      if (m) return { id: m[1]!.toUpperCase(), source: 'platform-uuid' };
    }
    for (const f of ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
      const id = src.readFile(f)?.trim();
      if (id) return { id, source: 'machine-id' };
    }
    return { id: src.hostname(), source: 'hostname' };
  })();
  const instance = src.instance?.() ?? null;
  return instance ? { ...base, source: `${base.source}+instance` as HostIdSource, instance } : base;
}

/** sha256 of the per-project salt, the machine id and its instance id when there is one: stable per machine, never the ids themselves. */
export function hostIdOf(machine: MachineId): string {
  const text = machine.instance ? `${HOST_ID_SALT_V3}\0${machine.id}\0${machine.instance}` : `${HOST_ID_SALT}\0${machine.id}`;
  return createHash('sha256').update(text).digest('hex');
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
