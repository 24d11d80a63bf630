// git's own plumbing, for the way back: patches are made by `git diff-tree` between trees written
// into an object database, and branches by `commit-tree` and `update-ref`, so the formats (binary
// patches, quoted non-ASCII names, modes, symlinks) are git's and not a re-implementation. Only
// plumbing runs, always with a temporary index (GIT_INDEX_FILE): a user's work tree, index and
// HEAD are never touched. git runs through the model's tool runner (model/os/run-tool.ts). File
// bytes are copied out of the store hashed (copy-out.ts) and git reads those copies, so what a
// patch or a commit carries is what the Snapshot names. Scratch directories in the store's tmp
// have structured temp names (owner pid and start), so gc removes them once a killed export is gone.
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PdbError, osErrorCode } from '../../model/errors.js';
import { runTool } from '../../model/os/run-tool.js';
import { tempName, type ObjectStore } from '../../model/store/object-store.js';
import { progressCounter, type ProgressFn } from '../../model/progress.js';
import type { Change, Entry } from '../../model/snapshot.js';
import { copyObjectsOut, type ObjectCopy } from './copy-out.js';

export interface GitTarget {
  /** The repository's git directory (a temp bare repo, or a user's .git). */
  gitDir: string;
  /** A temporary index file; never the repository's own. */
  indexFile: string;
}

export interface GitOptions {
  gitDir?: string;
  indexFile?: string;
  input?: string | Buffer;
  cwd?: string;
}

/** Run git with `args`; its stdout. E_TOOL_MISSING without git, E_IO naming the command when it fails. */
export async function git(args: string[], options: GitOptions = {}): Promise<Buffer> {
  return (await gitCode(args, options, [0])).stdout;
}

/** Run git; its exit code (one of `ok`, else E_IO with git's message) and stdout. */
export async function gitCode(args: string[], options: GitOptions, ok: number[]): Promise<{ code: number; stdout: Buffer }> {
  // GIT_DIR and GIT_INDEX_FILE only when given: otherwise git sees this process's own.
  const env: Record<string, string> = { GIT_CONFIG_NOSYSTEM: '1' };
  if (options.gitDir) env.GIT_DIR = options.gitDir;
  if (options.indexFile) env.GIT_INDEX_FILE = options.indexFile;
  const r = await runTool('git', args, {
    cwd: options.cwd,
    env,
    input: options.input,
    encoding: 'buffer',
  });
  if (r.error) {
    if (osErrorCode(r.error) === 'ENOENT')
      throw new PdbError('E_TOOL_MISSING', 'git is not installed (or not on PATH): patches and branches are made with git', {
        hint: 'Install git (apt-get install git, brew install git), then run the command again.',
      });
    throw new PdbError('E_IO', `git ${args[0]} could not start: ${r.error.message}`, { cause: r.error });
  }
  if (r.exitCode !== null && ok.includes(r.exitCode)) return { code: r.exitCode, stdout: r.stdout };
  throw new PdbError('E_IO', `git ${args.join(' ')} failed (exit ${r.exitCode}): ${r.stderr.trim()}`, {
    hint: "The message above is git's.",
  });
}

/** A private bare repository in the store's tmp dir, removed after `fn`. */
export async function withTempRepo<T>(store: ObjectStore, fn: (t: GitTarget) => Promise<T>): Promise<T> {
  const dir = tempName(store.paths, 'git');
  try {
    await mkdir(dir);
    await git(['init', '-q', '--bare', dir]);
    return await fn({ gitDir: dir, indexFile: join(dir, 'pdb-index') });
  } finally {
    // Rollback of a scratch directory: its failure leaves tmp garbage that gc removes.
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

export const gitMode = (e: Entry): string => (e.kind === 'symlink' ? '120000' : e.kind === 'file' && e.exec ? '100755' : '100644');

/** Counts files and bytes done (model/progress.ts progressCounter); writeBlobs then hashes in batches. */
export type BlobCounter = (files: number, bytes: number) => void;

/** A counter of the blobs `entries` make (directories make none) reporting to `onProgress`; undefined without one. */
export function blobCounter(entries: ReadonlyArray<Entry | null>, onProgress: ProgressFn | undefined): BlobCounter | undefined {
  if (!onProgress) return undefined;
  const blobs = entries.filter((e): e is Entry => e !== null && e.kind !== 'dir');
  const bytes = blobs.reduce((n, e) => n + (e.kind === 'file' ? e.size : 0), 0);
  return progressCounter('hash', blobs.length, bytes, onProgress);
}

/** Files per `git hash-object` when progress is counted, and their bytes: each batch is one report. */
const BLOB_BATCH_FILES = 256;
const BLOB_BATCH_BYTES = 32 * 1024 * 1024;

/** Consecutive [start, end) slices of `entries`; one slice of all without a counter (a single git process). */
function blobBatches(entries: Entry[], counted: boolean): Array<[number, number]> {
  if (!counted) return [[0, entries.length]];
  const out: Array<[number, number]> = [];
  let start = 0;
  let bytes = 0;
  entries.forEach((e, i) => {
    bytes += e.kind === 'file' ? e.size : 0;
    if (i + 1 - start >= BLOB_BATCH_FILES || bytes >= BLOB_BATCH_BYTES || i === entries.length - 1) {
      out.push([start, i + 1]);
      start = i + 1;
      bytes = 0;
    }
  });
  return out;
}

/**
 * Write the bytes of `entries` (files and symlinks) as blobs into `t`; their git object names, by
 * path. A file's bytes come from the store (copied out hashed: E_OBJECT_CORRUPT or
 * E_OBJECT_MISSING names its path), or from `fallbackRoot` (a live session) when the store does
 * not have them. With `count`, files and bytes done are reported batch by batch.
 */
export async function writeBlobs(
  store: ObjectStore,
  t: GitTarget,
  entries: Entry[],
  fallbackRoot?: string,
  count?: BlobCounter,
): Promise<Map<string, string>> {
  const wanted = entries.filter((e) => e.kind !== 'dir');
  if (wanted.length === 0) return new Map();
  const scratch = tempName(store.paths, 'blobs');
  try {
    await mkdir(scratch);
    const paths: string[] = [];
    const copies: ObjectCopy[] = [];
    for (const [i, e] of wanted.entries()) {
      const file = join(scratch, String(i));
      if (e.kind === 'file' && fallbackRoot && !store.has(e.digest)) paths.push(join(fallbackRoot, e.path));
      else if (e.kind === 'file') {
        copies.push({ path: e.path, digest: e.digest, size: e.size, exec: e.exec, name: String(i) });
        paths.push(file);
      } else {
        await writeFile(file, e.kind === 'symlink' ? e.target : ''); // a symlink's blob is its target
        paths.push(file);
      }
    }
    await copyObjectsOut(store, scratch, copies);
    if (paths.some((p) => p.includes('\n')))
      throw new PdbError('E_BAD_PATH', 'a file name with a newline cannot be passed to git hash-object', {
        hint: 'Checkpoint the session first.',
      });
    const names: string[] = [];
    for (const [from, to] of blobBatches(wanted, count !== undefined)) {
      const input = `${paths.slice(from, to).join('\n')}\n`;
      names.push(
        ...(await git(['hash-object', '-w', '--no-filters', '--stdin-paths'], { gitDir: t.gitDir, input }))
          .toString('utf8')
          .trim()
          .split('\n'),
      );
      count?.(
        to - from,
        wanted.slice(from, to).reduce((n, e) => n + (e.kind === 'file' ? e.size : 0), 0),
      );
    }
    return new Map(wanted.map((e, i) => [e.path, names[i]!]));
  } finally {
    // Scratch copies only; a failure leaves tmp garbage that gc removes.
    await rm(scratch, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** Update the temporary index of `t`: remove the paths `changes` delete, add what they add (files and symlinks). */
export async function updateIndex(t: GitTarget, changes: Change[], blobs: Map<string, string>): Promise<void> {
  const zero = '0'.repeat(40);
  const removes = changes.filter((c) => c.before && c.before.kind !== 'dir').map((c) => `0 ${zero}\t${c.path}\0`);
  const adds = changes.flatMap((c) => (c.after && c.after.kind !== 'dir' ? [`${gitMode(c.after)} ${blobs.get(c.path)}\t${c.path}\0`] : []));
  if (removes.length + adds.length === 0) return;
  await git(['update-index', '-z', '--add', '--remove', '--replace', '--index-info'], {
    ...t,
    input: Buffer.from(removes.join('') + adds.join(''), 'utf8'),
  });
}

/** A tree holding exactly the files and symlinks of `entries`; its object name. */
export async function treeOf(
  store: ObjectStore,
  t: GitTarget,
  entries: Entry[],
  fallbackRoot?: string,
  count?: BlobCounter,
): Promise<string> {
  const blobs = await writeBlobs(store, t, entries, fallbackRoot, count);
  await rm(t.indexFile, { force: true });
  await updateIndex(
    t,
    entries.map((e) => ({ path: e.path, kind: 'add', before: null, after: e })),
    blobs,
  );
  return (await git(['write-tree'], t)).toString('utf8').trim();
}
