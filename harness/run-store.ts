// A bench run's own store and work directory: made fresh for every attempt (a previous attempt's
// are removed first) and removed at the end unless the plan keeps them.
import { existsSync, mkdtempSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { deleteSubvolume, isSubvolume } from '../backends/shared/base-tree.js';
import { FS_MAGIC, fsTypeOf } from '../backends/shared/fs-util.js';
import { PdbError } from '../model/errors.js';
import { SessionService } from '../sessions/service.js';

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return []; // absent: nothing to delete there
  }
}

/** Read-only btrfs subvolumes (materialized bases) that `rm -r` cannot remove: their inode is 256. */
async function deleteSubvolumes(storeDir: string): Promise<void> {
  const candidates: string[] = [];
  for (const digestDir of readdirSafe(join(storeDir, 'bases')))
    for (const f of readdirSafe(join(storeDir, 'bases', digestDir))) candidates.push(join(storeDir, 'bases', digestDir, f));
  for (const t of readdirSafe(join(storeDir, 'tmp'))) candidates.push(join(storeDir, 'tmp', t));
  for (const dir of candidates) {
    if (!(await isSubvolume(dir)) || (await fsTypeOf(dir)) !== FS_MAGIC.btrfs) continue;
    await deleteSubvolume(dir);
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
