#!/usr/bin/env node
// Host setup for the copy-on-write backends: loopback btrfs and XFS (reflink=1) filesystems.
//
//   node dist/scripts/host-setup.js up [--json] [--size-mib N]   create, mount, print mount points
//   node dist/scripts/host-setup.js down [--json]                unmount and detach
//
// Root only. The same functions are exported so tests can make a small per-test filesystem in a
// temp dir and always release it (see mountLoopFs / releaseLoopFs).
import { closeSync, existsSync, ftruncateSync, mkdirSync, openSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { $ as zx } from 'zx';
import { mountTable } from '../model/os/mounts.js';
import { isMainModule, scriptArgs } from './lib.js';

const $ = zx({ verbose: false, quiet: true });

export type LoopFsType = 'btrfs' | 'xfs';

/** A loopback filesystem as far as it was made (device null before losetup). */
export interface LoopFs {
  fsType: LoopFsType;
  image: string;
  mountPoint: string;
  device: string | null;
  mounted?: boolean;
}

export const HOST_DIR = '/var/tmp/pdb-env-host';
export const HOST_MOUNTS: Record<LoopFsType, string> = { btrfs: '/mnt/pdb-btrfs', xfs: '/mnt/pdb-xfs' };
export const FS_TOOLS: Record<LoopFsType, { bin: string; pkg: string }> = {
  btrfs: { bin: 'mkfs.btrfs', pkg: 'btrfs-progs' },
  xfs: { bin: 'mkfs.xfs', pkg: 'xfsprogs' },
};
/** XFS refuses filesystems under 300 MiB (xfsprogs >= 5.19); btrfs is happy with less. */
export const MIN_SIZE_MIB: Record<LoopFsType, number> = { btrfs: 256, xfs: 320 };

export function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

export async function hasCommand(cmd: string): Promise<boolean> {
  return (await $`sh -c ${`command -v ${cmd}`}`.nothrow()).exitCode === 0;
}

/** Why loopback filesystems of `fsType` cannot be made here, or null when they can. */
export async function loopFsUnavailableReason(fsType: LoopFsType): Promise<string | null> {
  if (process.platform !== 'linux') return `loopback ${fsType} needs Linux (this is ${process.platform})`;
  if (!isRoot()) return `loopback ${fsType} needs root (mount, losetup)`;
  for (const cmd of [FS_TOOLS[fsType].bin, 'losetup', 'mount', 'umount']) {
    if (!(await hasCommand(cmd)))
      return `${cmd} is not installed (apt-get install ${cmd === FS_TOOLS[fsType].bin ? FS_TOOLS[fsType].pkg : 'mount'})`;
  }
  const filesystems = readFileSync('/proc/filesystems', 'utf8');
  if (!filesystems.includes(`\t${fsType}\n`)) {
    // Not loaded yet is fine when modprobe can load it; mount will tell.
    const probe = await $`modprobe ${fsType}`.nothrow();
    if (probe.exitCode !== 0 && !readFileSync('/proc/filesystems', 'utf8').includes(`\t${fsType}\n`))
      return `the kernel has no ${fsType} support`;
  }
  return null;
}

/** Install btrfs-progs / xfsprogs when their mkfs is missing (Debian). */
export async function ensureTools(fsTypes: LoopFsType[] = ['btrfs', 'xfs']): Promise<string[]> {
  const missing: string[] = [];
  for (const t of fsTypes) if (!(await hasCommand(FS_TOOLS[t].bin))) missing.push(FS_TOOLS[t].pkg);
  if (missing.length === 0) return [];
  await $`apt-get update -qq`;
  await $({ env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })`apt-get install -y -qq ${missing}`;
  return missing;
}

function isMounted(mountPoint: string): boolean {
  return mountTable().some((m) => m.mountPoint === mountPoint);
}

export interface MountOptions {
  fsType: LoopFsType;
  image: string;
  mountPoint: string;
  sizeMiB?: number;
  mkfsArgs?: string[];
  mountOptions?: string | null;
}

/**
 * Create a sparse image, attach it to a loop device, make the filesystem and mount it. On any
 * failure everything made so far is released before the error is thrown.
 */
export async function mountLoopFs({
  fsType,
  image,
  mountPoint,
  sizeMiB,
  mkfsArgs = [],
  mountOptions = null,
}: MountOptions): Promise<LoopFs> {
  const size = Math.max(sizeMiB ?? MIN_SIZE_MIB[fsType], MIN_SIZE_MIB[fsType]);
  const made: LoopFs = { fsType, image, mountPoint, device: null, mounted: false };
  try {
    mkdirSync(join(image, '..'), { recursive: true });
    const fd = openSync(image, 'w');
    ftruncateSync(fd, size * 1024 * 1024);
    closeSync(fd);
    const device = (await $`losetup --find --show ${image}`).stdout.trim();
    made.device = device;
    if (fsType === 'btrfs') await $`mkfs.btrfs -q -f ${mkfsArgs} ${device}`;
    else if (fsType === 'xfs') await $`mkfs.xfs -q -f -m reflink=1 ${mkfsArgs} ${device}`;
    else throw new Error(`unknown filesystem ${String(fsType)}`);
    mkdirSync(mountPoint, { recursive: true });
    await $`mount -t ${fsType} ${mountOptions ? ['-o', mountOptions] : []} ${device} ${mountPoint}`;
    made.mounted = true;
    return made;
  } catch (err) {
    // Rollback: the original error is the one to report.
    await releaseLoopFs(made).catch(() => {});
    throw err;
  }
}

/** Unmount, detach and delete the image. Safe to call twice and on a half-made filesystem. */
export async function releaseLoopFs(made: LoopFs): Promise<void> {
  const errors: string[] = [];
  if (isMounted(made.mountPoint)) {
    const r = await $`umount ${made.mountPoint}`.nothrow();
    if (r.exitCode !== 0) {
      // A busy mount (a process still inside): detach lazily so the loop device is freed when it exits.
      const lazy = await $`umount -l ${made.mountPoint}`.nothrow();
      if (lazy.exitCode !== 0) errors.push(`umount ${made.mountPoint}: ${r.stderr.trim()}`);
    }
  }
  const devices = made.device ? [made.device] : [];
  if (existsSync(made.image)) {
    const attached = (await $`losetup -j ${made.image}`.nothrow()).stdout;
    for (const line of attached.split('\n')) {
      const dev = line.split(':')[0]?.trim();
      if (dev && !devices.includes(dev)) devices.push(dev);
    }
  }
  for (const dev of devices) {
    const st = await $`losetup ${dev}`.nothrow();
    if (st.exitCode === 0 && st.stdout.includes(made.image)) {
      const r = await $`losetup -d ${dev}`.nothrow();
      if (r.exitCode !== 0) errors.push(`losetup -d ${dev}: ${r.stderr.trim()}`);
    }
  }
  made.mounted = false;
  rmSync(made.image, { force: true });
  if (errors.length) throw new Error(errors.join('; '));
}

/** Free bytes of the filesystem holding `path`, after a sync (what `du` cannot show for clones). */
export async function freeBytesAfterSync(path: string): Promise<number> {
  await $`sync -f ${path}`.nothrow();
  const s = statfsSync(path, { bigint: true });
  return Number(s.bfree * s.bsize);
}

const FILESYSTEMS: LoopFsType[] = ['btrfs', 'xfs'];

function print(json: boolean, installed: string[] | null, filesystems: Array<{ fsType: string; mountPoint: string; state: string }>): void {
  if (json) console.log(JSON.stringify(installed ? { installed, filesystems } : { filesystems }, null, 2));
  else for (const f of filesystems) console.log(`${f.fsType}\t${f.mountPoint}\t${f.state}`);
}

async function up(json: boolean, sizeMiB: number): Promise<void> {
  if (!isRoot()) throw new Error('host-setup up needs root (mount, losetup)');
  const installed = await ensureTools();
  const out = [];
  for (const fsType of FILESYSTEMS) {
    const image = join(HOST_DIR, `${fsType}.img`);
    const mountPoint = HOST_MOUNTS[fsType];
    if (isMounted(mountPoint)) {
      out.push({ fsType, mountPoint, state: 'already-mounted' });
      continue;
    }
    await mountLoopFs({ fsType, image, mountPoint, sizeMiB });
    out.push({ fsType, mountPoint, state: 'mounted' });
  }
  print(json, installed, out);
}

async function down(json: boolean): Promise<void> {
  if (!isRoot()) throw new Error('host-setup down needs root (umount, losetup)');
  const out = [];
  for (const fsType of FILESYSTEMS) {
    const image = join(HOST_DIR, `${fsType}.img`);
    const mountPoint = HOST_MOUNTS[fsType];
    const was = isMounted(mountPoint) || existsSync(image);
    await releaseLoopFs({ fsType, image, mountPoint, device: null });
    out.push({ fsType, mountPoint, state: was ? 'released' : 'absent' });
  }
  print(json, null, out);
}

if (isMainModule(import.meta.url)) {
  const usage = 'usage: node dist/scripts/host-setup.js up|down [--json] [--size-mib N]';
  // 8 GiB: a block of the full plan holds the case session, a sibling of the same backend and the
  // full-copy oracle's result of a 20,000-file, 256 MiB fixture; 2 GiB ran out on btrfs. The
  // images are sparse: the size costs disk only as it is used.
  const { values, positionals } = scriptArgs(usage, { json: { type: 'boolean' }, 'size-mib': { type: 'string', default: '8192' } });
  const [cmd, ...extra] = positionals;
  try {
    if (extra.length > 0) throw new Error(`unexpected arguments: ${extra.join(' ')}`);
    if (cmd === 'up') await up(values.json === true, Number(values['size-mib']));
    else if (cmd === 'down') await down(values.json === true);
    else {
      console.error(usage);
      process.exitCode = 2;
    }
  } catch (err) {
    console.error(`host-setup ${cmd}: ${(err as Error).message}`);
    process.exitCode = 1;
  }
}
