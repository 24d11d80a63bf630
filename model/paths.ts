// Where things are: real paths of user directories, and the files this package ships (schemas,
// fixtures, package.json), found the same way from sources run by tsc's output (dist/<layer>/x.js)
// and from scripts. (The stable key of a source directory is a hash: model/os/hash.ts.)
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The real path of `p`, or its absolute form when it does not exist (yet). */
export function realpathOr(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

let root: string | null = null;

/** The package's root directory: the nearest ancestor of this module holding package.json. */
export function packageRoot(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('pdb-env: package.json not found above the model directory');
    dir = up;
  }
  root = dir;
  return dir;
}

/** A file shipped with the package: `packageFile('schemas', 'receipt.schema.json')`. */
export function packageFile(...segments: string[]): string {
  return join(packageRoot(), ...segments);
}

/** The package version from package.json. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(packageFile('package.json'), 'utf8')) as { version: string }).version;
}

/** The pdb-env executable every caller runs as `node ENTRY ARGS` (bin/pdb-env runs it too): cli/pdb-env.cts says how it starts. */
export function cliEntry(): string {
  return packageFile('dist', 'cli', 'pdb-env.cjs');
}

/** The optional file in a source root that sets excludes, a backend and history (model/scan/scan.ts reads it). */
export const SOURCE_CONFIG = 'pdb-env.json';
