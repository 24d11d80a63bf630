import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { PdbError, isPdbError } from '../model/errors.js';
import { toolOutput } from '../model/os/run-tool.js';
import { measureBlocks, measuredUsage } from './shared/disk-usage.js';
import type { Backend, BackendContext, BackendState, ProbeResult } from './types.js';

async function gitHead(sourceDir: string): Promise<string> {
  const top = (
    await toolOutput('git', ['-C', sourceDir, 'rev-parse', '--show-toplevel'], 'E_NOT_GIT_REPO', 'finding the git repository')
  ).trim();
  if (!top) throw new PdbError('E_NOT_GIT_REPO', 'the source is not inside a git work tree');
  return (
    await toolOutput(
      'git',
      ['-C', sourceDir, 'rev-parse', '--verify', 'HEAD^{commit}'],
      'E_NOT_GIT_REPO',
      'reading HEAD (the repository needs a commit)',
    )
  ).trim();
}

/** The worktree's own directory in the repository (`.git/worktrees/<id>`: its index and HEAD), from the root's `.git` file. */
function worktreeAdminDir(root: string): string | null {
  try {
    const m = /^gitdir: (.+)$/m.exec(readFileSync(resolve(root, '.git'), 'utf8'));
    return m ? resolve(root, m[1]!.trim()) : null;
  } catch {
    return null; // no .git file: nothing of the repository is the session's
  }
}

function requireSource(ctx: BackendContext): string {
  if (!ctx.sourceDir)
    throw new PdbError(
      'E_NOT_GIT_REPO',
      'git-worktree needs the source repository, and this session has none (made from an environment?)',
      { hint: 'Create the session with --from a git repository.' },
    );
  return ctx.sourceDir;
}

/**
 * The compatibility reference: `git worktree add --detach` of the source's HEAD, the way people
 * use worktrees today. It carries only committed files, so untracked and ignored files (`.env`)
 * are missing from the session; the oracle comparison shows exactly what is dropped.
 */
export const gitWorktreeBackend: Backend = {
  name: 'git-worktree',
  experimental: false,
  testOnly: false,
  summary: 'git worktree add --detach HEAD; committed files only (compatibility reference)',
  capabilities: {
    constantTimeCreate: false,
    sharesExtents: false,
    needsRemount: false,
    carriesFullSnapshot: false,
    securityIsolation: false,
  },
  async probe(ctx): Promise<ProbeResult> {
    if (!ctx.sourceDir)
      return {
        available: false,
        reason: 'E_NOT_GIT_REPO',
        detail: 'no source directory to take a worktree from',
        evidence: { source: false },
      };
    try {
      const version = (await toolOutput('git', ['--version'], 'E_TOOL_MISSING', 'git --version')).trim();
      const head = await gitHead(ctx.sourceDir);
      return {
        available: true,
        reason: null,
        detail: 'the source is a git repository with a commit',
        evidence: { git: version, headIsCommit: head.length === 40 || head.length === 64 },
      };
    } catch (err) {
      const code = isPdbError(err) ? err.code : 'E_NOT_GIT_REPO';
      return {
        available: false,
        reason: code,
        detail: code === 'E_NOT_GIT_REPO' ? 'the source is not a git repository with a commit' : (err as Error).message,
        evidence: { source: true, git: code !== 'E_TOOL_MISSING' },
      };
    }
  },
  async materializeBase() {
    // The repository is the base: git checks files out of its object database.
  },
  async createSession(ctx, _snapshot, _digest, root) {
    const source = requireSource(ctx);
    const head = await gitHead(source);
    await toolOutput('git', ['-C', source, 'worktree', 'add', '--detach', root, head], 'E_IO', 'git worktree add');
    return { state: { commit: head }, cloneObserved: null };
  },
  async usage(_ctx, root) {
    const u = measureBlocks(root);
    const admin = worktreeAdminDir(root);
    const a = admin ? measureBlocks(admin) : null;
    return measuredUsage(
      { ...u, exclusiveBytes: u.exclusiveBytes + (a ? a.exclusiveBytes + a.sharedBytes : 0) },
      ['root'],
      "st_blocks of the checked-out files and of the worktree's own git directory (index, HEAD); the repository's objects are not the session's",
    );
  },
  async resume() {},
  async release(ctx: BackendContext, root: string, _sessionDir: string, _state: BackendState) {
    if (!ctx.sourceDir || !existsSync(ctx.sourceDir)) return;
    if (existsSync(root))
      await toolOutput('git', ['-C', ctx.sourceDir, 'worktree', 'remove', '--force', '--force', root], 'E_IO', 'git worktree remove');
    await toolOutput('git', ['-C', ctx.sourceDir, 'worktree', 'prune'], 'E_IO', 'git worktree prune');
  },
};
