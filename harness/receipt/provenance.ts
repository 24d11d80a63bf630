// Provenance: which code a run ran. The commit and whether the checkout was dirty are read when the
// run starts (not when its receipt is written: a long run may see many commits land meanwhile), and
// HEAD and the working tree are read again at the end, so a receipt says whether they changed in
// between. The run's own output directory is left out: its receipts and journal are not the code.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { runTool } from '../../model/os/run-tool.js';
import type { Provenance } from './receipt-types.js';

/** The checkout at one moment: its commit, whether it differs from that commit, and a digest of its whole state. */
export interface CheckoutState {
  commit: string | null;
  dirty: boolean | null;
  /** sha256 of HEAD, `git status` and the diff against HEAD; null outside a git checkout. */
  state: string | null;
}

const UNKNOWN: CheckoutState = { commit: null, dirty: null, state: null };

async function git(repo: string, args: string[]): Promise<string | null> {
  const r = await runTool('git', ['-C', repo, ...args], { timeoutMs: 60_000 });
  return r.exitCode === 0 ? r.stdout : null; // no git, or it failed: provenance unknown
}

/** Pathspecs that leave out `ignore` directories inside the repository (outside ones need nothing). */
function excludes(repo: string, ignore: string[]): string[] {
  const out: string[] = [];
  for (const dir of ignore) {
    const rel = relative(repo, resolve(dir));
    if (rel === '' || rel.startsWith('..') || rel.startsWith(sep)) continue;
    out.push(`:(exclude)${rel.split(sep).join('/')}`);
  }
  return out;
}

/**
 * Read the checkout of `repo` (the pdb-env package root): HEAD, and every tracked change and
 * untracked file outside `ignore`. Outside a git checkout, or without git, everything is null.
 */
export async function readCheckoutState(repo: string, ignore: string[] = []): Promise<CheckoutState> {
  if (!existsSync(join(repo, '.git'))) return UNKNOWN;
  const head = (await git(repo, ['rev-parse', 'HEAD']))?.trim();
  if (!head || !/^[0-9a-f]{40}$/.test(head)) return UNKNOWN;
  const spec = ['--', '.', ...excludes(repo, ignore)];
  const status = await git(repo, ['status', '--porcelain=v1', '-z', '--untracked-files=all', ...spec]);
  const diff = await git(repo, ['diff', 'HEAD', '--binary', ...spec]);
  if (status === null || diff === null) return { commit: head, dirty: null, state: null };
  const state = createHash('sha256').update(`${head}\0${status}\0${diff}`).digest('hex');
  return { commit: head, dirty: status.length > 0, state };
}

/** The receipt's provenance from the checkout at the start and at the end of the run. */
export function provenanceOf(start: CheckoutState, end: CheckoutState): Provenance {
  const known = start.state !== null && end.state !== null;
  return {
    commit: start.commit,
    dirty: start.dirty,
    changedDuringRun: known ? start.state !== end.state : start.commit === null ? null : start.commit !== end.commit ? true : null,
  };
}
