// Confinement of an agent's requested paths to its session root: lexical ('..', absolute paths)
// and through symlinks (the deepest existing ancestor is resolved with realpath), so the ACP
// client never serves a path outside the root on the agent's behalf.
import { lstat, realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { PdbError, osErrorCode } from '../model/errors.js';

function isInside(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/**
 * Resolve `requested` (absolute, or relative to the root) to a real path inside `root`, or throw
 * E_PATH_OUTSIDE_ROOT. The deepest existing ancestor is resolved with realpath, so a symlink in the
 * root that points out is caught; for a write, an existing target that is a symlink is resolved too.
 */
export async function resolveInsideRoot(root: string, requested: string): Promise<string> {
  const realRoot = await realpath(root);
  const lexical = resolve(realRoot, requested);
  const refuse = () =>
    new PdbError(
      'E_PATH_OUTSIDE_ROOT',
      `the agent asked for a path outside its session root (${isAbsolute(requested) ? 'absolute path' : 'relative path'} ${JSON.stringify(requested)})`,
      {
        hint: 'Agents get only their session root; ask for paths under the session/new cwd.',
      },
    );
  // `requested` may name the root through a different spelling of it (e.g. /tmp vs /private/tmp).
  const viaRoot =
    isAbsolute(requested) && isInside(resolve(root), resolve(requested))
      ? join(realRoot, relative(resolve(root), resolve(requested)))
      : lexical;
  if (!isInside(realRoot, viaRoot)) throw refuse();
  let probe = viaRoot;
  const tail: string[] = [];
  for (;;) {
    try {
      const real = await realpath(probe);
      const full = tail.length ? join(real, ...tail.reverse()) : real;
      if (!isInside(realRoot, full)) throw refuse();
      return full;
    } catch (err) {
      if (err instanceof PdbError) throw err;
      const code = osErrorCode(err);
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
      // A dangling symlink is still a way out: refuse it unless its target resolves inside.
      const st = await lstat(probe).catch(() => null);
      if (st?.isSymbolicLink()) throw refuse();
      const parent = dirname(probe);
      if (parent === probe) throw refuse();
      tail.push(basename(probe));
      probe = parent;
    }
  }
}
