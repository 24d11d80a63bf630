// The repo workload: your own repository as the fixture. Its source is any local directory (a git
// repository or not) given at run time; its steps are your command lines (install, lint, build,
// test, a dev server or watcher with a milestone and an edit to observe), each timed with its CPU,
// peak RSS and exit code. Nothing is precomputed: the oracle is the block's full-copy case, compared
// under the plan's volatile paths (caches), and the receipt names the source only by its label.
import { statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { PdbError, osErrorCode } from '../../model/errors.js';
import { defaultHostNames, defaultUserNames, nameMatcher } from '../../model/scrub.js';
import { LABEL, REPO_DEFAULTS, REPO_WORKLOAD_VERSION, repoParamIssues, type RepoParams } from './params.js';
import { createCaseState, repoStep } from './repo-steps.js';
import type { Fixture, Workload } from '../types.js';

/** The source's name in receipts: the label, else the folder's base name made label-safe. Never a user or host name. */
export function sourceLabel(sourceDir: string, label: string): string {
  const name =
    label ||
    basename(sourceDir)
      .replace(/[^A-Za-z0-9._-]+/g, '-')
      .replace(/^[^A-Za-z0-9]+/, '')
      .slice(0, 64) ||
    'source';
  if (!LABEL.test(name)) throw new PdbError('E_USAGE', `"${name}" cannot name a source in a receipt`, { hint: 'Pass --label NAME.' });
  const identifying = [nameMatcher(defaultUserNames()), nameMatcher(defaultHostNames())].some((m) => m?.test(name));
  if (identifying)
    throw new PdbError('E_USAGE', `the source's name is a user or host name, which receipts never hold`, {
      hint: 'Pass --label NAME (a "label" parameter in a plan) to name the source.',
    });
  return name;
}

async function prepareRepoFixture(_workDir: string, params: Record<string, unknown>): Promise<Fixture> {
  const p = params as unknown as RepoParams;
  if (/\$\{[A-Za-z_]/.test(p.source))
    throw new PdbError('E_USAGE', `the repo source "${p.source}" has a placeholder without a value`, {
      hint: 'Give it with --var NAME=DIR (or --source DIR for ${SOURCE}).',
    });
  const sourceDir = resolve(p.source);
  try {
    if (!statSync(sourceDir).isDirectory()) throw new PdbError('E_SOURCE_MISSING', 'the repo source is not a directory');
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT')
      throw new PdbError('E_SOURCE_MISSING', 'the repo source does not exist', { cause: err, hint: 'Check --source DIR (or --var).' });
    throw err;
  }
  // The directory itself is the fixture: the harness imports it once and never writes to it.
  return { name: sourceLabel(sourceDir, p.label), version: REPO_WORKLOAD_VERSION, sourceDir };
}

export const repoWorkload: Workload = {
  name: 'repo',
  description:
    'your repository as the fixture: your command lines (install, lint, build, test; dev servers and watchers to a milestone, an edit and its observation), each timed, compared with the full-copy case under the declared volatile paths',
  deterministic: false,
  sessions: 1,
  defaultParams: { ...REPO_DEFAULTS, volatile: [...REPO_DEFAULTS.volatile] },
  paramIssues: repoParamIssues,
  prepareFixture: prepareRepoFixture,
  steps(params) {
    // Called once per case: the case's steps share its state (the session's port).
    const state = createCaseState();
    return (params as unknown as RepoParams).steps.map((s) => repoStep(s, state));
  },
  volatilePaths: (params) => [...(params as unknown as RepoParams).volatile],
  project: (entries) => entries,
  projectionNote:
    "The whole result tree (files, symlinks, exec bits, install and build output included) must equal the block's full-copy case, except the volatile paths the plan declares (caches that differ between two correct runs); each case records how many entries each volatile pattern dropped.",
};
