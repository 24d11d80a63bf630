// The source's git state at import time, read from files (no process: create stays at stat
// speed): the repository around the source, the source's place in its work tree, and HEAD's
// commit. `export --git` makes its commit on that HEAD.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import type { Digest } from '../../model/canonical-json.js';

export interface SourceGit {
  /** The repository's git directory (a worktree's own, for a linked worktree). */
  gitDir: string;
  /** The work tree's top level. */
  topLevel: string;
  /** The source's path inside the work tree ('' at the top level), '/'-separated. */
  prefix: string;
  /** HEAD's commit at import time; null on a branch with no commit yet. */
  head: string | null;
  /** The Snapshot imported at that HEAD: export --git carries the changes from it (a fork's or a rebase's too). */
  base?: Digest;
}

export const withBase = (g: SourceGit | null, base: Digest): SourceGit | null => (g ? { ...g, base } : null);

const read = (file: string): string | null => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null; // absent: the caller looks elsewhere
  }
};

/** A ref's commit: loose in the common dir, else in packed-refs. */
function resolveRef(gitDir: string, ref: string): string | null {
  const common = resolve(gitDir, (read(join(gitDir, 'commondir')) ?? '.').trim());
  for (const dir of [gitDir, common]) {
    const loose = read(join(dir, ref))?.trim();
    if (loose && /^[0-9a-f]{40,64}$/.test(loose)) return loose;
  }
  for (const line of (read(join(common, 'packed-refs')) ?? '').split('\n')) {
    const [sha, name] = line.split(' ');
    if (name === ref && sha && /^[0-9a-f]{40,64}$/.test(sha)) return sha;
  }
  return null;
}

/** The git work tree holding `dir` and its HEAD, or null when `dir` is in none. */
export function readSourceGit(dir: string): SourceGit | null {
  let cur = resolve(dir);
  for (;;) {
    const dotGit = join(cur, '.git');
    if (existsSync(dotGit)) {
      let gitDir = dotGit;
      if (!statSync(dotGit).isDirectory()) {
        const m = /^gitdir: (.+)$/m.exec(read(dotGit) ?? '');
        if (!m) return null;
        gitDir = resolve(cur, m[1]!.trim());
      }
      const head = (read(join(gitDir, 'HEAD')) ?? '').trim();
      const ref = /^ref: (.+)$/.exec(head)?.[1];
      const sha = ref ? resolveRef(gitDir, ref) : /^[0-9a-f]{40,64}$/.test(head) ? head : null;
      return { gitDir, topLevel: cur, prefix: relative(cur, resolve(dir)).split(sep).join('/'), head: sha };
    }
    const up = dirname(cur);
    if (up === cur) return null;
    cur = up;
  }
}
