// The host fingerprint of a receipt: what the machine is, never who or where it is. The host is
// identified by a salted hash (salt from PDB_ENV_HOST_SALT or a per-machine file), so receipts from
// one machine group together without naming it.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, realpathSync, statfsSync, writeFileSync } from 'node:fs';
import { arch, cpus, homedir, hostname, platform, release, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import type { HostFingerprint } from './receipt-types.js';

export interface MountEntry {
  mountPoint: string;
  fsType: string;
  options: string[];
}

function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/** Parse /proc/self/mountinfo lines. */
export function parseMountInfo(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const [pre, post] = line.split(' - ');
    if (!pre || !post) continue;
    const f = pre.split(' ');
    const g = post.split(' ');
    if (f.length < 6 || g.length < 1) continue;
    const options = [...(f[5] ?? '').split(','), ...(g[2] ?? '').split(',')].filter(Boolean);
    out.push({ mountPoint: unescapeMount(f[4]!), fsType: g[0]!, options: [...new Set(options)] });
  }
  return out;
}

/** The mount holding `dir` (longest mount point that prefixes its real path). */
export function mountOf(dir: string, mounts: MountEntry[]): MountEntry | null {
  let real = dir;
  try {
    real = realpathSync(dir);
  } catch {
    /* use as given */
  }
  let best: MountEntry | null = null;
  for (const m of mounts) {
    const mp = m.mountPoint.endsWith('/') ? m.mountPoint : `${m.mountPoint}/`;
    if (real === m.mountPoint || `${real}/`.startsWith(mp) || m.mountPoint === '/') {
      if (!best || m.mountPoint.length >= best.mountPoint.length) best = m;
    }
  }
  return best;
}

/** Mount options without values that are paths (overlay lowerdir=..., subvol=/x): keep the name only. */
export function sanitizeMountOptions(options: string[]): string[] {
  return options.map((o) => {
    const eq = o.indexOf('=');
    if (eq < 0) return o;
    const value = o.slice(eq + 1);
    return value.includes('/') || value.includes('\\') ? (value === '/' ? o : o.slice(0, eq)) : o;
  });
}

const STATFS_TYPES: Record<number, string> = {
  0xef53: 'ext4',
  0x9123683e: 'btrfs',
  0x58465342: 'xfs',
  0x794c7630: 'overlay',
  0x01021994: 'tmpfs',
  0xcafe4a11: 'bcachefs',
  0x6969: 'nfs',
  0x2fc12fc1: 'zfs',
  26: 'apfs',
};

export function storeFilesystem(dir: string): HostFingerprint['storeFs'] {
  if (existsSync('/proc/self/mountinfo')) {
    const m = mountOf(dir, parseMountInfo(readFileSync('/proc/self/mountinfo', 'utf8')));
    if (m) return { type: m.fsType, mountOptions: sanitizeMountOptions(m.options) };
  }
  try {
    const t = Number(statfsSync(dir).type);
    return { type: STATFS_TYPES[t] ?? `statfs-0x${t.toString(16)}`, mountOptions: [] };
  } catch {
    return { type: 'unknown', mountOptions: [] };
  }
}

async function toolVersion(cmd: string, args: string[] = ['--version']): Promise<string | null> {
  try {
    const r = await execa(cmd, args, { timeout: 15_000, reject: false, env: { NO_COLOR: '1', npm_config_update_notifier: 'false' } });
    if (r.exitCode !== 0) return null;
    const m = /(\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?)/.exec(String(r.stdout));
    return m ? m[1]! : null;
  } catch {
    return null;
  }
}

/** The host salt: PDB_ENV_HOST_SALT, or a random salt kept in a per-machine file (made on first use). */
export function hostSalt(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PDB_ENV_HOST_SALT) return env.PDB_ENV_HOST_SALT;
  const configHome = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  const file = join(configHome, 'pdb-env', 'host-salt');
  try {
    const s = readFileSync(file, 'utf8').trim();
    if (s) return s;
  } catch {
    /* made below */
  }
  const salt = randomBytes(32).toString('hex');
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${salt}\n`, { mode: 0o600 });
  return salt;
}

export function hostId(salt: string): string {
  let machineId = '';
  for (const f of ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
    try {
      machineId = readFileSync(f, 'utf8').trim();
      break;
    } catch {
      /* try the next */
    }
  }
  return createHash('sha256').update(`${salt}\0${hostname()}\0${machineId}`).digest('hex');
}

export async function hostFingerprint(storeDir: string): Promise<HostFingerprint> {
  const [npm, git, pnpm] = await Promise.all([toolVersion('npm'), toolVersion('git'), toolVersion('pnpm')]);
  const cpu = cpus();
  return {
    hostId: hostId(hostSalt()),
    os: platform(),
    kernel: release(),
    arch: arch(),
    cpuModel: (cpu[0]?.model ?? 'unknown').trim(),
    cores: Math.max(1, cpu.length),
    memoryBytes: totalmem(),
    storeFs: storeFilesystem(storeDir),
    tools: { node: process.versions.node, npm, git, pnpm },
  };
}
