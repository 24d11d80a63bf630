#!/usr/bin/env node
// Which way of lstat'ing a tree's entries pays on this host (issue 26, item 3): the stat walk of
// --tree against its own index, unchanged (every entry lstat'ed, no directory read), by
//   - the JavaScript walk (lstatSync, one thread),
//   - lstat through libuv's thread pool (fs.promises.lstat, 256 at a time; UV_THREADPOOL_SIZE applies),
//   - the fs worker pool's way (two worker threads, lstatSync each, results posted back),
//   - the native walk with 1, 2 and 4 lstat threads.
// In-process, interleaved rounds; medians and ratios to the JavaScript walk of the same round.
import { lstatSync } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { allPaths } from '../../model/scan/index-columns.js';
import { nextColumns } from '../../model/scan/index-update.js';
import { nativeUnavailable, scanWalk } from '../../model/scan/scanner.js';
import { TreeIndex, indexHeader, rootSig } from '../../model/scan/tree-index.js';
import type { WalkInput } from '../../model/scan/tree-walk.js';
import { median, scriptArgs } from '../lib.js';
import { packageFile } from '../../model/paths.js';
import { benchRow, startBenchReceipt, writeBenchReceipt } from './bench-receipt.js';

const { values } = scriptArgs('usage: node dist/scripts/bench/lstat.js --tree DIR [--rounds 9] [--out receipts/local]', {
  tree: { type: 'string' },
  rounds: { type: 'string', default: '9' },
  out: { type: 'string', default: packageFile('receipts', 'local') },
});
if (!values.tree) throw new Error('--tree DIR is required');
const root = resolve(values.tree);
const input = (index: TreeIndex | null): WalkInput => ({
  root,
  excludeNames: new Set(),
  excludePaths: new Set(['.git', '.pdb', '.pdb-host']),
  index,
  dirRule: true,
});

// The tree's own index, recorded as if long ago: every entry trusted, so a walk reads no directory.
const raw = scanWalk(input(null), 'js');
raw.startedAtMs = Date.now() + 60_000;
const cols = nextColumns(null, raw, (e) => ({ digest: Buffer.alloc(32), size: e.size }), false);
const index = new TreeIndex(
  indexHeader(
    {
      snapshot: null,
      changeset: null,
      base: null,
      excludes: [],
      recordedAtMs: raw.startedAtMs,
      generation: '',
      source: null,
      root: rootSig(raw.root, raw.startedAtMs, false),
    },
    cols.n,
  ),
  cols,
);
const paths = allPaths(cols).map((p) => `${root}/${p}`);

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { lstatSync } = require('node:fs');
const out = new Float64Array(workerData.length * 4);
workerData.forEach((p, i) => { const s = lstatSync(p); out.set([s.ino, s.size, s.mtimeMs, s.ctimeMs], i * 4); });
parentPort.postMessage(out, [out.buffer]);`;

async function workers(n: number): Promise<void> {
  const per = Math.ceil(paths.length / n);
  await Promise.all(
    Array.from({ length: n }, (_, k) => {
      const w = new Worker(WORKER, { eval: true, workerData: paths.slice(k * per, (k + 1) * per) });
      return new Promise((done) => w.once('message', done)).then(() => w.terminate());
    }),
  );
}

async function libuv(): Promise<void> {
  for (let i = 0; i < paths.length; i += 256) await Promise.all(paths.slice(i, i + 256).map((p) => lstat(p)));
}

const nativeWith = (threads: number) => () => {
  process.env.PDB_ENV_SCAN_THREADS = String(threads);
  scanWalk(input(index), 'native');
};
const ways: Record<string, () => unknown> = {
  'JavaScript walk (lstatSync)': () => scanWalk(input(index), 'js'),
  'lstatSync loop, no walk': () => paths.forEach((p) => lstatSync(p)),
  'libuv thread pool (256 at a time)': libuv,
  'two worker threads': () => workers(2),
  ...(nativeUnavailable()
    ? {}
    : { 'native, 1 thread': nativeWith(1), 'native, 2 threads': nativeWith(2), 'native, 4 threads': nativeWith(4) }),
};
const start = await startBenchReceipt(root, resolve(values.out));
const samples: Record<string, number[]> = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
for (let r = 0; r < Number(values.rounds); r++)
  for (const [name, fn] of Object.entries(ways)) {
    const t0 = performance.now();
    await fn();
    samples[name]!.push(performance.now() - t0);
  }
const js = samples['JavaScript walk (lstatSync)']!;
console.log(`${cols.n} entries, ${values.rounds} interleaved rounds; medians, and the median ratio to the JavaScript walk`);
for (const [name, xs] of Object.entries(samples))
  console.log(
    `  ${name.padEnd(36)} ${(median(xs) ?? NaN).toFixed(1).padStart(8)} ms   ${(median(xs.map((x, i) => x / js[i]!)) ?? NaN).toFixed(2)}x`,
  );
const file = await writeBenchReceipt(start, {
  benchmark: 'lstat',
  command: `npm run bench:lstat -- --tree <dir> --rounds ${values.rounds}`,
  params: { rounds: Number(values.rounds), entries: cols.n, scanner: nativeUnavailable() ? 'js' : 'native' },
  results: Object.entries(samples).map(([name, xs]) => benchRow(name, 'in-process', xs, { 'JavaScript walk (lstatSync)': js })),
});
console.log(`receipt: ${file}`);
