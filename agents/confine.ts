// Confinement to a session root, as the ACP client serves an agent's file and terminal requests,
// and as check-path reports it: a path (relative to the root, or absolute) is resolved with
// realpath through every link inside the root, and one that resolves outside (by "..", an absolute
// path, or a symlink in the root that points out) is E_PATH_OUTSIDE_ROOT. The policy then judges
// the resolved path, so a link cannot rename its way past a deny. Not a security sandbox.
import { lstat, realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { PdbError, osErrorCode } from '../model/errors.js';
import { checkPath, type Access, type PathDecision, type WorkspacePolicy } from '../model/workspace-policy.js';

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

/** `requested` resolved inside `root`: the real path, and the root-relative path the policy judges ('.' for the root). */
export async function confinedPath(root: string, requested: string): Promise<{ full: string; rel: string }> {
  const full = await resolveInsideRoot(root, requested);
  return {
    full,
    rel:
      relative(await realpath(root), full)
        .split(sep)
        .join('/') || '.',
  };
}

/** What the policies decide for `path` in `root` once its links are resolved, and the resolved path (null: outside the root). */
export async function decideConfined(
  policies: readonly WorkspacePolicy[],
  root: string,
  path: string,
  access: Access,
): Promise<PathDecision & { resolved: string | null }> {
  try {
    const { rel } = await confinedPath(root, path);
    return { ...checkPath(policies, rel, access), resolved: rel };
  } catch (err) {
    if (!(err instanceof PdbError) || err.code !== 'E_PATH_OUTSIDE_ROOT') throw err;
    return { allowed: false, rule: `${policies[0]?.source ?? 'default'}:outside-root ${path}`, resolved: null };
  }
}
