// Patches in git's format, made by git: the changed paths' before and after entries are written as
// two trees into a private object database and `git diff-tree` compares them. Unchanged paths are
// the same on both sides, so trees of the changed paths alone give the same patch as whole trees.
// No renames are detected: every path stays exactly the path it is in the Changeset.
import { lstat, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import type { Digest } from '../../model/canonical-json.js';
import { PdbError, toPdbError } from '../../model/errors.js';
import { mountContaining } from '../../model/os/mounts.js';
import { randomHex } from '../../model/os/hash.js';
import type { Change, Changeset, Entry } from '../../model/snapshot.js';
import type { ProgressFn } from '../../model/progress.js';
import { blobCounter, git, treeOf, withTempRepo } from './git-plumbing.js';
import { openOperation } from '../locks/operation.js';
import type { Intent } from '../records/journal.js';
import { readSession, type StoreContext } from '../records/session-record.js';

export type PatchFormat = 'patch' | 'stat';

/** What a patch or an apply carries: the changes from `base` to `result`. */
export interface ChangesOf {
  session: string;
  base: Digest;
  result: Digest | null;
  changes: Change[];
  /** The Changeset they come from (none for a live diff). */
  changeset?: Digest;
  /** A live session root to read bytes the store does not have (diff installs nothing). */
  root?: string;
}

/** The session's last checkpoint as a Changeset (export and apply carry it); E_USAGE before the first. */
export async function lastCheckpointChanges(ctx: StoreContext, name: string): Promise<ChangesOf> {
  const rec = await readSession(ctx.store, name);
  if (!rec.lastCheckpoint)
    throw new PdbError('E_USAGE', `session "${name}" has no checkpoint: export and apply carry the last checkpoint`, {
      hint: `Run pdb-env checkpoint ${name} first.`,
    });
  const cs = ctx.store.getDocument<Changeset>(rec.lastCheckpoint.changeset, 'Changeset');
  // The checkpoint carried out must be whole in the store: its Snapshot (its chunks and their
  // record, hashed as they are read) damaged is E_OBJECT_CORRUPT or E_OBJECT_MISSING before
  // anything is written, though the patch itself comes from the Changeset.
  ctx.store.getBytes(cs.result);
  return { session: name, base: cs.base, result: cs.result, changes: cs.changes, changeset: rec.lastCheckpoint.changeset };
}

/** git's patch (or --stat) from the before to the after side of `changes`; `onProgress` hears of the blobs written. */
export async function makePatch(ctx: StoreContext, of: ChangesOf, format: PatchFormat, onProgress?: ProgressFn): Promise<Buffer> {
  const before = of.changes.flatMap((c) => (c.before ? [c.before] : [])) as Entry[];
  const after = of.changes.flatMap((c) => (c.after ? [c.after] : [])) as Entry[];
  const count = blobCounter([...before, ...after], onProgress);
  return withTempRepo(ctx.store, async (t) => {
    const a = await treeOf(ctx.store, t, before, undefined, count);
    const b = await treeOf(ctx.store, t, after, of.root, count);
    const shape = format === 'stat' ? ['--stat'] : ['-p', '--binary', '--full-index', '--src-prefix=a/', '--dst-prefix=b/'];
    return git(['diff-tree', '-r', '--no-renames', '--no-color', ...shape, a, b], { gitDir: t.gitDir });
  });
}

/** The temporary name a patch is written under, beside its file: `.<file>.pdb-<8 hex>`. */
const BESIDE = /^\..+\.pdb-[0-9a-f]{8}$/;

/**
 * Write `bytes` to `file` atomically: a temporary name beside it, then a rename. The temporary
 * name is in an intent in the store's journal first, so after a crash gc removes it (recoverExport).
 */
export async function writeBeside(ctx: StoreContext, file: string, bytes: Buffer): Promise<void> {
  const tmp = join(dirname(file), `.${basename(file)}.pdb-${randomHex(4)}`);
  const op = await openOperation(ctx, { intent: { op: 'export', detail: { temp: tmp } } });
  try {
    await writeFile(tmp, bytes, { flag: 'wx' });
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined); // rollback of our own temporary file
    throw toPdbError(err, 'E_IO', { action: 'writing the patch', path: file, filesystem: mountContaining(dirname(file))?.mountPoint });
  } finally {
    await op.finish();
  }
}

/** gc: remove the temporary patch file an export killed mid-write left beside its file (only a regular file with that name, never followed). */
export async function recoverExport(intent: Intent, dryRun: boolean): Promise<string> {
  const tmp = intent.detail.temp;
  if (typeof tmp !== 'string' || !isAbsolute(tmp) || !BESIDE.test(basename(tmp))) return `nothing to remove for export ${intent.id}`;
  const st = await lstat(tmp).catch(() => null);
  if (!st?.isFile()) return `nothing to remove for export ${intent.id}`;
  if (!dryRun) await unlink(tmp).catch(() => undefined); // gone meanwhile: the goal
  return `remove the partial patch ${tmp} of a killed export`;
}

export interface ExportPatchResult {
  session: string;
  file: string;
  base: Digest;
  result: Digest | null;
  changes: number;
  bytes: number;
}

/** `export NAME --patch FILE`: the last checkpoint's changes as a git binary patch, written atomically. */
export async function exportPatch(ctx: StoreContext, name: string, file: string, onProgress?: ProgressFn): Promise<ExportPatchResult> {
  const of = await lastCheckpointChanges(ctx, name);
  const bytes = await makePatch(ctx, of, 'patch', onProgress);
  const target = resolve(file);
  await writeBeside(ctx, target, bytes);
  return { session: name, file: target, base: of.base, result: of.result, changes: of.changes.length, bytes: bytes.length };
}
