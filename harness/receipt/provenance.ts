// Provenance: which code a run ran. The commit and whether the checkout was dirty are read when the
// run starts (not when its receipt is written: a long run may see many commits land meanwhile), and
// HEAD and the working tree are read again at the end, so a receipt says whether they changed in
// between. The run's own output directory is left out: its receipts and journal are not the code.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import type { Digest } from '../../model/canonical-json.js';
import { PdbError } from '../../model/errors.js';
import { nativeAddonPath } from '../../model/os/native-addon-file.cjs';
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

/**
 * The receipt's provenance from the checkout at the start and at the end of the run, and the build
 * that ran: a build replaced during the run counts as the code changing.
 */
export function provenanceOf(
  start: CheckoutState,
  end: CheckoutState,
  build: { start: BuildState; end: BuildState; allowedStale: boolean } | null = null,
): Provenance {
  const known = start.state !== null && end.state !== null;
  const changed = known ? start.state !== end.state : start.commit === null ? null : start.commit !== end.commit ? true : null;
  const rebuilt = build !== null && build.start.digest !== build.end.digest;
  return {
    commit: start.commit,
    dirty: start.dirty,
    changedDuringRun: rebuilt ? true : changed,
    ...(build ? { buildDigest: build.start.digest, staleBuild: build.start.stale !== null && build.allowedStale } : {}),
  };
}

/** The built package that runs, and whether it is older than its sources. */
export interface BuildState {
  /**
   * sha256 over everything that runs: every file under dist/ that can execute (.js, .mjs, .cjs and
   * the bundles' V8 code caches), the tests left out, package.json, and the native addon that loads
   * (path and bytes, in path order); null without a build.
   */
  digest: Digest | null;
  /** The newest source file whose build output is missing or older than it; null when the build is fresh (or there are no sources). */
  stale: { source: string; sourceMtime: string; builtAt: string | null } | null;
}

/** What under dist/ can run: modules of any kind, and the code caches V8 compiles a bundle from (cli/bundle.cts). */
const RUNS = /\.(?:js|mjs|cjs|cache)$/;

const SOURCE_SKIP = new Set(['node_modules', 'dist', 'test', '.git', 'fixtures']);

function filesUnder(dir: string, keep: (name: string) => boolean, skip: Set<string>): string[] {
  const out: string[] = [];
  const visit = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (e.name.startsWith('.') && e.isDirectory()) continue;
      const p = join(d, e.name);
      if (e.isDirectory()) {
        if (!skip.has(e.name)) visit(p);
      } else if (e.isFile() && keep(e.name)) out.push(p);
    }
  };
  if (existsSync(dir)) visit(dir);
  return out;
}

/** The digest of what runs of the package at `root` (BuildState.digest); `pdb-env doctor` prints it. */
export function readBuildDigest(root: string): Digest | null {
  const built = filesUnder(join(root, 'dist'), (n) => RUNS.test(n), new Set(['test']));
  if (built.length === 0) return null;
  const h = createHash('sha256');
  const addon = nativeAddonPath(root);
  for (const f of [...built, join(root, 'package.json'), ...(addon ? [addon] : [])])
    h.update(`${relative(root, f).split(sep).join('/')}\0`)
      .update(readFileSync(f))
      .update('\0');
  return `sha256:${h.digest('hex')}`;
}

/**
 * Read the build of the package at `root`: a digest of what runs, and the newest TypeScript source
 * (tests left out) whose compiled file in dist/ is missing or older than it. A package installed
 * without its sources has nothing to be stale against.
 */
export function readBuildState(root: string): BuildState {
  const dist = join(root, 'dist');
  const digest = readBuildDigest(root);
  let stale: BuildState['stale'] = null;
  for (const src of filesUnder(root, (n) => n.endsWith('.ts') && !n.endsWith('.d.ts'), SOURCE_SKIP)) {
    const rel = relative(root, src);
    const out = join(dist, rel.replace(/\.ts$/, '.js'));
    const srcTime = statSync(src).mtimeMs;
    const outTime = existsSync(out) ? statSync(out).mtimeMs : null;
    if (outTime !== null && outTime >= srcTime) continue;
    if (stale && Date.parse(stale.sourceMtime) >= srcTime) continue;
    stale = {
      source: rel.split(sep).join('/'),
      sourceMtime: new Date(srcTime).toISOString(),
      builtAt: outTime === null ? null : new Date(outTime).toISOString(),
    };
  }
  return { digest, stale };
}

/** E_STALE_BUILD naming the newest stale source and its build time: a bench must run the code its sources say. */
export function staleBuildError(stale: NonNullable<BuildState['stale']>): PdbError {
  const built = stale.builtAt ? `its build is from ${stale.builtAt}` : 'it has no build';
  return new PdbError(
    'E_STALE_BUILD',
    `the build is older than its sources: ${stale.source} changed at ${stale.sourceMtime} and ${built}`,
    {
      hint: 'Run npm run build first (a receipt must say which code ran); --allow-stale-build runs anyway and marks the receipt as not evidence.',
    },
  );
}
