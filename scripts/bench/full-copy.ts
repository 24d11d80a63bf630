#!/usr/bin/env node
// Benchmark: the user path (scripts/bench/user-path.ts) of full-copy and overlay on the work
// directory's filesystem, each command against baselines measured in the same rounds, ending with
// the goals of issue 26 (scripts/bench/goals.ts) as MET / NOT MET lines and a path-free receipt.
//
// The tree: --tree DIR (a real project, for example an installed pnpm monorepo that is a git
// repository, which also gives the worktree + pnpm install baseline), --pnpm-fixture DIR (the
// pinned pnpm monorepo, installed into DIR once), or by default a node_modules tree installed with
// npm under the work dir (~20,000 files). Runs are interleaved so machine noise hits both sides.
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { $ as zx } from 'zx';
import { packageFile } from '../../model/paths.js';
import { scannerInfo } from '../../model/scan/scanner.js';
import { storeFilesystem } from '../../harness/receipt/host.js';
import { PDB_ENV, allTrackedCopy, ensurePnpmMonorepo, worktreeInstall } from './baselines.js';
import { evaluateGoals, goalLines } from './goals.js';
import { benchRow, startBenchReceipt, writeBenchReceipt, type BenchRow } from './bench-receipt.js';
import { countEntries, userPathRows } from './user-path.js';
import { formatDuration, scriptArgs } from '../lib.js';

const { values } = scriptArgs(
  'usage: node dist/scripts/bench/full-copy.js [--tree DIR | --pnpm-fixture DIR] [--rounds 7] [--work /var/tmp/pdb-env-bench]\n' +
    '                                         [--out receipts/local] [--user-path full-copy,overlay | none]',
  {
    'user-path': { type: 'string', default: 'full-copy,overlay' },
    tree: { type: 'string' },
    'pnpm-fixture': { type: 'string' },
    rounds: { type: 'string', default: '7' },
    work: { type: 'string', default: '/var/tmp/pdb-env-bench' },
    out: { type: 'string', default: packageFile('receipts', 'local') },
  },
);
const rounds = Number(values.rounds);
const work = resolve(values.work);
mkdirSync(work, { recursive: true });
const $ = zx({ verbose: false, quiet: true });

/** The tree to measure: --tree, the pnpm fixture, or the default npm node_modules tree (installed once). */
async function chooseTree(): Promise<{ tree: string; what: string }> {
  if (values.tree) return { tree: resolve(values.tree), what: 'given with --tree' };
  if (values['pnpm-fixture']) {
    console.log('the pinned pnpm monorepo fixture (installed once)');
    return { tree: await ensurePnpmMonorepo(resolve(values['pnpm-fixture']), work), what: 'the pinned pnpm monorepo fixture' };
  }
  const tree = join(work, 'tree');
  if (!existsSync(join(tree, 'node_modules'))) {
    console.log(`building the fixture tree in ${tree} (npm install, once)`);
    mkdirSync(tree, { recursive: true });
    writeFileSync(join(tree, 'package.json'), JSON.stringify({ name: 'bench-tree', version: '1.0.0', private: true }));
    await $({
      cwd: tree,
    })`npm install --no-audit --no-fund --ignore-scripts next@16 react@19 react-dom@19 typescript@5.9.3 jest@30 vite@8.3.8 vitest@4.1.12 eslint@9 webpack@5 @babel/core@7`;
  }
  return {
    tree,
    what: 'node_modules of next@16, react@19, typescript@5.9.3, jest@30, vite@8.3.8, vitest@4.1.12, eslint@9, webpack@5, @babel/core@7',
  };
}

const { tree, what } = await chooseTree();
const entries = countEntries(tree);
const files = Number((await $`find ${tree} -path ${join(tree, '.git')} -prune -o -type f -print | wc -l`).stdout.trim());
const bytes = Number((await $`du -sb --apparent-size --exclude=.git ${tree}`).stdout.split('\t')[0]);
// The mount table names ext4 as ext4 (stat -f says ext2/ext3 for all three).
const fs = storeFilesystem(work).type;
const scanner = scannerInfo();
console.log(`tree: ${entries} entries, ${files} files, ${(bytes / 1e6).toFixed(0)} MB, filesystem ${fs}; ${rounds} interleaved rounds`);
console.log(`scanner: ${scanner.scanner} (${scanner.reason}); NODE_EXTRA_CA_CERTS ${process.env.NODE_EXTRA_CA_CERTS ? 'set' : 'unset'}`);

const start = await startBenchReceipt(work, resolve(values.out));
const store = join(work, 'store');
rmSync(store, { recursive: true, force: true });
await $`sync`;
const t0 = performance.now();
await $`${PDB_ENV} create first --from ${tree} --store ${store}`;
const firstImport = performance.now() - t0;
console.log(`first import + full-copy create: ${formatDuration(firstImport, 2)}`);
rmSync(store, { recursive: true, force: true });

const userPath: BenchRow[] = [];
const wanted = values['user-path'] === 'none' ? [] : values['user-path'].split(',').filter(Boolean);
const report = wanted.length
  ? (JSON.parse((await $`${PDB_ENV} backends --json`).stdout) as { backends: Array<{ name: string; available: boolean }> })
  : null;
const worktree = wanted.includes('overlay') ? await worktreeInstall(tree, work) : null;
console.log('an all-tracked git copy of the tree (the git status baseline of every group)');
const git = await allTrackedCopy(tree, join(work, 'git-tree'));
const lines: string[] = [];
for (const backend of wanted) {
  if (!report!.backends.some((b) => b.name === backend && b.available)) {
    lines.push(`${backend}: not available here, skipped`);
    continue;
  }
  const ustore = join(work, `store-${backend}`);
  rmSync(ustore, { recursive: true, force: true });
  const r = await userPathRows({
    tree,
    store: ustore,
    scratch: join(work, `scratch-${backend}`),
    backend,
    rounds,
    group: backend,
    gc: backend === 'full-copy',
    cp: backend === 'full-copy',
    worktree: backend === 'overlay' ? worktree : null,
    git,
    log: (l) => console.log(l),
  });
  lines.push(...r.lines);
  userPath.push(...r.rows);
  for (const d of [ustore, join(work, `scratch-${backend}`)]) await $`rm -rf ${d}`;
}

await $`rm -rf ${git.dir}`;
const goals = evaluateGoals(userPath, (group) => group);
console.log(`\nuser path, ${entries} entries (paired ratio = median of per-round ratios)\n${lines.join('\n')}`);
console.log(`\ngoals (issue 26), one run, same rounds:\n${goalLines(goals).join('\n')}`);
const receiptFile = await writeBenchReceipt(start, {
  benchmark: 'full-copy',
  command: `npm run bench:full-copy -- --rounds ${rounds}${values.tree ? ' --tree <dir>' : ''}${values['pnpm-fixture'] ? ' --pnpm-fixture <dir>' : ''} --user-path ${values['user-path']}`,
  params: {
    rounds,
    tree: what,
    entries,
    files,
    bytes,
    filesystem: fs,
    firstImportMs: Math.round(firstImport),
    scanner: scanner.scanner,
    lstatThreads: scanner.threads,
    nodeExtraCaCerts: process.env.NODE_EXTRA_CA_CERTS ? 'set' : 'unset',
    worktreeBaseline: worktree ? (worktree.unavailable ?? 'measured') : 'not asked for',
  },
  results: [benchRow('first import + full-copy create', '', [firstImport]), ...userPath],
  goals,
});
console.log(`receipt: ${receiptFile}`);
