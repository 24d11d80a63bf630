// apply: write a session's last checkpoint back into a directory (by default the source it came
// from), with a per-path compare-and-set. Every path the Changeset touches must still be as the
// base had it (kind, bytes, exec bit; absent where the base had nothing), or nothing is written
// (E_APPLY_CONFLICT). New bytes are staged in DIR/.pdb/apply-<id> (an admin root no scan reads,
// on DIR's filesystem, so each rename is atomic), a plan naming every step is written there, and
// only then does anything in DIR change: removals a retype needs, new directories, the renames,
// then deletes. The intent comes first; gc finishes a plan a crash interrupted (each step is
// idempotent) or, with no plan yet, just removes the staging.
import { createHash } from 'node:crypto';
import {
  copyFile,
  chmod,
  lstat,
  mkdir,
  readFile,
  readdir,
  readlink,
  rename,
  rm,
  rmdir,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { crashPoint } from '../../model/crash-point.js';
import { PdbError, osErrorCode, toPdbError } from '../../model/errors.js';
import { progressCounter, type ProgressFn } from '../../model/progress.js';
import { entryKey, type Change, type Entry } from '../../model/snapshot.js';
import type { Intent } from '../journal.js';
import { lastCheckpointChanges } from './patch.js';
import { readSession, type StoreContext } from '../records.js';

export interface ApplyResult {
  session: string;
  dir: string;
  changes: number;
  written: number;
  deleted: number;
}

interface Plan {
  /** Before-entries a retype replaces (and what was below them), deepest first. */
  removeFirst: Array<{ path: string; dir: boolean }>;
  mkdirs: string[];
  renames: Array<{ staged: string; target: string }>;
  deletes: Array<{ path: string; dir: boolean }>;
}

const STAGING_ROOT = '.pdb';

async function lstatOr(p: string) {
  try {
    return await lstat(p);
  } catch (err) {
    if (['ENOENT', 'ENOTDIR'].includes(osErrorCode(err) ?? '')) return null;
    throw toPdbError(err, 'E_IO', { action: 'checking the target', path: p });
  }
}

/** What `dir/path` is now, as a contract entry (null: absent). */
async function entryAt(dir: string, path: string): Promise<Entry | null> {
  const p = join(dir, path);
  const st = await lstatOr(p);
  if (!st) return null;
  if (st.isDirectory()) return { path, kind: 'dir' };
  if (st.isSymbolicLink()) return { path, kind: 'symlink', target: await readlink(p) };
  if (!st.isFile()) return { path, kind: 'symlink', target: '\0not a file' }; // a fifo or device never matches
  const digest = `sha256:${createHash('sha256')
    .update(await readFile(p))
    .digest('hex')}` as const;
  return { path, kind: 'file', digest, size: st.size, exec: (st.mode & 0o100) !== 0 };
}

const fileBytes = (e: Entry | null) => (e?.kind === 'file' ? e.size : 0);

/** The paths whose state in `dir` is not the base's, plus anything a deleted directory holds that the Changeset does not name. */
async function conflicts(dir: string, changes: Change[], onProgress?: ProgressFn): Promise<string[]> {
  const touched = new Set(changes.map((c) => c.path));
  const out: string[] = [];
  const count = progressCounter(
    'hash',
    changes.length,
    changes.reduce((n, c) => n + fileBytes(c.before), 0),
    onProgress,
  );
  for (const c of changes) {
    const now = await entryAt(dir, c.path);
    count(1, fileBytes(c.before));
    if ((now ? entryKey(now) : 'absent') !== (c.before ? entryKey(c.before) : 'absent')) out.push(c.path);
    else if (c.before?.kind === 'dir' && c.after?.kind !== 'dir')
      for (const name of await readdir(join(dir, c.path))) if (!touched.has(`${c.path}/${name}`)) out.push(`${c.path}/${name}`);
  }
  return out;
}

const depth = (p: string) => p.split('/').length;

function makePlan(changes: Change[], staged: Map<string, string>): Plan {
  const retyped = changes.filter((c) => c.kind === 'retype').map((c) => c.path);
  const underRetype = (p: string) => retyped.some((r) => p === r || p.startsWith(`${r}/`));
  const removals = changes.filter((c) => c.before && (c.kind === 'retype' || !c.after));
  const byDepth = (xs: Change[]) =>
    xs.map((c) => ({ path: c.path, dir: c.before!.kind === 'dir' })).sort((a, b) => depth(b.path) - depth(a.path));
  return {
    removeFirst: byDepth(removals.filter((c) => underRetype(c.path))),
    mkdirs: changes
      .filter((c) => c.after?.kind === 'dir')
      .map((c) => c.path)
      .sort((a, b) => depth(a) - depth(b)),
    renames: [...staged].map(([target, file]) => ({ staged: file, target })),
    deletes: byDepth(removals.filter((c) => !underRetype(c.path))),
  };
}

/**
 * Remove what the base had at `r.path`, unless it is already gone or already replaced (a finish
 * after a crash runs every step again): a kind other than the one removed, or a path whose staged
 * file has been renamed into place, is the new state and stays.
 */
async function removeOne(dir: string, r: { path: string; dir: boolean }, replaced: (path: string) => Promise<boolean>): Promise<void> {
  const p = join(dir, r.path);
  const st = await lstatOr(p);
  if (!st || st.isDirectory() !== r.dir || (!r.dir && (await replaced(r.path)))) return;
  try {
    await (r.dir ? rmdir(p) : unlink(p));
  } catch (err) {
    throw toPdbError(err, 'E_IO', { action: 'removing a path the changeset deletes', path: p });
  }
}

/** Carry out `plan` in `dir`; every step may already have been done (a finish after a crash). */
async function runPlan(dir: string, plan: Plan): Promise<void> {
  const staged = new Map(plan.renames.map((r) => [r.target, r.staged]));
  const replaced = async (path: string) => staged.has(path) && !(await lstatOr(staged.get(path)!));
  for (const r of plan.removeFirst) await removeOne(dir, r, replaced);
  for (const d of plan.mkdirs) {
    await mkdir(join(dir, d)).catch((err: unknown) => {
      if (osErrorCode(err) !== 'EEXIST') throw toPdbError(err, 'E_IO', { action: 'making a directory', path: join(dir, d) });
    });
  }
  let first = true;
  for (const r of plan.renames) {
    if (!(await lstatOr(r.staged))) continue; // renamed before a crash
    await rename(r.staged, join(dir, r.target)).catch((err: unknown) => {
      throw toPdbError(err, 'E_IO', { action: 'moving a staged file into place', path: join(dir, r.target) });
    });
    if (first) crashPoint('apply:after-first-rename');
    first = false;
  }
  crashPoint('apply:after-renames');
  for (const r of plan.deletes) await removeOne(dir, r, replaced);
}

/** Stage the bytes of every file and symlink the changeset writes; staged file by target path. */
async function stage(ctx: StoreContext, staging: string, changes: Change[], onProgress?: ProgressFn): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  await mkdir(join(staging, 'files'), { recursive: true });
  const written = changes.filter((c) => c.after && c.after.kind !== 'dir');
  const count = progressCounter(
    'copy',
    written.length,
    written.reduce((n, c) => n + fileBytes(c.after), 0),
    onProgress,
  );
  for (const [i, c] of changes.entries()) {
    const e = c.after;
    if (!e || e.kind === 'dir') continue;
    const file = join(staging, 'files', String(i));
    if (e.kind === 'symlink') await symlink(e.target, file);
    else {
      await copyFile(ctx.store.objectPath(e.digest), file);
      await chmod(file, e.exec ? 0o755 : 0o644);
    }
    out.set(c.path, file);
    count(1, fileBytes(e));
  }
  return out;
}

/** Remove the staging directory, and DIR/.pdb when it held nothing else. */
async function cleanStaging(dir: string, staging: string): Promise<void> {
  await rm(staging, { recursive: true, force: true });
  await rmdir(join(dir, STAGING_ROOT)).catch(() => undefined); // not empty (a store, another apply) or gone: left as it is
}

/** `apply NAME [--to DIR]`: the last checkpoint's changes into DIR (default: the session's source). */
export async function applySession(
  ctx: StoreContext,
  name: string,
  options: { to?: string; onProgress?: ProgressFn } = {},
): Promise<ApplyResult> {
  const rec = await readSession(ctx.store, name);
  const target = options.to ?? rec.sourceDir;
  if (!target)
    throw new PdbError('E_USAGE', `session "${name}" has no source directory to apply to`, { hint: `pdb-env apply ${name} --to DIR` });
  const dir = resolve(target);
  if (!(await lstatOr(dir))?.isDirectory())
    throw new PdbError('E_SOURCE_MISSING', `${dir} is not a directory`, { path: dir, hint: `pdb-env apply ${name} --to DIR` });
  const of = await lastCheckpointChanges(ctx, name);
  const bad = await conflicts(dir, of.changes, options.onProgress);
  if (bad.length > 0)
    throw new PdbError(
      'E_APPLY_CONFLICT',
      `${bad.length} path(s) in ${dir} are no longer as the session's base had them: ${bad.join(', ')}`,
      {
        path: dir,
        hint: `Nothing was written. Keep your edits and take the session's as a patch instead (pdb-env export ${name} --patch FILE), or undo them and apply again.`,
      },
    );
  const intent = await ctx.journal.begin('apply', { session: name, detail: { dir } });
  const staging = join(dir, STAGING_ROOT, `apply-${intent.id}`);
  crashPoint('apply:after-intent');
  let plan: Plan;
  try {
    plan = makePlan(of.changes, await stage(ctx, staging, of.changes, options.onProgress));
    // The plan is the point of no return: with it, gc finishes; without it, gc removes the staging.
    await writeFile(join(staging, 'plan.json'), JSON.stringify(plan), { flag: 'wx' });
  } catch (err) {
    // Nothing in DIR changed yet: undo the staging and drop the intent (best effort; gc would too).
    await cleanStaging(dir, staging).catch(() => undefined);
    await ctx.journal.end(intent).catch(() => undefined);
    throw toPdbError(err, 'E_IO', { action: `staging session ${name}'s changes in ${dir}`, path: staging });
  }
  crashPoint('apply:after-plan');
  // A failure from here on keeps the intent: gc finishes the plan once this process is gone.
  await runPlan(dir, plan);
  await cleanStaging(dir, staging);
  await ctx.journal.end(intent);
  const deleted = plan.deletes.length + plan.removeFirst.length;
  return { session: name, dir, changes: of.changes.length, written: plan.renames.length + plan.mkdirs.length, deleted };
}

/** gc: finish an apply whose process is gone (it wrote its plan) or remove its staging (it did not). */
export async function recoverApply(intent: Intent, dryRun: boolean): Promise<string> {
  const dir = intent.detail.dir;
  if (!dir) return `nothing to finish for apply ${intent.id}`;
  const staging = join(dir, STAGING_ROOT, `apply-${intent.id}`);
  const text = await readFile(join(staging, 'plan.json'), 'utf8').catch(() => null);
  let plan: Plan | null = null;
  try {
    plan = text === null ? null : (JSON.parse(text) as Plan);
  } catch {
    plan = null; // cut short by the crash: the plan was never complete, so nothing was renamed
  }
  if (!dryRun) {
    if (plan) await runPlan(dir, plan);
    await cleanStaging(dir, staging);
  }
  return plan ? `finish apply of ${intent.session ?? '?'} into ${dir}` : `remove the staging of an apply into ${dir}`;
}
