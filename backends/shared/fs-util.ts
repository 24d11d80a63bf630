// Small filesystem helpers the backends share: the filesystem type at a path
// (statfs magic numbers, or what is mounted there). The mount table and the tool runner are the
// model's (model/os/mounts.ts, model/os/run-tool.ts).
import { statfs } from 'node:fs/promises';
import { mountAt } from '../../model/os/mounts.js';

/** The filesystem type mounted exactly at `path`, or null when nothing is mounted there. */
export function mountedFsType(path: string): string | null {
  return mountAt(path)?.fsType ?? null;
}

/** statfs(2) f_type of the filesystems pdb-env tells apart; the one table of these numbers. */
export const FS_MAGIC = {
  btrfs: 0x9123683e,
  xfs: 0x58465342,
  overlay: 0x794c7630,
  ext4: 0xef53,
  tmpfs: 0x01021994,
  apfs: 26,
  bcachefs: 0xca451a4e,
} as const;

/** statfs type number of the filesystem holding `path`. */
export async function fsTypeOf(path: string): Promise<number> {
  return Number((await statfs(path)).type);
}

export function fsTypeName(type: number): string {
  for (const [name, magic] of Object.entries(FS_MAGIC)) if (magic === type) return name;
  return `0x${type.toString(16)}`;
}
