// The generated fixtures (fileops, two-agent, agent) are committed the same way.
import { PdbError } from '../model/errors.js';
import type { ProcessRunner } from './types.js';

/**
 * Commit the whole fixture when git is installed, so the git-worktree backend (which carries only
 * committed files) starts from the same tree as every other backend.
 */
export async function commitFixture(dir: string, proc: ProcessRunner): Promise<void> {
  const env = {
    GIT_AUTHOR_NAME: 'pdb-env',
    GIT_AUTHOR_EMAIL: 'fixture@pdb-env.invalid',
    GIT_COMMITTER_NAME: 'pdb-env',
    GIT_COMMITTER_EMAIL: 'fixture@pdb-env.invalid',
    GIT_CONFIG_NOSYSTEM: '1',
    HOME: dir,
  };
  const git = async (...args: string[]) => {
    const r = await proc.run('git', args, { cwd: dir, env, timeoutMs: 300_000 });
    if (r.exitCode !== 0)
      throw new PdbError(
        'E_STEP_FAILED',
        `git ${args[0]} failed while preparing the fixture (exit ${r.exitCode}): ${r.stderr.slice(0, 200)}`,
      );
  };
  try {
    await git('--version');
  } catch {
    return; // no git: git-worktree reports itself unavailable on its own
  }
  // No background auto-gc or maintenance: a detached git writing into .git races the cleanup.
  const quiet = ['-c', 'gc.auto=0', '-c', 'maintenance.auto=false', '-c', 'core.fileMode=true'];
  await git('init', '-q');
  await git(...quiet, 'add', '-A');
  await git(...quiet, 'commit', '-q', '-m', 'fixture');
}
