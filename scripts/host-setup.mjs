#!/usr/bin/env node
// Host setup for the copy-on-write backends: loopback btrfs and XFS (reflink=1) filesystems.
//
//   node scripts/host-setup.mjs up [--json] [--size-mib N]   create, mount, print mount points
//   node scripts/host-setup.mjs down [--json]                unmount and detach
//
// Root only. The same functions are exported so tests can make a small per-test filesystem in a
// temp dir and always release it (see mountLoopFs / releaseLoopFs).
import { existsSync, mkdirSync, rmSync, statfsSync, openSync, ftruncateSync, closeSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { $ } from 'zx';

$.verbose = false;
$.quiet = true;

export const HOST_DIR = '/var/tmp/pdb-env-host';
export const HOST_MOUNTS = { btrfs: '/mnt/pdb-btrfs', xfs: '/mnt/pdb-xfs' };
export const FS_TOOLS = { btrfs: { bin: 'mkfs.btrfs', pkg: 'btrfs-progs' }, xfs: { bin: 'mkfs.xfs', pkg: 'xfsprogs' } };
/** XFS refuses filesystems under 300 MiB (xfsprogs >= 5.19); btrfs is happy with less. */
export const MIN_SIZE_MIB = { btrfs: 256, xfs: 320 };

export function isRoot() {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

export async function hasCommand(cmd) {
  return (await $`sh -c ${`command -v ${cmd}`}`.nothrow()).exitCode === 0;
}

/** Why loopback filesystems of `fsType` cannot be made here, or null when they can. */
export async function loopFsUnavailableReason(fsType) {
  if (process.platform !== 'linux') return `loopback ${fsType} needs Linux (this is ${process.platform})`;
  if (!isRoot()) return `loopback ${fsType} needs root (mount, losetup)`;
  for (const cmd of [FS_TOOLS[fsType].bin, 'losetup', 'mount', 'umount']) {
    if (!(await hasCommand(cmd)))
      return `${cmd} is not installed (apt-get install ${fsType === 'btrfs' || fsType === 'xfs' ? FS_TOOLS[fsType].pkg : 'mount'})`;
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
export async function ensureTools(fsTypes = ['btrfs', 'xfs']) {
  const missing = [];
  for (const t of fsTypes) if (!(await hasCommand(FS_TOOLS[t].bin))) missing.push(FS_TOOLS[t].pkg);
  if (missing.length === 0) return [];
  await $`apt-get update -qq`;
  await $({ env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })`apt-get install -y -qq ${missing}`;
  return missing;
}

function isMounted(mountPoint) {
  const lines = readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
  return lines.some((l) => l.split(' ')[4]?.replace(/\\040/g, ' ') === mountPoint);
}

/**
 * Create a sparse image, attach it to a loop device, make the filesystem and mount it. On any
 * failure everything made so far is released before the error is thrown.
 */
export async function mountLoopFs({ fsType, image, mountPoint, sizeMiB, mkfsArgs = [], mountOptions = null }) {
  const size = Math.max(sizeMiB ?? MIN_SIZE_MIB[fsType], MIN_SIZE_MIB[fsType]);
  const made = { fsType, image, mountPoint, device: null, mounted: false };
  try {
    mkdirSync(join(image, '..'), { recursive: true });
    const fd = openSync(image, 'w');
    ftruncateSync(fd, size * 1024 * 1024);
    closeSync(fd);
    made.device = (await $`losetup --find --show ${image}`).stdout.trim();
    if (fsType === 'btrfs') await $`mkfs.btrfs -q -f ${mkfsArgs} ${made.device}`;
    else if (fsType === 'xfs') await $`mkfs.xfs -q -f -m reflink=1 ${mkfsArgs} ${made.device}`;
    else throw new Error(`unknown filesystem ${fsType}`);
    mkdirSync(mountPoint, { recursive: true });
    await $`mount -t ${fsType} ${mountOptions ? ['-o', mountOptions] : []} ${made.device} ${mountPoint}`;
    made.mounted = true;
    return made;
  } catch (err) {
    await releaseLoopFs(made).catch(() => {});
    throw err;
  }
}

/** Unmount, detach and delete the image. Safe to call twice and on a half-made filesystem. */
export async function releaseLoopFs(made) {
  const errors = [];
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
export async function freeBytesAfterSync(path) {
  await $`sync -f ${path}`.nothrow();
  const s = statfsSync(path, { bigint: true });
  return Number(s.bfree * s.bsize);
}

async function up(json, sizeMiB) {
  if (!isRoot()) throw new Error('host-setup up needs root (mount, losetup)');
  const installed = await ensureTools();
  const out = [];
  for (const fsType of ['btrfs', 'xfs']) {
    const image = join(HOST_DIR, `${fsType}.img`);
    const mountPoint = HOST_MOUNTS[fsType];
    if (isMounted(mountPoint)) {
      out.push({ fsType, mountPoint, state: 'already-mounted' });
      continue;
    }
    await mountLoopFs({ fsType, image, mountPoint, sizeMiB });
    out.push({ fsType, mountPoint, state: 'mounted' });
  }
  if (json) console.log(JSON.stringify({ installed, filesystems: out }, null, 2));
  else for (const f of out) console.log(`${f.fsType}\t${f.mountPoint}\t${f.state}`);
}

async function down(json) {
  if (!isRoot()) throw new Error('host-setup down needs root (umount, losetup)');
  const out = [];
  for (const fsType of ['btrfs', 'xfs']) {
    const image = join(HOST_DIR, `${fsType}.img`);
    const mountPoint = HOST_MOUNTS[fsType];
    const was = isMounted(mountPoint) || existsSync(image);
    await releaseLoopFs({ fsType, image, mountPoint, device: null });
    out.push({ fsType, mountPoint, state: was ? 'released' : 'absent' });
  }
  if (json) console.log(JSON.stringify({ filesystems: out }, null, 2));
  else for (const f of out) console.log(`${f.fsType}\t${f.mountPoint}\t${f.state}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [cmd, ...rest] = process.argv.slice(2);
  const json = rest.includes('--json');
  const sizeIdx = rest.indexOf('--size-mib');
  const sizeMiB = sizeIdx >= 0 ? Number(rest[sizeIdx + 1]) : 2048;
  try {
    if (cmd === 'up') await up(json, sizeMiB);
    else if (cmd === 'down') await down(json);
    else {
      console.error('usage: node scripts/host-setup.mjs up|down [--json] [--size-mib N]');
      process.exitCode = 2;
    }
  } catch (err) {
    console.error(`host-setup ${cmd}: ${err.message}`);
    process.exitCode = 1;
  }
}
