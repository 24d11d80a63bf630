// Where git's discovery stops for a session. git walks up from its working directory to the first
// `.git` it finds; a store under $HOME, where $HOME is a git repository (dotfiles), would hand an
// agent's `git add -A && git commit` the user's home repository. GIT_CEILING_DIRECTORIES reaches
// only the processes pdb-env starts, so the session directory (above the root, never in it) holds
// a `.git` file naming no repository: git 2.39 stops there with "fatal: not a git repository:
// /nonexistent" instead of going on upward, whoever started it. A root with its own `.git`
// (git-worktree, or `git init` in the root) is found first, as before.
import { lstat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { osErrorCode, toPdbError } from '../../model/errors.js';

/** The marker's text: a gitdir that cannot exist, so discovery ends in an error, never in a repository. */
export const GIT_STOP_MARKER = 'gitdir: /nonexistent/pdb-env-session-has-no-repository-above-its-root\n';

/** The `.git` marker in a session directory (the root's parent). */
export function gitStopFile(sessionDir: string): string {
  return join(sessionDir, '.git');
}

/** Write the marker when missing; a `.git` already there (a file or directory someone made) is left as it is. */
export async function ensureGitStop(sessionDir: string): Promise<void> {
  const file = gitStopFile(sessionDir);
  if (await lstat(file).catch(() => null)) return;
  await writeFile(file, GIT_STOP_MARKER, { flag: 'wx', mode: 0o444 }).catch((err: unknown) => {
    if (osErrorCode(err) !== 'EEXIST') throw toPdbError(err, 'E_IO', { action: 'writing the git stop marker', path: file });
  });
}

/** GIT_CEILING_DIRECTORIES for a session's processes: the session directory added to any the caller had. */
export function gitCeiling(sessionDir: string, inherited: string | undefined): string {
  const dirs = (inherited ?? '').split(':').filter((d) => d.length > 0);
  return [...dirs.filter((d) => d !== sessionDir), sessionDir].join(':');
}
