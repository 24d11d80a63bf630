// The baselines the user path is judged against, each doing the work a user would otherwise do:
//
// - `git status --porcelain` on a copy of the tree where every file is tracked (`git add -A -f`,
//   core.untrackedCache=true, warm index): git then lstats every entry, as a checkpoint does, and
//   skips reading a directory whose stat data is unchanged, as the directory rule does;
// - `git worktree add` + `pnpm install --offline --frozen-lockfile` from a warm store: a ready
//   workspace as people make one today (only for a pnpm project in a git repository);
// - `node -e 0` (process start), `cp -a --reflink=never` (a full copy), a `find -printf` stat walk.
import { existsSync, mkdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { $ as zx } from 'zx';
import { packageFile } from '../../model/paths.js';

const $ = zx({ verbose: false, quiet: true });

/** The pnpm the worktree baseline runs: one on PATH, else pnpm 10 installed once under `work`. */
export async function pnpmCommand(work: string): Promise<string[]> {
  if ((await $`pnpm --version`.nothrow()).exitCode === 0) return ['pnpm'];
  const prefix = join(work, 'pnpm');
  const cjs = join(prefix, 'node_modules', 'pnpm', 'bin', 'pnpm.cjs');
  if (!existsSync(cjs)) await $`npm install --prefix ${prefix} --no-audit --no-fund --loglevel=error pnpm@10.34.9`;
  return [process.execPath, cjs];
}

export interface AllTracked {
  dir: string;
  /** One timed `git status --porcelain`. */
  status: () => Promise<unknown>;
  /** Back to the committed tree (what a measurement appended to is undone), the index warm again. */
  reset: () => Promise<void>;
}

/** A copy of `tree` in `dir` with every file tracked by git, its index warm: the equal-work baseline for a scan. */
export async function allTrackedCopy(tree: string, dir: string): Promise<AllTracked> {
  rmSync(dir, { recursive: true, force: true });
  await $`cp -a --reflink=never ${tree} ${dir}`;
  rmSync(join(dir, '.git'), { recursive: true, force: true }); // a repository of its own, whatever the tree is
  const git = (...args: string[]) => $({ cwd: dir })`git -c core.excludesFile=/dev/null ${args}`;
  await git('init', '-q');
  await git('config', 'core.untrackedCache', 'true');
  await git('config', 'core.fsmonitor', 'false');
  // No background gc or maintenance writing into .git while it is timed (or removed).
  await git('config', 'gc.auto', '0');
  await git('config', 'maintenance.auto', 'false');
  await git('add', '-A', '-f', '.');
  await git('-c', 'user.name=bench', '-c', 'user.email=bench@example.invalid', 'commit', '-q', '-m', 'tree');
  const status = () => git('status', '--porcelain');
  // Warm: the first runs refresh the index's stat data and fill the untracked cache.
  const warm = async () => {
    for (let i = 0; i < 3; i++) await status();
  };
  await warm();
  return {
    dir,
    status,
    reset: async () => {
      await git('checkout', '-q', '--', '.');
      await warm();
    },
  };
}

export interface WorktreeBaseline {
  /** Why there is none for this tree (not a git repository, no pnpm lockfile). */
  unavailable: string | null;
  /** One timed `git worktree add` + `pnpm install --offline --frozen-lockfile` into `dir`; `undo` removes it. */
  run(dir: string): Promise<{ undo: () => Promise<void> }>;
}

/**
 * `git worktree add --detach` of the tree's HEAD, then `pnpm install --offline --frozen-lockfile`
 * from a copy of the store the tree was installed from (warm: nothing is downloaded). A copy,
 * because pnpm hard-links the store's files: an install from the tree's own store would change
 * the ctime of the tree's files (they are the same inodes), and the next `create --from` would
 * rightly hash them all again, which is no longer an unchanged source.
 */
export async function worktreeInstall(tree: string, work: string): Promise<WorktreeBaseline> {
  const none = (unavailable: string): WorktreeBaseline => ({ unavailable, run: () => Promise.reject(new Error(unavailable)) });
  if (!existsSync(join(tree, 'pnpm-lock.yaml'))) return none('no pnpm-lock.yaml in the tree');
  if ((await $({ cwd: tree })`git rev-parse --show-toplevel`.nothrow()).stdout.trim() !== realpathSync(tree))
    return none('the tree is not a git work tree');
  const pnpm = await pnpmCommand(work);
  const storeDir = join(work, 'pnpm-store-baseline');
  // `pnpm store path` names the versioned directory (…/v10); --store-dir takes its parent.
  const storePath = (await $({ cwd: tree })`${pnpm} store path`).stdout.trim();
  rmSync(storeDir, { recursive: true, force: true });
  await $`cp -a --reflink=never ${/\/v\d+$/.test(storePath) ? dirname(storePath) : storePath} ${storeDir}`;
  const env = { ...process.env, CI: '1', npm_config_update_notifier: 'false' };
  return {
    unavailable: null,
    async run(dir) {
      await $({ cwd: tree })`git worktree add -q --detach ${dir} HEAD`;
      await $({ cwd: dir, env })`${pnpm} install --offline --frozen-lockfile --ignore-scripts --store-dir ${storeDir} --reporter=silent`;
      return {
        undo: async () => {
          await $({ cwd: tree })`git worktree remove --force ${dir}`;
          await $({ cwd: tree })`git worktree prune`;
        },
      };
    },
  };
}

/** The pinned pnpm monorepo fixture: four workspace packages on real registry packages, installed once (about 26,000 entries). */
export const PNPM_WORKSPACE: Record<string, Record<string, unknown>> = {
  '.': { name: 'mono', private: true, version: '1.0.0', devDependencies: { typescript: '5.9.3', prettier: '3.10.1', eslint: '9.38.0' } },
  'packages/web': {
    name: '@mono/web',
    version: '1.0.0',
    private: true,
    dependencies: { react: '19.2.0', 'react-dom': '19.2.0', '@mono/shared': 'workspace:*' },
    devDependencies: { vite: '7.1.12', vitest: '3.2.4', '@vitejs/plugin-react': '5.0.4' },
  },
  'packages/api': {
    name: '@mono/api',
    version: '1.0.0',
    private: true,
    dependencies: { express: '5.1.0', fastify: '5.6.1', zod: '4.1.12', '@mono/shared': 'workspace:*' },
    devDependencies: { jest: '30.2.0', '@types/node': '20.19.43' },
  },
  'packages/shared': {
    name: '@mono/shared',
    version: '1.0.0',
    private: true,
    dependencies: { lodash: '4.17.21', rxjs: '7.8.2', 'date-fns': '4.1.0' },
  },
  'packages/cli': {
    name: '@mono/cli',
    version: '1.0.0',
    private: true,
    dependencies: { commander: '14.0.3', chalk: '5.6.2', '@mono/shared': 'workspace:*', webpack: '5.102.1' },
  },
};

/** The pnpm monorepo fixture in `dir` (made and installed once, a git repository with node_modules ignored). */
export async function ensurePnpmMonorepo(dir: string, work: string): Promise<string> {
  if (existsSync(join(dir, 'node_modules', '.pnpm'))) return dir;
  for (const [rel, pkg] of Object.entries(PNPM_WORKSPACE)) {
    mkdirSync(join(dir, rel, 'src'), { recursive: true });
    writeFileSync(join(dir, rel, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
    writeFileSync(join(dir, rel, 'src', 'index.ts'), `export const name = ${JSON.stringify(pkg.name)};\n`);
  }
  writeFileSync(join(dir, 'pnpm-workspace.yaml'), 'packages:\n  - "packages/*"\n');
  writeFileSync(join(dir, '.gitignore'), 'node_modules\n');
  // The store in the repository's .npmrc, so that the worktree baseline installs from the same (warm) one.
  writeFileSync(join(dir, '.npmrc'), `store-dir=${join(work, 'pnpm-store')}\n`);
  const pnpm = await pnpmCommand(work);
  const env = { ...process.env, CI: '1', npm_config_update_notifier: 'false' };
  await $({ cwd: dir, env })`${pnpm} install --ignore-scripts --reporter=silent`;
  await $({ cwd: dir })`git init -q`;
  await $({ cwd: dir })`git add -A`;
  await $({ cwd: dir })`git -c user.name=bench -c user.email=bench@example.invalid commit -q -m fixture`;
  return dir;
}

/** The command a user runs: bin/pdb-env (package.json "bin"). */
export const PDB_ENV = packageFile('bin', 'pdb-env');
