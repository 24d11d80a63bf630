#!/usr/bin/env node
// Start-up before and after, in one run: `pdb-env --version`, `pdb-env list` and a plain `pdb-env
// checkpoint NAME` (one changed file each round, on a session of a small tree) through the
// bin/pdb-env of another install (--before: a built copy of the repository at an earlier commit)
// and of this tree. Each side has its own store, made by its own pdb-env; rounds are interleaved,
// the side that goes first alternating, so machine noise hits both. Medians per side, the median
// of per-round ratios (after / before), and a path-free receipt.
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { packageFile } from '../../model/paths.js';
import { formatDuration, scriptArgs } from '../lib.js';
import { benchRow, startBenchReceipt, writeBenchReceipt, type BenchGoal, type BenchRow } from './bench-receipt.js';

const USAGE = 'usage: node dist/scripts/bench/startup.js --before DIR [--rounds 21] [--limit 1.05] [--out receipts/bench]';
const { values } = scriptArgs(USAGE, {
  before: { type: 'string' },
  rounds: { type: 'string', default: '21' },
  limit: { type: 'string', default: '1.05' },
  out: { type: 'string', default: packageFile('receipts', 'bench') },
});
if (!values.before) {
  console.error(`--before DIR is required: a built copy of the repository to compare with\n\n${USAGE}`);
  process.exit(2);
}
const rounds = Number(values.rounds);
// "No slower" within the noise of a process start: a side may take up to this ratio of the other's time.
const limit = Number(values.limit);
if (!Number.isInteger(rounds) || rounds < 1 || !(limit >= 1))
  throw new Error(`--rounds must be a whole number >= 1 and --limit >= 1\n${USAGE}`);

type Side = 'before' | 'after';
const BIN: Record<Side, string> = { before: join(resolve(values.before), 'bin', 'pdb-env'), after: packageFile('bin', 'pdb-env') };
if (!existsSync(BIN.before)) throw new Error(`${BIN.before} is missing: --before names a repository copy with its bin/ and a built dist/`);

const work = mkdtempSync(join(tmpdir(), 'pdb-env-startup-'));
const store = (side: Side) => join(work, `store-${side}`);
const session = (side: Side) => join(store(side), 'sessions', 's', 'root');

function run(side: Side, args: string[]): { ms: number; stdout: string } {
  const t0 = performance.now();
  const r = spawnSync(BIN[side], args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${side}: pdb-env ${args.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr.trim()}`);
  return { ms, stdout: r.stdout };
}

/** A small tree: twenty files in a few directories, and a symlink. */
function makeTree(dir: string): void {
  for (let d = 0; d < 4; d++) {
    mkdirSync(join(dir, 'src', `m${d}`), { recursive: true });
    for (let f = 0; f < 5; f++) writeFileSync(join(dir, 'src', `m${d}`, `f${f}.js`), `export const v = ${d * 5 + f};\n`);
  }
  writeFileSync(join(dir, 'package.json'), '{"name":"startup-bench","version":"1.0.0"}\n');
}

const COMMANDS: Array<{ name: string; args: (side: Side) => string[]; before?: (side: Side, round: number) => void }> = [
  { name: 'pdb-env --version', args: () => ['--version'] },
  { name: 'pdb-env list', args: (side) => ['list', '--store', store(side)] },
  {
    name: 'pdb-env checkpoint NAME (1 changed file)',
    args: (side) => ['checkpoint', 's', '--store', store(side)],
    before: (side, round) => appendFileSync(join(session(side), 'src', 'm0', 'f0.js'), `// round ${round}\n`),
  },
];

/** Whether each side runs its bundles (its doctor says so), for the receipt: a comparison of modules would say little. */
function bundles(side: Side): string {
  const doctor = JSON.parse(run(side, ['doctor', '--store', store(side), '--json']).stdout) as Record<string, { bundled?: boolean }>;
  return `commands ${doctor.cliBundle?.bundled ? 'bundle' : 'modules'}, checkpoint ${doctor.checkpointBundle?.bundled ? 'bundle' : 'modules'}`;
}

try {
  const tree = join(work, 'tree');
  makeTree(tree);
  for (const side of ['before', 'after'] as const)
    run(side, ['create', 's', '--from', tree, '--store', store(side), '--backend', 'full-copy']);
  const sides = { before: bundles('before'), after: bundles('after') };
  console.log(`before: ${sides.before}; after: ${sides.after}; ${rounds} interleaved rounds after one warm-up`);
  for (const side of ['before', 'after'] as const)
    if (sides[side].includes('modules'))
      console.log(`WARNING: the ${side} side runs modules, not its bundles (its doctor says why): the comparison is not of what users run`);
  const start = await startBenchReceipt(work, resolve(values.out));
  const samples = new Map(COMMANDS.map((c) => [c.name, { before: [] as number[], after: [] as number[] }]));
  for (let round = 0; round <= rounds; round++) {
    const order: Side[] = round % 2 === 0 ? ['before', 'after'] : ['after', 'before'];
    for (const c of COMMANDS)
      for (const side of order) {
        c.before?.(side, round);
        const { ms } = run(side, c.args(side));
        if (round > 0) samples.get(c.name)![side].push(ms); // round 0 warms the page cache
      }
  }
  const results: BenchRow[] = [];
  const goals: BenchGoal[] = [];
  for (const c of COMMANDS) {
    const s = samples.get(c.name)!;
    const after = benchRow('after', c.name, s.after, { before: s.before });
    results.push(benchRow('before', c.name, s.before), after);
    const ratio = after.ratios.before!;
    goals.push({
      goal: `${c.name} no slower than before`,
      group: c.name,
      measured: 'after',
      baseline: 'before',
      direction: 'at-most',
      limit,
      ratio: Math.round(ratio * 1000) / 1000,
      met: ratio <= limit,
    });
    console.log(
      `${c.name.padEnd(42)} before ${formatDuration(results.at(-2)!.medianMs)}  after ${formatDuration(after.medianMs)}  after/before ${ratio.toFixed(3)}  ${ratio <= limit ? 'MET' : 'NOT MET'} (<= ${limit})`,
    );
  }
  const beforeCommit = spawnSync('git', ['-C', resolve(values.before), 'rev-parse', 'HEAD'], { encoding: 'utf8' }).stdout.trim() || null;
  const file = await writeBenchReceipt(start, {
    benchmark: 'startup',
    command: `node dist/scripts/bench/startup.js --before DIR --rounds ${rounds} --limit ${limit}`,
    params: {
      rounds,
      limit,
      beforeCommit,
      beforeRuns: sides.before,
      afterRuns: sides.after,
      nodeExtraCaCerts: process.env.NODE_EXTRA_CA_CERTS ? 'set' : 'unset',
    },
    results,
    goals,
  });
  console.log(`receipt: ${file}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
