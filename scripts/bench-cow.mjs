#!/usr/bin/env node
// Copy-on-write create benchmark (issue 3): on loopback btrfs and XFS made for this run, times
// session create for each CoW backend against `cp -a --reflink=always`, `cp -a --reflink=never`
// and `git worktree add` of the same tree, in interleaved rounds (order shuffled per round from a
// recorded seed), and measures physical growth per session as the filesystem free-space delta
// after sync (not du, which cannot see shared extents).
//
//   npx tsc -p . && node scripts/bench-cow.mjs [--rounds 5] [--files 15200] [--mib 330] [--tree DIR | --npm-fixture DIR]
//                                              [--wide-files N] [--fs btrfs,xfs] [--seed N] [--json FILE]
//
// --tree DIR benchmarks a copy of an existing tree (a real node_modules) instead of a generated one;
// --npm-fixture DIR installs the pinned real node_modules below into DIR once and uses it.
//
// Root only (losetup, mount). Everything it mounts is released at the end, also on failure.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { $ } from 'zx';
import { freeBytesAfterSync, isRoot, mountLoopFs, releaseLoopFs, loopFsUnavailableReason } from './host-setup.mjs';

$.verbose = false;
$.quiet = true;

const { getBackend } = await import('../dist/backends/registry.js');
const { SessionService } = await import('../dist/sessions/service.js');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}
const ROUNDS = Number(arg('rounds', 5));
const FILES = Number(arg('files', 15200));
const MIB = Number(arg('mib', 330));
/** Files of the wide tree for btrfs-snapshot; default (-1) is 10x the main tree's entries; 0 skips it. */
const WIDE_FILES = Number(arg('wide-files', -1));
const FILESYSTEMS = String(arg('fs', 'btrfs,xfs')).split(',');
const SEED = Number(arg('seed', Date.now() % 2147483647));
const JSON_OUT = arg('json', null);
/** An existing tree to benchmark instead of a generated one (for example a real node_modules). */
let TREE = arg('tree', null);
/** Install the pinned real node_modules fixture below into DIR (once) and benchmark it. */
const NPM_FIXTURE = arg('npm-fixture', null);

/** A real node_modules of about 29,000 files and 600 MB (npm 11, --ignore-scripts), pinned. */
const NPM_FIXTURE_DEPENDENCIES = {
  next: '16.0.0',
  react: '19.2.0',
  'react-dom': '19.2.0',
  typescript: '5.9.3',
  vite: '7.1.12',
  jest: '30.2.0',
  '@babel/core': '7.28.5',
  eslint: '9.38.0',
  webpack: '5.102.1',
  '@types/node': '20.19.43',
  lodash: '4.17.21',
  rxjs: '7.8.2',
  '@mui/material': '7.3.4',
  '@emotion/react': '11.14.0',
  '@emotion/styled': '11.14.1',
  'aws-sdk': '2.1692.0',
};
/** Extra mkfs.btrfs arguments and btrfs mount options (e.g. "-m single", "max_inline=0"), to test tuning. */
const BTRFS_MKFS = String(arg('btrfs-mkfs', '')).split(' ').filter(Boolean);
const BTRFS_MOUNT = arg('btrfs-mount', null);

function prng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

/** Source-like bytes: printable text from a fixed random pool, sliced at varying offsets. */
function makePool(bytes, rand) {
  const alphabet = Buffer.from('abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789(){};=.,\n');
  const b = Buffer.allocUnsafe(bytes);
  for (let i = 0; i < bytes; i++) b[i] = alphabet[Math.floor(rand() * alphabet.length)];
  return b;
}

/**
 * A node_modules-shaped tree: packages of small source files plus a few large binaries, about
 * `files` files and `mib` MiB. Deterministic for a given seed.
 */
function generateTree(root, files, mib, seed) {
  const rand = prng(seed);
  const pool = makePool(48 * 1024 * 1024, rand);
  const large = Math.max(0, Math.round((mib * 0.55) / 15));
  const largeBytes = 15 * 1024 * 1024;
  const smallFiles = files - large;
  const smallBudget = Math.max(smallFiles * 512, mib * 1024 * 1024 - large * largeBytes);
  const avg = smallBudget / smallFiles;
  let written = 0;
  const perPkg = 40;
  let n = 0;
  for (let p = 0; n < smallFiles; p++) {
    const pkg = join(root, 'node_modules', `pkg-${String(p).padStart(5, '0')}`);
    mkdirSync(join(pkg, 'lib', 'internal'), { recursive: true });
    for (let f = 0; f < perPkg && n < smallFiles; f++, n++) {
      // Skewed sizes: many tiny files, some tens of KiB (mean ~ avg).
      const size = Math.max(16, Math.min(pool.length - 1, Math.round(-Math.log(1 - rand()) * avg)));
      const off = Math.floor(rand() * (pool.length - size));
      const name = f === 0 ? 'package.json' : f === 1 ? 'README.md' : f < 25 ? `lib/m${f}.js` : `lib/internal/m${f}.d.ts`;
      writeFileSync(join(pkg, name), pool.subarray(off, off + size));
      written += size;
    }
  }
  mkdirSync(join(root, 'node_modules', '.bin-native'), { recursive: true });
  for (let i = 0; i < large; i++) {
    const buf = Buffer.allocUnsafe(largeBytes);
    for (let o = 0; o < largeBytes; o += 1024 * 1024)
      pool.copy(
        buf,
        o,
        Math.floor(rand() * (pool.length - 1024 * 1024)),
        Math.floor(rand() * (pool.length - 1024 * 1024)) + Math.min(1024 * 1024, largeBytes - o),
      );
    writeFileSync(join(root, 'node_modules', '.bin-native', `native-${i}.node`), buf);
    written += largeBytes;
  }
  writeFileSync(join(root, 'package.json'), '{"name":"bench-fixture","private":true}\n');
  return { files: n + large + 1, bytes: written };
}

async function gitCommitAll(dir) {
  const env = { ...process.env, GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@b', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@b' };
  const r = await $({ cwd: dir, env })`sh -c ${'git init -q && git -c core.bigFileThreshold=1m add -A && git commit -q -m fixture'}`;
  return r.exitCode;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function shuffle(xs, rand) {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

function log(msg) {
  console.error(`[bench-cow ${new Date().toISOString().slice(11, 19)}] ${msg}`);
}

/**
 * One filesystem: build the tree, import it, materialize the bases, then ROUNDS interleaved
 * rounds of every case. Returns rows for the table.
 */
async function benchFs(fsType, work, rand) {
  const made = await mountLoopFs({
    fsType,
    image: join(work, `${fsType}.img`),
    mountPoint: join(work, `mnt-${fsType}`),
    sizeMiB: 8192,
    ...(fsType === 'btrfs' ? { mkfsArgs: BTRFS_MKFS, mountOptions: BTRFS_MOUNT } : {}),
  });
  const mnt = made.mountPoint;
  const results = [];
  try {
    const src = join(mnt, 'src');
    let tree;
    if (TREE) {
      log(`${fsType}: copying the given tree`);
      mkdirSync(src, { recursive: true });
      await $`cp -a --reflink=never ${TREE} ${join(src, 'node_modules')}`;
      tree = { files: null, bytes: null };
    } else {
      log(`${fsType}: generating ${FILES} files / ${MIB} MiB`);
      tree = generateTree(src, FILES, MIB, SEED);
    }
    log(`${fsType}: git add + commit (for the git worktree baseline)`);
    await gitCommitAll(src);
    const svc = await SessionService.open(join(mnt, 'store'), { create: true });
    log(`${fsType}: importing into the store`);
    const imported = await svc.importSource(src);
    const { snapshot, digest } = imported;
    const baseBytes = snapshot.entries.reduce((n, e) => n + (e.kind === 'file' ? e.size : 0), 0);
    const entries = snapshot.entries.length;
    const ctx = svc.backendContext(src);
    const backends = ['reflink', 'overlay', ...(fsType === 'btrfs' ? ['btrfs-snapshot'] : [])];
    for (const name of backends) {
      const p = await getBackend(name).probe(ctx);
      if (!p.available) throw new Error(`${name} unavailable on ${fsType}: ${p.detail}`);
      log(`${fsType}: materializing the ${name} base`);
      await getBackend(name).materializeBase(ctx, snapshot, digest);
    }
    const treeBase = join(svc.store.paths.bases, digest.slice(7), 'tree');
    const sessions = join(mnt, 'bench-sessions');
    mkdirSync(sessions, { recursive: true });

    /** Each case: create (timed) and remove (not timed). */
    const cases = {
      ...Object.fromEntries(
        backends.map((name) => [
          name,
          {
            async create(dir) {
              const root = join(dir, 'root');
              const r = await getBackend(name).createSession(ctx, snapshot, digest, root, dir);
              return async () => {
                await getBackend(name).release(ctx, root, dir, r.state);
              };
            },
          },
        ]),
      ),
      'cp --reflink=always': {
        async create(dir) {
          await $`cp -a --reflink=always ${treeBase} ${join(dir, 'root')}`;
          return async () => {};
        },
      },
      'cp --reflink=never': {
        async create(dir) {
          await $`cp -a --reflink=never ${treeBase} ${join(dir, 'root')}`;
          return async () => {};
        },
      },
      'git worktree add': {
        async create(dir) {
          const root = join(dir, 'root');
          await $({ cwd: src })`git worktree add -q --detach ${root} HEAD`;
          return async () => {
            await $({ cwd: src })`git worktree remove --force ${root}`;
            await $({ cwd: src })`git worktree prune`;
          };
        },
      },
    };
    const samples = Object.fromEntries(Object.keys(cases).map((k) => [k, { ms: [], growth: [] }]));
    let i = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const order = shuffle(Object.keys(cases), rand);
      for (const name of order) {
        const dir = join(sessions, `s${i++}`);
        mkdirSync(dir);
        const before = await freeBytesAfterSync(mnt);
        const t0 = performance.now();
        const release = await cases[name].create(dir);
        const ms = performance.now() - t0;
        const after = await freeBytesAfterSync(mnt);
        samples[name].ms.push(ms);
        samples[name].growth.push(before - after);
        await release();
        rmSync(dir, { recursive: true, force: true });
        await freeBytesAfterSync(mnt);
      }
      log(`${fsType}: round ${round + 1}/${ROUNDS} done (${order.join(', ')})`);
    }
    for (const [name, s] of Object.entries(samples))
      results.push({
        fs: fsType,
        tree: `${entries} entries, ${(baseBytes / 1e6).toFixed(0)} MB`,
        entries,
        baseBytes,
        backend: name,
        n: s.ms.length,
        medianMs: median(s.ms),
        minMs: Math.min(...s.ms),
        medianGrowthBytes: median(s.growth),
        samplesMs: s.ms.map((x) => Math.round(x * 10) / 10),
        growthBytes: s.growth,
      });

    if (fsType === 'btrfs' && WIDE_FILES !== 0) {
      // btrfs-snapshot on a tree with 10x the entries: create must stay near constant.
      const wide = join(mnt, 'src-wide');
      const wideFiles = WIDE_FILES > 0 ? WIDE_FILES : entries * 10;
      log(`btrfs: generating the wide tree (${wideFiles} files)`);
      generateTree(wide, wideFiles, Math.round(wideFiles / 1000), SEED + 1);
      const wideImport = await svc.importSource(wide);
      log('btrfs: materializing the wide base subvolume');
      await getBackend('btrfs-snapshot').materializeBase(svc.backendContext(wide), wideImport.snapshot, wideImport.digest);
      const ms = [];
      const growth = [];
      for (let round = 0; round < ROUNDS; round++) {
        const dir = join(sessions, `w${round}`);
        mkdirSync(dir);
        const root = join(dir, 'root');
        const before = await freeBytesAfterSync(mnt);
        const t0 = performance.now();
        await getBackend('btrfs-snapshot').createSession(svc.backendContext(wide), wideImport.snapshot, wideImport.digest, root, dir);
        ms.push(performance.now() - t0);
        growth.push(before - (await freeBytesAfterSync(mnt)));
        await getBackend('btrfs-snapshot').release(ctx, root, dir, {});
        rmSync(dir, { recursive: true, force: true });
      }
      const wideBytes = wideImport.snapshot.entries.reduce((n, e) => n + (e.kind === 'file' ? e.size : 0), 0);
      results.push({
        fs: fsType,
        tree: `${wideImport.snapshot.entries.length} entries, ${(wideBytes / 1e6).toFixed(0)} MB`,
        entries: wideImport.snapshot.entries.length,
        baseBytes: wideBytes,
        backend: 'btrfs-snapshot (10x entries)',
        n: ms.length,
        medianMs: median(ms),
        minMs: Math.min(...ms),
        medianGrowthBytes: median(growth),
        samplesMs: ms.map((x) => Math.round(x * 10) / 10),
        growthBytes: growth,
      });
    }
    return { results, tree };
  } finally {
    await releaseLoopFs(made);
  }
}

function fmtBytes(b) {
  const a = Math.abs(b);
  const s =
    a >= 1e9 ? `${(a / 1e9).toFixed(2)} GB` : a >= 1e6 ? `${(a / 1e6).toFixed(1)} MB` : a >= 1e3 ? `${(a / 1e3).toFixed(0)} kB` : `${a} B`;
  return b < 0 ? `-${s}` : s;
}

function table(rows) {
  const header = [
    'fs',
    'backend',
    'tree',
    'n',
    'create median',
    'x cp reflink=always',
    'x cp reflink=never',
    'git wt / this',
    'growth/session',
    '% of base',
  ];
  const lines = [header];
  for (const r of rows) {
    const base = (name) => rows.find((x) => x.fs === r.fs && x.backend === name)?.medianMs;
    lines.push([
      r.fs,
      r.backend,
      r.tree,
      String(r.n),
      `${(r.medianMs / 1000).toFixed(3)} s`,
      `${(r.medianMs / base('cp --reflink=always')).toFixed(2)}x`,
      `${(r.medianMs / base('cp --reflink=never')).toFixed(3)}x`,
      `${(base('git worktree add') / r.medianMs).toFixed(1)}x`,
      fmtBytes(r.medianGrowthBytes),
      `${((100 * r.medianGrowthBytes) / r.baseBytes).toFixed(3)}%`,
    ]);
  }
  const widths = header.map((_, i) => Math.max(...lines.map((l) => l[i].length)));
  return lines
    .map((l, j) => (j === 1 ? `${widths.map((w) => '-'.repeat(w)).join('  ')}\n` : '') + l.map((c, i) => c.padEnd(widths[i])).join('  '))
    .join('\n');
}

function targets(rows) {
  const out = [];
  const get = (fs, b) => rows.find((r) => r.fs === fs && r.backend === b);
  for (const fs of FILESYSTEMS) {
    const cpR = get(fs, 'cp --reflink=always');
    const git = get(fs, 'git worktree add');
    const rf = get(fs, 'reflink');
    if (rf && cpR)
      out.push([
        `${fs}: reflink <= 1.2x cp --reflink=always`,
        rf.medianMs / cpR.medianMs <= 1.2,
        `${(rf.medianMs / cpR.medianMs).toFixed(2)}x`,
      ]);
    if (rf)
      out.push([
        `${fs}: reflink growth <= 3%`,
        rf.medianGrowthBytes / rf.baseBytes <= 0.03,
        `${((100 * rf.medianGrowthBytes) / rf.baseBytes).toFixed(3)}%`,
      ]);
    const ov = get(fs, 'overlay');
    if (ov)
      out.push(
        [`${fs}: overlay <= 0.1 s`, ov.medianMs <= 100, `${(ov.medianMs / 1000).toFixed(3)} s`],
        [
          `${fs}: overlay growth <= 0.5%`,
          ov.medianGrowthBytes / ov.baseBytes <= 0.005,
          `${((100 * ov.medianGrowthBytes) / ov.baseBytes).toFixed(3)}%`,
        ],
      );
    const bs = get(fs, 'btrfs-snapshot');
    const bw = get(fs, 'btrfs-snapshot (10x entries)');
    if (bs)
      out.push(
        [`${fs}: btrfs-snapshot <= 0.5 s`, bs.medianMs <= 500, `${(bs.medianMs / 1000).toFixed(3)} s`],
        [
          `${fs}: btrfs-snapshot growth <= 0.5%`,
          bs.medianGrowthBytes / bs.baseBytes <= 0.005,
          `${((100 * bs.medianGrowthBytes) / bs.baseBytes).toFixed(3)}%`,
        ],
      );
    if (bw)
      out.push([
        `${fs}: btrfs-snapshot on 10x entries <= 2x the 0.5 s limit (1 s)`,
        bw.medianMs <= 1000,
        `${(bw.medianMs / 1000).toFixed(3)} s`,
      ]);
    if (bs && bw)
      out.push([
        `${fs}: btrfs-snapshot on 10x entries <= 2x the measured normal-tree time`,
        bw.medianMs <= 2 * bs.medianMs,
        `${(bw.medianMs / bs.medianMs).toFixed(2)}x`,
      ]);
    for (const cow of [rf, ov, bs].filter(Boolean)) {
      if (git)
        out.push([
          `${fs}: ${cow.backend} >= 20x faster than git worktree add`,
          git.medianMs / cow.medianMs >= 20,
          `${(git.medianMs / cow.medianMs).toFixed(1)}x`,
        ]);
    }
  }
  return out;
}

async function main() {
  if (!isRoot()) throw new Error('bench-cow needs root (losetup, mount)');
  if (NPM_FIXTURE) {
    mkdirSync(NPM_FIXTURE, { recursive: true });
    if (!existsSync(join(NPM_FIXTURE, 'node_modules'))) {
      log(`installing the npm fixture (${Object.keys(NPM_FIXTURE_DEPENDENCIES).length} pinned dependencies)`);
      writeFileSync(
        join(NPM_FIXTURE, 'package.json'),
        `${JSON.stringify({ name: 'nm-fixture', private: true, dependencies: NPM_FIXTURE_DEPENDENCIES })}\n`,
      );
      await $({ cwd: NPM_FIXTURE })`npm install --no-audit --no-fund --ignore-scripts --loglevel=error`;
    }
    TREE = join(NPM_FIXTURE, 'node_modules');
  }
  for (const fsType of FILESYSTEMS) {
    const why = await loopFsUnavailableReason(fsType);
    if (why) throw new Error(why);
  }
  const work = mkdtempSync(join(process.env.PDB_BENCH_DIR ?? '/var/tmp', 'pdb-bench-cow-'));
  const rand = prng(SEED);
  const rows = [];
  const started = performance.now();
  try {
    for (const fsType of FILESYSTEMS) rows.push(...(await benchFs(fsType, work, rand)).results);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const cpu = (await $`sh -c ${"grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"}`.nothrow()).stdout.trim();
  const kernel = (await $`uname -r`).stdout.trim();
  console.log(
    `bench-cow: seed ${SEED}, ${ROUNDS} interleaved rounds, kernel ${kernel}, ${cpu}, ${((performance.now() - started) / 1000) | 0} s total${BTRFS_MKFS.length || BTRFS_MOUNT ? `, btrfs mkfs [${BTRFS_MKFS.join(' ')}] mount [${BTRFS_MOUNT ?? ''}]` : ''}`,
  );
  console.log(table(rows));
  console.log('\ntargets (issue 3):');
  for (const [what, ok, value] of targets(rows)) console.log(`  ${ok ? 'MET    ' : 'NOT MET'}  ${what}: ${value}`);
  if (JSON_OUT) writeFileSync(JSON_OUT, `${JSON.stringify({ seed: SEED, rounds: ROUNDS, kernel, rows }, null, 2)}\n`);
}

await main();
