// The user path (issue 13): the commands as a person or an agent calls them, each in a separate
// `pdb-env` process, paired in every round with the baseline it is judged against, measured in the
// same round so machine noise hits both sides:
//
//   create --from (unchanged source) and create --base   vs  a `find -printf` stat walk of the tree
//   create --from minus create --base                      vs  that walk          (goal <= 3x)
//   create --base (overlay, btrfs-snapshot)                vs  `node -e 0`        (goal <= 4x, 50,000 entries)
//   pdb-env list                                           vs  `node -e 0`        (goal <= 2.5x)
//   checkpoint with 0 and with 10 files changed            vs  `git status --porcelain`, warm index (goal <= 1.5x)
//   gc after 5 sessions wrote, checkpointed and discarded 20 MB each: store size before and after (goal within 5 MB), then verify
//
// bench-full-copy and bench-cow call it per backend; it returns receipt rows and prints ratios.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { $ as zx } from 'zx';
import { benchRow, type BenchRow } from './bench-receipt.js';
import { CLI, formatDuration, median } from './lib.js';

const $ = zx({ verbose: false, quiet: true });

export interface UserPathOptions {
  /** The tree a user would pass to `create --from` (not written to). */
  tree: string;
  /** A store for this measurement only (made here, removed by the caller). */
  store: string;
  /** Scratch space on the same filesystem (the git copy of the tree, sessions' data). */
  scratch: string;
  backend: string;
  rounds: number;
  /** The receipt rows' group, e.g. "full-copy" or "btrfs/overlay". */
  group: string;
  /** Also measure gc's reclaim (5 sessions x 20 MB). */
  gc?: boolean;
  log?: (line: string) => void;
}

async function time(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

/** Longer than the racy window: what was written before is trusted by a record made after. */
const settle = () => sleep(300);

const ratioOf = (xs: number[], base: number[]) => median(xs.map((x, i) => x / base[i]!).filter(Number.isFinite)) ?? NaN;

function line(name: string, xs: number[], base?: number[], baseName?: string, goal?: string): string {
  const r = base ? `${ratioOf(xs, base).toFixed(2)}x ${baseName}${goal ? ` (goal ${goal})` : ''}` : '';
  return `  ${name.padEnd(44)} ${formatDuration(median(xs), 3).padStart(9)}   ${r}`;
}

/** Every user-path measurement of one backend on one tree. */
export async function userPathRows(o: UserPathOptions): Promise<{ rows: BenchRow[]; lines: string[] }> {
  const log = o.log ?? (() => {});
  mkdirSync(o.scratch, { recursive: true });
  const pdb = (...args: string[]) => $`node ${CLI} ${args} --store ${o.store}`;
  log(`${o.group}: first import and a warm create (not timed)`);
  const base = JSON.parse((await pdb('create', 'warm', '--from', o.tree, '--backend', o.backend, '--json')).stdout).base as string;
  await pdb('discard', 'warm');
  await settle();
  const creates = await createRounds(o, pdb, base);
  const checkpoints = await checkpointRounds(o, pdb, base, log);
  const rows = [...creates.rows, ...checkpoints.rows];
  const lines = [`${o.group} (${o.backend}):`, ...creates.lines, ...checkpoints.lines];
  if (o.gc) {
    const g = await gcReclaim(o, pdb, log);
    rows.push(g.row);
    lines.push(g.line);
  }
  return { rows, lines };
}

type Pdb = (...args: string[]) => Promise<{ stdout: string }>;

async function createRounds(o: UserPathOptions, pdb: Pdb, base: string): Promise<{ rows: BenchRow[]; lines: string[] }> {
  const s = { find: [] as number[], node: [] as number[], list: [] as number[], from: [] as number[], base: [] as number[] };
  for (let i = 0; i < o.rounds; i++) {
    s.find.push(await time(() => $`find ${o.tree} -fprintf /dev/null ${'%i %s %T@ %C@ %m %p\n'}`));
    s.node.push(await time(() => $`node -e 0`));
    s.list.push(await time(() => pdb('list')));
    s.from.push(await time(() => pdb('create', `f${i}`, '--from', o.tree, '--backend', o.backend)));
    s.base.push(await time(() => pdb('create', `b${i}`, '--base', base, '--backend', o.backend)));
    await pdb('discard', `f${i}`);
    await pdb('discard', `b${i}`);
  }
  const minus = s.from.map((x, i) => x - s.base[i]!);
  const g = o.group;
  return {
    rows: [
      benchRow('find -printf (stat walk)', g, s.find),
      benchRow('node -e 0', g, s.node),
      benchRow('pdb-env list', g, s.list, { 'node -e 0': s.node }),
      benchRow('create --from (unchanged source)', g, s.from, { 'find -printf (stat walk)': s.find }),
      benchRow('create --base', g, s.base, { 'node -e 0': s.node, 'find -printf (stat walk)': s.find }),
      benchRow('create --from minus create --base', g, minus, { 'find -printf (stat walk)': s.find }),
    ],
    lines: [
      line('find -printf (stat walk)', s.find),
      line('node -e 0', s.node),
      line('pdb-env list', s.list, s.node, 'node -e 0', '<= 2.5x'),
      line('create --from (unchanged source)', s.from, s.find, 'find -printf'),
      line('create --base', s.base, s.node, 'node -e 0', '<= 4x for overlay, btrfs-snapshot at 50,000 entries'),
      line('create --from minus create --base', minus, s.find, 'find -printf', '<= 3x'),
    ],
  };
}

/** Up to `n` regular files of the tree, by relative path, spread over it (the same ones in both copies). */
function someFiles(root: string, n: number): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const d of readdirSync(join(root, rel), { withFileTypes: true })) {
      if (out.length >= n * 20) return;
      const p = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory() && d.name !== '.git') walk(p);
      else if (d.isFile()) out.push(p);
    }
  };
  walk('');
  const step = Math.max(1, Math.floor(out.length / n));
  return out.filter((_, i) => i % step === 0).slice(0, n);
}

async function checkpointRounds(o: UserPathOptions, pdb: Pdb, base: string, log: (l: string) => void) {
  log(`${o.group}: a git copy of the tree (for git status) and a session`);
  const gitTree = join(o.scratch, 'git-tree');
  rmSync(gitTree, { recursive: true, force: true });
  await $`cp -a --reflink=never ${o.tree} ${gitTree}`;
  rmSync(join(gitTree, '.git'), { recursive: true, force: true }); // a repository of its own, whatever the tree is
  const git = (...args: string[]) => $({ cwd: gitTree })`git -c core.excludesFile=/dev/null ${args}`;
  await git('init', '-q');
  await git('add', '-A', '-f', '.');
  await git('-c', 'user.name=bench', '-c', 'user.email=bench@example.invalid', 'commit', '-q', '-m', 'tree');
  await pdb('create', 'cp', '--base', base, '--backend', o.backend);
  const root = (await pdb('path', 'cp')).stdout.trim();
  await settle();
  await pdb('checkpoint', 'cp'); // records signatures once the session's files are past the racy window
  await git('status', '--porcelain'); // warms git's index the same way
  await settle();
  const s = { git0: [] as number[], cp0: [] as number[], git10: [] as number[], cp10: [] as number[] };
  const files = someFiles(gitTree, 10 * o.rounds);
  for (let i = 0; i < o.rounds; i++) {
    s.git0.push(await time(() => git('status', '--porcelain')));
    s.cp0.push(await time(() => pdb('checkpoint', 'cp')));
    for (const f of files.slice(i * 10, i * 10 + 10)) {
      appendFileSync(join(gitTree, f), `\n// round ${i}\n`);
      appendFileSync(join(root, f), `\n// round ${i}\n`);
    }
    s.git10.push(await time(() => git('status', '--porcelain')));
    s.cp10.push(await time(() => pdb('checkpoint', 'cp')));
    await settle();
  }
  await pdb('discard', 'cp');
  rmSync(gitTree, { recursive: true, force: true });
  const g = o.group;
  return {
    rows: [
      benchRow('git status --porcelain (0 changed)', g, s.git0),
      benchRow('checkpoint (0 changed)', g, s.cp0, { 'git status --porcelain (0 changed)': s.git0 }),
      benchRow('git status --porcelain (10 changed)', g, s.git10),
      benchRow('checkpoint (10 changed)', g, s.cp10, { 'git status --porcelain (10 changed)': s.git10 }),
    ],
    lines: [
      line('git status --porcelain (0 changed)', s.git0),
      line('checkpoint (0 changed)', s.cp0, s.git0, 'git status', '<= 1.5x'),
      line('git status --porcelain (10 changed)', s.git10),
      line('checkpoint (10 changed)', s.cp10, s.git10, 'git status', '<= 1.5x'),
    ],
  };
}

/** Bytes the store takes on disk (it is on one filesystem). */
function storeBytes(store: string): number {
  return Number(execFileSync('du', ['-sk', store], { encoding: 'utf8' }).split('\t')[0]) * 1024;
}

/** gc after five sessions each wrote, checkpointed and were discarded with 20 MB: how close the store comes back. */
async function gcReclaim(o: UserPathOptions, pdb: Pdb, log: (l: string) => void): Promise<{ row: BenchRow; line: string }> {
  log(`${o.group}: gc reclaim (5 sessions x 20 MB)`);
  await pdb('gc');
  const before = storeBytes(o.store);
  for (let i = 0; i < 5; i++) {
    await pdb('create', `g${i}`, '--from', o.tree, '--backend', o.backend);
    const root = (await pdb('path', `g${i}`)).stdout.trim();
    writeFileSync(join(root, 'bench-20mb.bin'), randomBytes(20 * 1024 * 1024));
    await pdb('checkpoint', `g${i}`);
    await pdb('discard', `g${i}`);
  }
  const grown = storeBytes(o.store);
  const gcMs = await time(() => pdb('gc'));
  const after = storeBytes(o.store);
  const verify = JSON.parse((await pdb('verify', '--json')).stdout) as { corrupt: unknown[]; missing: unknown[] };
  const verifyOk = verify.corrupt.length === 0 && verify.missing.length === 0;
  const within = Math.abs(after - before) <= 5 * 1024 * 1024;
  const mb = (b: number) => `${(b / 1e6).toFixed(1)} MB`;
  return {
    row: benchRow(
      'gc after 5 x 20 MB discarded',
      o.group,
      [gcMs],
      {},
      {
        storeBeforeBytes: before,
        storeBeforeGcBytes: grown,
        storeAfterGcBytes: after,
        withinFiveMB: within ? 'yes' : 'no',
        verifyAfterGc: verifyOk ? 'pass' : 'FAIL',
      },
    ),
    line: `  gc: store ${mb(before)} -> ${mb(grown)} after the sessions -> ${mb(after)} after gc (${formatDuration(gcMs, 2)}); within 5 MB: ${within ? 'yes' : 'NO'}; verify after gc: ${verifyOk ? 'pass' : 'FAIL'}`,
  };
}

/** Entries of a tree (what the 50,000-entry goal counts). */
export function countEntries(root: string): number {
  let n = 0;
  const walk = (dir: string) => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      n++;
      if (d.isDirectory()) walk(join(dir, d.name));
    }
  };
  if (statSync(root).isDirectory()) walk(root);
  return n;
}
