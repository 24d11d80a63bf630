// A bench run's own store and work directory: made fresh for every attempt (a previous attempt's
// are removed first) and removed at the end unless the plan keeps them.
import { existsSync, lstatSync, mkdtempSync, readdirSync, realpathSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { execa } from 'execa';
import { PdbError } from '../model/errors.js';
import { SessionService } from '../sessions/service.js';

const BTRFS_MAGIC = 0x9123683e;

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return []; // absent: nothing to delete there
  }
}

function statSafe(p: string): ReturnType<typeof lstatSync> | null {
  try {
    return lstatSync(p);
  } catch {
    return null; // gone meanwhile
  }
}

/** Read-only btrfs subvolumes (materialized bases) that `rm -r` cannot remove: their inode is 256. */
async function deleteSubvolumes(storeDir: string): Promise<void> {
  const candidates: string[] = [];
  for (const digestDir of readdirSafe(join(storeDir, 'bases')))
    for (const f of readdirSafe(join(storeDir, 'bases', digestDir))) candidates.push(join(storeDir, 'bases', digestDir, f));
  for (const t of readdirSafe(join(storeDir, 'tmp'))) candidates.push(join(storeDir, 'tmp', t));
  for (const dir of candidates) {
    const st = statSafe(dir);
    if (!st?.isDirectory() || st.ino !== 256) continue;
    if (Number(statfsSync(dir).type) !== BTRFS_MAGIC) continue;
    const r = await execa('btrfs', ['subvolume', 'delete', dir], { reject: false });
    if (r.exitCode !== 0)
      throw new PdbError('E_IO', `could not delete the btrfs subvolume of a materialized base: ${String(r.stderr).trim()}`);
  }
}

/** Remove a run's store: release every session (unmount, delete subvolumes), the bases, then the tree. */
export async function removeRunStore(storeDir: string): Promise<void> {
  if (!existsSync(storeDir)) return;
  if (existsSync(join(storeDir, 'store.json'))) {
    const svc = await SessionService.open(storeDir);
    for (const s of await svc.list()) await svc.discard(s.name, { force: true });
    await deleteSubvolumes(storeDir);
  }
  rmSync(storeDir, { recursive: true, force: true });
}

/**
 * A fresh store under `parent` and a work directory under the system temp dir for one attempt of
 * run `runId`, after removing what the previous attempt left (`previous`, from the run journal).
 */
export async function makeRunDirs(
  runId: string,
  parent: string,
  previous: { storeDir: string | null; workDir: string | null },
): Promise<{ storeDir: string; workDir: string }> {
  if (previous.storeDir) await removeRunStore(previous.storeDir);
  if (previous.workDir) rmSync(previous.workDir, { recursive: true, force: true });
  const where = resolve(parent);
  if (!existsSync(where))
    throw new PdbError('E_USAGE', `the store location ${where} does not exist`, {
      hint: 'Pass an existing directory to --store (e.g. a btrfs or XFS mount).',
    });
  const storeDir = realpathSync(mkdtempSync(join(where, `pdb-bench-${runId}-`)));
  const workDir = realpathSync(mkdtempSync(join(tmpdir(), `pdb-bench-work-${runId}-`)));
  return { storeDir, workDir };
}
