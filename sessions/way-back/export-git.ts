// `export NAME --git`: the session's last checkpoint as a commit on a branch of its source
// repository, made with plumbing only. The commit's parent is the HEAD the source had at import
// time; its tree is that HEAD's tree (read into a TEMPORARY index) with the session's own changes,
// except paths git ignores (they are not tracked, so their changes are not exported). The branch
// moves by `update-ref NEW OLD`, a compare-and-set, and only forward. The user's work tree, index,
// HEAD and current branch are never touched.
import { lstatSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { PdbError } from '../../model/errors.js';
import { tempName } from '../../model/store/object-store.js';
import type { Digest } from '../../model/canonical-json.js';
import { diffEntries, sortEntries, type Change, type Entry, type Snapshot } from '../../model/snapshot.js';
import type { ProgressFn } from '../../model/progress.js';
import { blobCounter, git, gitCode, updateIndex, writeBlobs } from './git-plumbing.js';
import { lastCheckpointChanges } from './patch.js';
import { readSession, type StoreContext } from '../records/session-record.js';

export interface ExportGitResult {
  session: string;
  branch: string;
  commit: string;
  parent: string;
  /** Changed paths exported, and those left out because git ignores them. */
  exported: number;
  ignored: string[];
}

const ZERO = '0'.repeat(40);

/** Is every directory above `path` a real directory in the work tree (or absent)? git refuses a path beyond a symlink. */
function reachable(topLevel: string, path: string): boolean {
  const parts = path.split('/').slice(0, -1);
  for (let i = 1; i <= parts.length; i++) {
    const st = lstatSync(join(topLevel, ...parts.slice(0, i)), { throwIfNoEntry: false });
    if (!st) return true;
    if (!st.isDirectory()) return false;
  }
  return true;
}

/** The changed paths git ignores in the work tree (tracked paths, and paths below a link or file there, are not). */
async function ignoredPaths(gitDir: string, topLevel: string, all: string[]): Promise<Set<string>> {
  const paths = all.filter((p) => reachable(topLevel, p));
  if (paths.length === 0) return new Set();
  const r = await gitCode(['check-ignore', '-z', '--stdin'], { gitDir, cwd: topLevel, input: `${paths.join('\0')}\0` }, [0, 1]);
  return new Set(r.stdout.toString('utf8').split('\0').filter(Boolean));
}

/** An identity for commit-tree when the repository has none configured (a fresh CI box). */
async function identityEnv(gitDir: string): Promise<string[]> {
  const has = (await gitCode(['config', 'user.email'], { gitDir }, [0, 1])).code === 0;
  return has ? [] : ['-c', 'user.name=pdb-env', '-c', 'user.email=pdb-env@localhost'];
}

/** Move refs/heads/`branch` to `commit` only if it is new or `commit` descends from it (fast-forward). */
async function moveBranch(gitDir: string, branch: string, commit: string): Promise<void> {
  const ref = `refs/heads/${branch}`;
  const current = (await gitCode(['symbolic-ref', '-q', 'HEAD'], { gitDir }, [0, 1])).stdout.toString('utf8').trim();
  if (current === ref)
    throw new PdbError('E_BRANCH_EXISTS', `${branch} is the branch checked out in the source: export never moves it`, {
      hint: 'Export to another branch (--branch NAME), then merge it with git.',
    });
  const old = (await gitCode(['rev-parse', '-q', '--verify', `${ref}^{commit}`], { gitDir }, [0, 1])).stdout.toString('utf8').trim();
  if (old && (await gitCode(['merge-base', '--is-ancestor', old, commit], { gitDir }, [0, 1])).code !== 0)
    throw new PdbError('E_BRANCH_EXISTS', `branch ${branch} exists at ${old.slice(0, 12)} and would not fast-forward to the export`, {
      hint: `Export to another branch (--branch NAME), or delete it first (git branch -D ${branch}).`,
    });
  await git(['update-ref', '-m', 'pdb-env export', ref, commit, old || ZERO], { gitDir });
}

/**
 * Refuse, before any work, a branch name git would not take as one (`git check-ref-format
 * --branch`, which also expands `@{-1}`: a name must come back unchanged), HEAD and `@`, names
 * starting with "-" (an option to git), and full refs (refs/heads/x would become refs/heads/refs/heads/x).
 */
export async function checkBranchName(branch: string, gitDir: string): Promise<void> {
  const refuse = (why: string) =>
    new PdbError('E_USAGE', `"${branch}" is not a branch name export can use: ${why}`, {
      hint: 'Pass a plain branch name, such as pdb-env/NAME or feature/x (--branch NAME).',
    });
  if (branch === '' || branch === 'HEAD' || branch === '@') throw refuse(branch ? 'it names HEAD' : 'it is empty');
  if (branch.startsWith('-')) throw refuse('it starts with "-"');
  if (branch.startsWith('refs/')) throw refuse('it is a full ref; give the name below refs/heads/');
  const r = await gitCode(['check-ref-format', '--branch', branch], { gitDir }, [0, 1, 128]);
  if (r.code !== 0 || r.stdout.toString('utf8').trim() !== branch) throw refuse('git check-ref-format --branch refuses it');
}

/**
 * The session's own changes (its last checkpoint's Changeset) laid on the Snapshot its root was
 * made from, as changes from the Snapshot imported at HEAD. After `publish --rebase` the
 * Changeset runs from the head it merged onto, which holds other sessions' work: only its
 * changes are carried, as diff, export --patch and apply carry them (docs/way-back.md).
 */
export function changesFromImport(ctx: StoreContext, imported: Digest, rootBase: Digest, own: Change[]): Change[] {
  const entries = (d: Digest) => ctx.store.getDocument<Snapshot>(d, 'Snapshot').entries;
  const tree = new Map(entries(rootBase).map((e) => [e.path, e]));
  for (const c of own) {
    if (c.after) tree.set(c.path, c.after);
    else tree.delete(c.path);
  }
  return diffEntries(entries(imported), sortEntries([...tree.values()]));
}

const inRepo = (prefix: string, e: Entry | null): Entry | null => (e && prefix ? { ...e, path: `${prefix}/${e.path}` } : e);

/** Export the last checkpoint of `name` as a commit on `branch` (default pdb-env/NAME) of its source repository. */
export async function exportGit(
  ctx: StoreContext,
  name: string,
  options: { branch?: string; message?: string; onProgress?: ProgressFn } = {},
): Promise<ExportGitResult> {
  const rec = await readSession(ctx.store, name);
  const src = rec.sourceGit;
  if (!src)
    throw new PdbError('E_NOT_GIT_REPO', `session "${name}" was not imported from a git work tree (or before pdb-env recorded its HEAD)`, {
      hint: `Export a patch instead: pdb-env export ${name} --patch FILE`,
    });
  if (!src.head)
    throw new PdbError('E_NOT_GIT_REPO', `the source of "${name}" had no commit when it was imported`, {
      hint: `Export a patch instead: pdb-env export ${name} --patch FILE`,
    });
  const branch = options.branch ?? `pdb-env/${name}`;
  await checkBranchName(branch, src.gitDir);
  const of = await lastCheckpointChanges(ctx, name);
  // The commit's parent is the HEAD imported, so a root made from something else (a fork's
  // checkpoint, an environment head) brings what lies between; a rebase's head never does.
  if (src.base && of.result && src.base !== of.base) of.changes = changesFromImport(ctx, src.base, rec.base, of.changes);
  const changes: Change[] = of.changes
    .filter((c) => c.before?.kind !== 'dir' || c.after?.kind !== 'dir')
    .map((c) => ({
      ...c,
      path: src.prefix ? `${src.prefix}/${c.path}` : c.path,
      before: inRepo(src.prefix, c.before),
      after: inRepo(src.prefix, c.after),
    }));
  const ignored = await ignoredPaths(
    src.gitDir,
    src.topLevel,
    changes.map((c) => c.path),
  );
  const carried = changes.filter((c) => !ignored.has(c.path));
  const t = { gitDir: src.gitDir, indexFile: tempName(ctx.store.paths, 'export-index') };
  try {
    await git(['read-tree', src.head], t);
    await updateIndex(
      t,
      carried,
      await writeBlobs(
        ctx.store,
        t,
        carried.flatMap((c) => (c.after ? [c.after] : [])),
        undefined,
        blobCounter(
          carried.map((c) => c.after),
          options.onProgress,
        ),
      ),
    );
    const tree = (await git(['write-tree'], t)).toString('utf8').trim();
    const message = options.message ?? `pdb-env: session ${name} (checkpoint ${of.result?.slice(7, 19) ?? '?'})`;
    const commit = (
      await git([...(await identityEnv(src.gitDir)), 'commit-tree', tree, '-p', src.head, '-m', message], { gitDir: src.gitDir })
    )
      .toString('utf8')
      .trim();
    await moveBranch(src.gitDir, branch, commit);
    return { session: name, branch, commit, parent: src.head, exported: carried.length, ignored: [...ignored].sort() };
  } finally {
    await rm(t.indexFile, { force: true }); // our temporary index only
  }
}
