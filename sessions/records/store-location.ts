// Where a command's store is, and which project the current directory belongs to.
//
// Finding the project from anywhere inside it, as git finds its work tree: walk up from the
// current directory to the nearest directory already imported (into the given store, or one that
// has its own per-source store), else to the git top level, else stay where we are. So `create`
// in src/lib imports the project, and `list` in src/lib finds the project's store.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { PdbError } from '../../model/errors.js';
import { STORE_MARKER } from '../../model/store/object-store.js';
import { sourceKey } from '../../model/os/hash.js';
import { realpathOr, SOURCE_CONFIG } from '../../model/paths.js';
import { readSourceGit } from '../way-back/source-git.js';

/** The source root that `cwd` belongs to (see above); `storeDir` is a store named by --store or PDB_ENV_STORE. */
export function findProjectRoot(cwd: string, storeDir?: string): string {
  return projectRootOf(cwd, storeDir).root;
}

/** The source root of `cwd` and why it is that one: a directory already imported (and the store that says so), the git top level, or `cwd` itself. */
export function projectRootOf(
  cwd: string,
  storeDir?: string,
): { root: string; why: 'imported'; store: string } | { root: string; why: 'git' | 'cwd' } {
  const start = realpathOr(resolve(cwd));
  for (let cur = start; ;) {
    if (storeDir && existsSync(join(storeDir, 'sources', `${sourceKey(cur)}.index`)))
      return { root: cur, why: 'imported', store: storeDir };
    if (existsSync(defaultStoreFor(cur))) return { root: cur, why: 'imported', store: defaultStoreFor(cur) };
    const up = dirname(cur);
    if (up === cur) break;
    cur = up;
  }
  const top = readSourceGit(start)?.topLevel;
  return top ? { root: top, why: 'git' } : { root: start, why: 'cwd' };
}

/** What marks a directory as a project root pdb-env recognises (the Claude Code hook imports nothing else unless configured). */
export const PROJECT_MARKERS = ['.git', 'package.json', SOURCE_CONFIG] as const;

export function isProjectRoot(dir: string): boolean {
  return PROJECT_MARKERS.some((m) => existsSync(join(dir, m)));
}

/**
 * Refuse a create whose source would be an ancestor of `cwd` only because a store was made for it
 * (issue 41: after `backends` made a store for /tmp/t10, `create` in /tmp/t10/proj imported all of
 * /tmp/t10). A directory that is a recognised project root (a git work tree, package.json,
 * pdb-env.json) is the project the documentation promises, and is kept.
 */
export function assertNotCapturedByAncestor(cwd: string, storeDir?: string): string {
  const found = projectRootOf(cwd, storeDir);
  const here = realpathOr(resolve(cwd));
  if (found.why !== 'imported' || found.root === here || isProjectRoot(found.root)) return found.root;
  throw new PdbError(
    'E_USAGE',
    `create here would import ${found.root} whole: the store ${found.store} was made for it, and ${here} is below it (${found.root} has no ${PROJECT_MARKERS.join(', ')})`,
    { hint: `Say which: pdb-env create NAME --from ${here} (this directory alone), or --from ${found.root} (all of it), or --store DIR.` },
  );
}

/** The per-source default store: `$XDG_DATA_HOME/pdb-env/stores/<name>-<hash of the source path>`. */
export function defaultStoreFor(sourceDir: string): string {
  const real = realpathOr(sourceDir);
  const dataHome = process.env.XDG_DATA_HOME || join(homedir(), '.local', 'share');
  const key = sourceKey(real, 12);
  const name = (basename(real) || 'root').replace(/[^A-Za-z0-9._-]/g, '_');
  return join(dataHome, 'pdb-env', 'stores', `${name}-${key}`);
}

/** The store whose tree holds `dir` (a session root or anything under the store), if any. */
export function findEnclosingStore(dir: string): string | null {
  let cur = realpathOr(dir);
  for (;;) {
    if (existsSync(join(cur, STORE_MARKER)) && existsSync(join(cur, 'objects'))) return cur;
    const up = dirname(cur);
    if (up === cur) return null;
    cur = up;
  }
}

/**
 * Which store a command uses: `--store`, then PDB_ENV_STORE, then (except for create) the store
 * that encloses the current directory, then the default store of the source directory.
 */
export function resolveStoreDir(options: { store?: string; sourceDir?: string; cwd?: string; forCreate?: boolean }): string {
  if (options.store) return resolve(options.store);
  if (process.env.PDB_ENV_STORE) return resolve(process.env.PDB_ENV_STORE);
  const cwd = options.cwd ?? process.cwd();
  if (!options.forCreate) {
    const enclosing = findEnclosingStore(cwd);
    if (enclosing) return enclosing;
  }
  // From a subdirectory: the project's store (findProjectRoot above).
  return defaultStoreFor(options.sourceDir ?? findProjectRoot(cwd));
}
