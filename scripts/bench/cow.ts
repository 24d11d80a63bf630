#!/usr/bin/env node
// Copy-on-write create benchmark (issue 3): on loopback btrfs and XFS made for this run, times
// session create for each CoW backend against `cp -a --reflink=always`, `cp -a --reflink=never`
// and `git worktree add` of the same tree, in interleaved rounds (order shuffled per round from a
// recorded seed), and measures physical growth per session as the filesystem free-space delta
// after sync (not du, which cannot see shared extents).
//
// --tree DIR benchmarks a copy of an existing tree (a real node_modules) instead of a generated one;
// --npm-fixture DIR installs the pinned real node_modules into DIR once and uses it.
//
// Then, per filesystem, the user path (scripts/bench/user-path.ts, issue 13) of each CoW backend, as
// a user calls the CLI: create --from and --base against a find walk and `node -e 0`, list, and
// checkpoint against `git status --porcelain`, each a ratio to its same-round baseline
// (--user-path none skips it; --files 50000 or a 50,000-entry --tree for the create goal).
//
// Root only (losetup, mount). Everything it mounts is released at the end, also on failure.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { $ as zx } from 'zx';
import { getBackend, SessionService, type Backend, type BackendContext, type Digest, type Snapshot } from '../../index.js';
import { cowTable, cowTargets, type CowRow } from './cow-report.js';
import { generateTree, gitCommitAll, NPM_FIXTURE_DEPENDENCIES, prng, shuffle } from './cow-tree.js';
import { freeBytesAfterSync, isRoot, loopFsUnavailableReason, mountLoopFs, releaseLoopFs, type LoopFsType } from '../host-setup.js';
import { packageFile } from '../../model/paths.js';
import { benchRow, startBenchReceipt, writeBenchReceipt, type BenchGoal, type BenchRow } from './bench-receipt.js';
import { userPathRows } from './user-path.js';
import { allTrackedCopy } from './baselines.js';
import { evaluateGoals, goalLines } from './goals.js';
import { scannerInfo } from '../../model/scan/scanner.js';
import { CLI, median, scriptArgs } from '../lib.js';

const USAGE = `usage: node dist/scripts/bench/cow.js [--rounds 5] [--files 15200] [--mib 330] [--tree DIR | --npm-fixture DIR]
                                       [--wide-files N] [--fs btrfs,xfs] [--seed N] [--json FILE]
                                       [--btrfs-mkfs ARGS] [--btrfs-mount OPTIONS] [--out receipts/local]
                                       [--user-path all | none | reflink,overlay,btrfs-snapshot]`;
const { values } = scriptArgs(USAGE, {
  rounds: { type: 'string', default: '5' },
  files: { type: 'string', default: '15200' },
  mib: { type: 'string', default: '330' },
  /** Files of the wide tree for btrfs-snapshot; default (-1) is 10x the main tree's entries; 0 skips it. */
  'wide-files': { type: 'string', default: '-1' },
  fs: { type: 'string', default: 'btrfs,xfs' },
  seed: { type: 'string', default: String(Date.now() % 2147483647) },
  json: { type: 'string' },
  /** An existing tree to benchmark instead of a generated one (for example a real node_modules). */
  tree: { type: 'string' },
  /** Install the pinned real node_modules fixture into DIR (once) and benchmark it. */
  'npm-fixture': { type: 'string' },
  /** Extra mkfs.btrfs arguments and btrfs mount options (e.g. "-m single", "max_inline=0"), to test tuning. */
  'btrfs-mkfs': { type: 'string', default: '' },
  'btrfs-mount': { type: 'string' },
  /** Where the path-free benchmark receipt goes (receipts/local is ignored by git; receipts/bench keeps it). */
  out: { type: 'string', default: packageFile('receipts', 'local') },
  /** The CoW backends whose user path is measured (all: every one available on the filesystem). */
  'user-path': { type: 'string', default: 'all' },
});
const ROUNDS = Number(values.rounds);
const FILES = Number(values.files);
const MIB = Number(values.mib);
const WIDE_FILES = Number(values['wide-files']);
const FILESYSTEMS = values.fs.split(',') as LoopFsType[];
const SEED = Number(values.seed);
const BTRFS_MKFS = values['btrfs-mkfs'].split(' ').filter(Boolean);
const BTRFS_MOUNT = values['btrfs-mount'] ?? null;

const $ = zx({ verbose: false, quiet: true });

function log(msg: string): void {
  console.error(`[bench-cow ${new Date().toISOString().slice(11, 19)}] ${msg}`);
}

/** A timed case: create a session-like tree in `dir` (timed), then undo it (not timed). */
type Case = (dir: string) => Promise<() => Promise<void>>;

interface Prepared {
  svc: SessionService;
  src: string;
  ctx: BackendContext;
  snapshot: Snapshot;
  digest: Digest;
  backends: string[];
  /** Each of `backends`, loaded before anything is timed. */
  loaded: Map<string, Backend>;
  entries: number;
  baseBytes: number;
}

const fileBytes = (snapshot: Snapshot) => snapshot.entries.reduce((n, e) => n + (e.kind === 'file' ? e.size : 0), 0);

/** The tree on the mounted filesystem, committed for git, imported, with every CoW base made. */
async function prepare(fsType: LoopFsType, mnt: string, tree: string | null): Promise<Prepared> {
  const src = join(mnt, 'src');
  if (tree) {
    // A project (package.json at its top) is the source itself; a bare node_modules goes in one.
    const project = existsSync(join(tree, 'package.json'));
    log(`${fsType}: copying the given ${project ? 'project' : 'tree'} (without its .git)`);
    mkdirSync(src, { recursive: true });
    await $`cp -a --reflink=never ${tree} ${project ? join(mnt, 'src-copy') : join(src, 'node_modules')}`;
    if (project) {
      rmSync(src, { recursive: true, force: true });
      await $`mv ${join(mnt, 'src-copy')} ${src}`;
      rmSync(join(src, '.git'), { recursive: true, force: true });
    }
  } else {
    log(`${fsType}: generating ${FILES} files / ${MIB} MiB`);
    generateTree(src, FILES, MIB, SEED);
  }
  log(`${fsType}: git add + commit (for the git worktree baseline)`);
  await gitCommitAll(src);
  const svc = await SessionService.open(join(mnt, 'store'), { create: true });
  log(`${fsType}: importing into the store`);
  const { snapshot, digest } = await svc.importSource(src);
  const ctx = svc.backendContext(src);
  const backends = ['reflink', 'overlay', ...(fsType === 'btrfs' ? ['btrfs-snapshot'] : [])];
  const loaded = new Map<string, Backend>();
  for (const name of backends) {
    const backend = await getBackend(name);
    loaded.set(name, backend);
    const p = await backend.probe(ctx);
    if (!p.available) throw new Error(`${name} unavailable on ${fsType}: ${p.detail}`);
    log(`${fsType}: materializing the ${name} base`);
    await backend.materializeBase(ctx, snapshot, digest);
  }
  return { svc, src, ctx, snapshot, digest, backends, loaded, entries: snapshot.entries.length, baseBytes: fileBytes(snapshot) };
}

/** Every case of one filesystem: the CoW backends, both cp baselines and git worktree add. */
function cases(p: Prepared): Record<string, Case> {
  const treeBase = join(p.svc.store.paths.bases, p.digest.slice(7), 'tree');
  const backendCase =
    (name: string): Case =>
    async (dir) => {
      const root = join(dir, 'root');
      const backend = p.loaded.get(name)!;
      const r = await backend.createSession(p.ctx, p.snapshot, p.digest, root, dir);
      return () => backend.release(p.ctx, root, dir, r.state);
    };
  const none = async () => {};
  return {
    ...Object.fromEntries(p.backends.map((name) => [name, backendCase(name)])),
    'cp --reflink=always': async (dir) => {
      await $`cp -a --reflink=always ${treeBase} ${join(dir, 'root')}`;
      return none;
    },
    'cp --reflink=never': async (dir) => {
      await $`cp -a --reflink=never ${treeBase} ${join(dir, 'root')}`;
      return none;
    },
    // Process start alone: what an O(1) create is judged against.
    'node -e 0': async () => {
      await $`node -e 0`;
      return none;
    },
    'git worktree add': async (dir) => {
      const root = join(dir, 'root');
      await $({ cwd: p.src })`git worktree add -q --detach ${root} HEAD`;
      return async () => {
        await $({ cwd: p.src })`git worktree remove --force ${root}`;
        await $({ cwd: p.src })`git worktree prune`;
      };
    },
  };
}

interface Samples {
  ms: number[];
  growth: number[];
}

/** One timed create with the free-space delta around it; the undo and removal are not timed. */
async function measure(mnt: string, dir: string, create: Case, into: Samples): Promise<void> {
  mkdirSync(dir);
  const before = await freeBytesAfterSync(mnt);
  const t0 = performance.now();
  const release = await create(dir);
  into.ms.push(performance.now() - t0);
  into.growth.push(before - (await freeBytesAfterSync(mnt)));
  await release();
  rmSync(dir, { recursive: true, force: true });
  await freeBytesAfterSync(mnt);
}

function toRow(fsType: string, backend: string, entries: number, baseBytes: number, s: Samples): CowRow {
  return {
    fs: fsType,
    tree: `${entries} entries, ${(baseBytes / 1e6).toFixed(0)} MB`,
    entries,
    baseBytes,
    backend,
    n: s.ms.length,
    medianMs: median(s.ms) ?? NaN,
    minMs: Math.min(...s.ms),
    medianGrowthBytes: median(s.growth) ?? NaN,
    samplesMs: s.ms.map((x) => Math.round(x * 10) / 10),
    growthBytes: s.growth,
  };
}

/** btrfs-snapshot on a tree with 10x the entries: create must stay near constant. */
async function wideTreeRow(p: Prepared, mnt: string, sessions: string): Promise<CowRow> {
  const wide = join(mnt, 'src-wide');
  const wideFiles = WIDE_FILES > 0 ? WIDE_FILES : p.entries * 10;
  log(`btrfs: generating the wide tree (${wideFiles} files)`);
  generateTree(wide, wideFiles, Math.round(wideFiles / 1000), SEED + 1);
  const imported = await p.svc.importSource(wide);
  const wideCtx = p.svc.backendContext(wide);
  log('btrfs: materializing the wide base subvolume');
  const snap = await getBackend('btrfs-snapshot');
  await snap.materializeBase(wideCtx, imported.snapshot, imported.digest);
  const s: Samples = { ms: [], growth: [] };
  for (let round = 0; round < ROUNDS; round++) {
    await measure(
      mnt,
      join(sessions, `w${round}`),
      async (dir) => {
        const root = join(dir, 'root');
        await snap.createSession(wideCtx, imported.snapshot, imported.digest, root, dir);
        return () => snap.release(p.ctx, root, dir, {});
      },
      s,
    );
  }
  return toRow('btrfs', 'btrfs-snapshot (10x entries)', imported.snapshot.entries.length, fileBytes(imported.snapshot), s);
}

/** One filesystem: prepare, then ROUNDS interleaved rounds of every case. Returns rows for the table. */
async function benchFs(fsType: LoopFsType, work: string, rand: () => number, tree: string | null): Promise<CowRow[]> {
  const made = await mountLoopFs({
    fsType,
    image: join(work, `${fsType}.img`),
    mountPoint: join(work, `mnt-${fsType}`),
    sizeMiB: 8192,
    ...(fsType === 'btrfs' ? { mkfsArgs: BTRFS_MKFS, mountOptions: BTRFS_MOUNT } : {}),
  });
  const mnt = made.mountPoint;
  try {
    const p = await prepare(fsType, mnt, tree);
    const sessions = join(mnt, 'bench-sessions');
    mkdirSync(sessions, { recursive: true });
    const all = cases(p);
    const samples = Object.fromEntries(Object.keys(all).map((k) => [k, { ms: [], growth: [] } as Samples]));
    let i = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const order = shuffle(Object.keys(all), rand);
      for (const name of order) await measure(mnt, join(sessions, `s${i++}`), all[name]!, samples[name]!);
      log(`${fsType}: round ${round + 1}/${ROUNDS} done (${order.join(', ')})`);
    }
    const rows = Object.entries(samples).map(([name, s]) => toRow(fsType, name, p.entries, p.baseBytes, s));
    if (fsType === 'btrfs' && WIDE_FILES !== 0) rows.push(await wideTreeRow(p, mnt, sessions));
    await userPath(fsType, mnt, p);
    return rows;
  } finally {
    await releaseLoopFs(made);
  }
}

/** User-path rows of every run, for the receipt. */
const userPathResults: BenchRow[] = [];
const userPathLines: string[] = [];

/** The user path of each chosen CoW backend on this filesystem, each with a store of its own. */
async function userPath(fsType: LoopFsType, mnt: string, p: Prepared): Promise<void> {
  const chosen = values['user-path'] === 'all' ? p.backends : values['user-path'] === 'none' ? [] : values['user-path'].split(',');
  if (!chosen.some((b) => p.backends.includes(b))) return;
  log(`${fsType}: an all-tracked git copy of the tree (the git status baseline of every backend)`);
  const git = await allTrackedCopy(p.src, join(mnt, 'user-path-git-tree'));
  for (const backend of chosen.filter((b) => p.backends.includes(b))) {
    const store = join(mnt, `user-path-store-${backend}`);
    const scratch = join(mnt, `user-path-scratch-${backend}`);
    const r = await userPathRows({ tree: p.src, store, scratch, backend, rounds: ROUNDS, group: `${fsType}/${backend}`, git, log });
    userPathResults.push(...r.rows);
    userPathLines.push(...r.lines);
    await $`node ${CLI} gc --store ${store}`; // removes the bases (btrfs subvolumes need their own delete)
    for (const b of readdirSync(join(store, 'bases')).filter((n) => /^[0-9a-f]{64}$/.test(n)))
      for (const f of readdirSync(join(store, 'bases', b)))
        if (f === 'btrfs-subvolume') await $`btrfs subvolume delete ${join(store, 'bases', b, f)}`;
    rmSync(store, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
  }
  await $`rm -rf ${git.dir}`;
}

/** The tree to benchmark: --tree, the npm fixture (installed once), or null for a generated one. */
async function chooseTree(): Promise<string | null> {
  const fixture = values['npm-fixture'];
  if (!fixture) return values.tree ?? null;
  mkdirSync(fixture, { recursive: true });
  if (!existsSync(join(fixture, 'node_modules'))) {
    log(`installing the npm fixture (${Object.keys(NPM_FIXTURE_DEPENDENCIES).length} pinned dependencies)`);
    writeFileSync(
      join(fixture, 'package.json'),
      `${JSON.stringify({ name: 'nm-fixture', private: true, dependencies: NPM_FIXTURE_DEPENDENCIES })}\n`,
    );
    await $({ cwd: fixture })`npm install --no-audit --no-fund --ignore-scripts --loglevel=error`;
  }
  return join(fixture, 'node_modules');
}

async function main(): Promise<void> {
  if (!isRoot()) throw new Error('bench-cow needs root (losetup, mount)');
  const tree = await chooseTree();
  for (const fsType of FILESYSTEMS) {
    const why = await loopFsUnavailableReason(fsType);
    if (why) throw new Error(why);
  }
  const work = mkdtempSync(join(process.env.PDB_BENCH_DIR ?? '/var/tmp', 'pdb-bench-cow-'));
  const start = await startBenchReceipt(work, values.out);
  const rand = prng(SEED);
  const rows: CowRow[] = [];
  const started = performance.now();
  try {
    for (const fsType of FILESYSTEMS) rows.push(...(await benchFs(fsType, work, rand, tree)));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const cpu = (await $`sh -c ${"grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"}`.nothrow()).stdout.trim();
  const kernel = (await $`uname -r`).stdout.trim();
  const tuning = BTRFS_MKFS.length || BTRFS_MOUNT ? `, btrfs mkfs [${BTRFS_MKFS.join(' ')}] mount [${BTRFS_MOUNT ?? ''}]` : '';
  console.log(
    `bench-cow: seed ${SEED}, ${ROUNDS} interleaved rounds, kernel ${kernel}, ${cpu}, ${((performance.now() - started) / 1000) | 0} s total${tuning}`,
  );
  console.log(cowTable(rows));
  console.log('\ntargets (issue 3):');
  for (const [what, ok, value] of cowTargets(FILESYSTEMS, rows)) console.log(`  ${ok ? 'MET    ' : 'NOT MET'}  ${what}: ${value}`);
  if (values.json) writeFileSync(values.json, `${JSON.stringify({ seed: SEED, rounds: ROUNDS, kernel, rows }, null, 2)}\n`);
  if (userPathLines.length) console.log(`\nuser path (paired ratio = median of per-round ratios):\n${userPathLines.join('\n')}`);
  const goals = evaluateGoals(userPathResults, (group) => group.split('/').pop()!);
  if (goals.length) console.log(`\ngoals (issue 26), one run, same rounds:\n${goalLines(goals).join('\n')}`);
  console.log(`receipt: ${await writeCowReceipt(start, rows, goals)}`);
}

/** The path-free receipt of the run: one row per filesystem x case, ratios to the cp and git worktree baselines of its filesystem. */
function writeCowReceipt(start: Awaited<ReturnType<typeof startBenchReceipt>>, rows: CowRow[], goals: BenchGoal[]): Promise<string> {
  const baselines = ['cp --reflink=always', 'cp --reflink=never', 'git worktree add', 'node -e 0'];
  const samples = (fs: string, name: string) => rows.find((r) => r.fs === fs && r.backend === name)?.samplesMs;
  return writeBenchReceipt(start, {
    benchmark: 'cow',
    command: `npm run bench:cow -- --rounds ${ROUNDS} --fs ${FILESYSTEMS.join(',')} --seed ${SEED}${values.tree ? ' --tree <dir>' : ''}${values['npm-fixture'] ? ' --npm-fixture <dir>' : ''} --user-path ${values['user-path']}`,
    params: {
      rounds: ROUNDS,
      seed: SEED,
      files: FILES,
      mib: MIB,
      wideFiles: WIDE_FILES,
      btrfsMkfs: BTRFS_MKFS.join(' '),
      btrfsMount: BTRFS_MOUNT,
      scanner: scannerInfo().scanner,
      nodeExtraCaCerts: process.env.NODE_EXTRA_CA_CERTS ? 'set' : 'unset',
    },
    results: rows
      .map((r) => {
        const against: Record<string, number[]> = {};
        for (const b of baselines) {
          const xs = samples(r.fs, b);
          if (xs && b !== r.backend && r.samplesMs.length === xs.length) against[b] = xs;
        }
        return benchRow(r.backend, r.fs, r.samplesMs, against, {
          tree: r.tree,
          entries: r.entries,
          baseBytes: r.baseBytes,
          medianGrowthBytes: r.medianGrowthBytes,
          minMs: r.minMs,
        });
      })
      .concat(userPathResults),
    goals,
  });
}

await main();
