#!/usr/bin/env node
// Benchmark: full-copy create and checkpoint against coreutils baselines measured in the same run.
//
// Without --tree it builds a real node_modules tree (~20,000 files, ~500 MB) with npm under the
// work dir (default /var/tmp/pdb-env-bench). Runs are interleaved (baseline, pdb-env, baseline,
// ...) so machine noise hits both sides; it prints medians and median ratios, no pass/fail, and
// writes a path-free benchmark receipt (every sample, the host, the commit) under --out
// (default receipts/local, ignored by git; --out receipts/bench to keep it as evidence).
//
// Then the user path (scripts/bench-user-path.ts, issue 13) for each of --user-path's backends that
// is available here (default full-copy and overlay; --user-path none skips it): create --from and
// --base against a find walk and `node -e 0`, list, checkpoint against `git status --porcelain`,
// and (full-copy) gc's reclaim with verify after it, each as a ratio to its same-round baseline.
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { $ as zx } from 'zx';
import { packageFile } from '../model/paths.js';
import { benchRow, startBenchReceipt, writeBenchReceipt, type BenchRow } from './bench-receipt.js';
import { countEntries, userPathRows } from './bench-user-path.js';
import { CLI, formatDuration, median, scriptArgs } from './lib.js';

const { values } = scriptArgs(
  'usage: node dist/scripts/bench-full-copy.js [--tree DIR] [--rounds 7] [--work /var/tmp/pdb-env-bench] [--out receipts/local]\n' +
    '                                         [--user-path full-copy,overlay | none]',
  {
    'user-path': { type: 'string', default: 'full-copy,overlay' },
    tree: { type: 'string' },
    rounds: { type: 'string', default: '7' },
    work: { type: 'string', default: '/var/tmp/pdb-env-bench' },
    out: { type: 'string', default: packageFile('receipts', 'local') },
  },
);
const rounds = Number(values.rounds);
const work = resolve(values.work);
mkdirSync(work, { recursive: true });
const $ = zx({ verbose: false, quiet: true });

const tree = values.tree ? resolve(values.tree) : join(work, 'tree');
if (!values.tree && !existsSync(join(tree, 'node_modules'))) {
  console.log(`building the fixture tree in ${tree} (npm install, once)`);
  mkdirSync(tree, { recursive: true });
  writeFileSync(join(tree, 'package.json'), JSON.stringify({ name: 'bench-tree', version: '1.0.0', private: true }));
  await $({
    cwd: tree,
  })`npm install --no-audit --no-fund --ignore-scripts next@16 react@19 react-dom@19 typescript@5.9.3 jest@30 vite@8.3.8 vitest@4.1.12 eslint@9 webpack@5 @babel/core@7`;
}
const files = Number((await $`find ${tree} -type f | wc -l`).stdout.trim());
const bytes = Number((await $`du -sb --apparent-size ${tree}`).stdout.split('\t')[0]);
const fs = (await $`stat -f -c %T ${work}`).stdout.trim();
console.log(`tree: ${files} files, ${(bytes / 1e6).toFixed(0)} MB, filesystem ${fs}; ${rounds} interleaved rounds`);

const start = await startBenchReceipt(work, resolve(values.out));
const store = join(work, 'store');
const scratch = join(work, 'scratch');
rmSync(store, { recursive: true, force: true });
rmSync(scratch, { recursive: true, force: true });
mkdirSync(scratch, { recursive: true });

async function time(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}
const sync = () => $`sync`;

// First import: every file is read, hashed and installed into the object store, then copied.
await sync();
const firstImport = await time(() => $`node ${CLI} create first --from ${tree} --store ${store}`);
await $`node ${CLI} discard first --store ${store}`;
console.log(`first import + create: ${formatDuration(firstImport, 2)}`);
// Let the racy-clean window pass, so the stat cache may be trusted (as it would be for any tree
// not written in the last two seconds).
await $`node ${CLI} create warm --from ${tree} --store ${store}`;
await $`node ${CLI} discard warm --store ${store}`;

const cp: number[] = [];
const create: number[] = [];
for (let i = 0; i < rounds; i++) {
  const dst = join(scratch, `cp-${i}`);
  await sync();
  cp.push(await time(() => $`cp -a --reflink=never ${tree} ${dst}`));
  await sync();
  create.push(await time(() => $`node ${CLI} create s${i} --from ${tree} --store ${store}`));
  rmSync(dst, { recursive: true, force: true });
  if (i > 0) await $`node ${CLI} discard s${i} --store ${store}`;
}

// Checkpoint of an unchanged session versus sha256sum of the same files with two workers.
const root = (await $`node ${CLI} path s0 --store ${store}`).stdout.trim();
const sha: number[] = [];
const checkpoint: number[] = [];
for (let i = 0; i < rounds; i++) {
  sha.push(await time(() => $({ cwd: root })`find . -type f -print0 | xargs -0 -P2 sha256sum > /dev/null`));
  checkpoint.push(await time(() => $`node ${CLI} checkpoint s0 --store ${store}`));
}
await $`node ${CLI} discard s0 --store ${store}`;

const ratio = (a: number[], b: number[]) => median(a.map((x, i) => x / b[i]!)) ?? NaN;
const row = (name: string, xs: number[], base?: number[], baseName?: string) =>
  `${name.padEnd(34)} ${formatDuration(median(xs), 3).padStart(9)}   ${base ? `${ratio(xs, base).toFixed(2)}x ${baseName}` : ''}`;
console.log('\nmedians (paired ratio = median of per-round ratios)');
console.log(row('cp -a --reflink=never', cp));
console.log(row('pdb-env create (unchanged source)', create, cp, 'cp -a --reflink=never   (target <= 1.3x)'));
console.log(row('find | xargs -P2 sha256sum', sha));
console.log(row('pdb-env checkpoint (unchanged)', checkpoint, sha, 'sha256sum -P2            (target <= 1.5x)'));
console.log(`first import: ${formatDuration(firstImport, 2)} (${(firstImport / (median(cp) ?? NaN)).toFixed(2)}x cp)`);
rmSync(scratch, { recursive: true, force: true });
rmSync(store, { recursive: true, force: true });

const userPath: BenchRow[] = [];
const wanted = values['user-path'] === 'none' ? [] : values['user-path'].split(',').filter(Boolean);
const report = wanted.length
  ? (JSON.parse((await $`node ${CLI} backends --json`).stdout) as { backends: Array<{ name: string; available: boolean }> })
  : null;
for (const backend of wanted) {
  if (!report!.backends.some((b) => b.name === backend && b.available)) {
    console.log(`\nuser path: ${backend} is not available here, skipped`);
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
    log: (l) => console.log(l),
  });
  console.log(`\nuser path, ${countEntries(tree)} entries (paired ratio = median of per-round ratios)\n${r.lines.join('\n')}`);
  userPath.push(...r.rows);
  for (const d of [ustore, join(work, `scratch-${backend}`)]) await $`rm -rf ${d}`;
}

const receiptFile = await writeBenchReceipt(start, {
  benchmark: 'full-copy',
  command: `npm run bench:full-copy -- --rounds ${rounds}${values.tree ? ' --tree <dir>' : ''} --user-path ${values['user-path']}`,
  params: {
    rounds,
    tree: values.tree
      ? 'given with --tree'
      : 'node_modules of next@16, react@19, typescript@5.9.3, jest@30, vite@8.3.8, vitest@4.1.12, eslint@9, webpack@5, @babel/core@7',
    files,
    bytes,
    filesystem: fs,
    firstImportMs: Math.round(firstImport),
  },
  results: [
    benchRow('cp -a --reflink=never', '', cp),
    benchRow('pdb-env create (unchanged source)', '', create, { 'cp -a --reflink=never': cp }),
    benchRow('find | xargs -P2 sha256sum', '', sha),
    benchRow('pdb-env checkpoint (unchanged)', '', checkpoint, { 'find | xargs -P2 sha256sum': sha }),
    ...userPath,
  ],
});
console.log(`receipt: ${receiptFile}`);
