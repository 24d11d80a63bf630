// Finding the project from anywhere inside it, as git finds its work tree: walk up from the
// current directory to the nearest directory already imported (into the given store, or one that
// has its own per-source store), else to the git top level, else stay where we are. So `create`
// in src/lib imports the project, and `list` in src/lib finds the project's store.
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { realpathOr, sourceKey } from '../model/paths.js';
import { readSourceGit } from './way-back/source-git.js';
import { defaultStoreFor } from './store-location.js';

/** The source root that `cwd` belongs to (see above); `storeDir` is a store named by --store or PDB_ENV_STORE. */
export function findProjectRoot(cwd: string, storeDir?: string): string {
  const start = realpathOr(resolve(cwd));
  for (let cur = start; ;) {
    if (storeDir && existsSync(join(storeDir, 'sources', `${sourceKey(cur)}.index`))) return cur;
    if (existsSync(defaultStoreFor(cur))) return cur;
    const up = dirname(cur);
    if (up === cur) break;
    cur = up;
  }
  return readSourceGit(start)?.topLevel ?? start;
}
