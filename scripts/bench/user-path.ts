// The user path: the commands as a person or an agent calls them (bin/pdb-env, one process per
// command, process start and module loading included), each paired in every round with the
// baseline it is judged against, measured in the same round so machine noise hits both sides
// (scripts/bench/baselines.ts says what each baseline does; goals.ts lists the goals):
//
//   checkpoint with 0 and with 10 files changed  vs  git status --porcelain on an all-tracked copy
//   create --from (unchanged source) minus --base  vs  that git status
//   create --from and --base                       vs  git worktree add + pnpm install --offline (a pnpm repository)
//   full-copy create --from                        vs  cp -a --reflink=never
//   pdb-env list                                   vs  node -e 0
//   gc after 5 sessions wrote, checkpointed and discarded 20 MB each: store size before and after, then verify
//
// Every timed create starts after a sync (not timed), and --from and --base take turns going
// first, so that neither pays for the other's writeback. What a round made (sessions, copies,
// worktrees) is removed after the last round, where the disk has room for all of it: on the
// virtual disk measured here (ext4 mounted with `discard`), the first tree written after a large
// delete took 2-4x as long as the next, whichever command wrote it, so a delete between rounds
// would charge one side of each pair for the round before (docs/evidence.md).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { $ as zx } from 'zx';
import { GIT_STATUS, WORKTREE } from './goals.js';
import { PDB_ENV, allTrackedCopy, type AllTracked, type WorktreeBaseline } from './baselines.js';
import { benchRow, type BenchRow } from './bench-receipt.js';
import { formatDuration, median } from '../lib.js';

const $ = zx({ verbose: false, quiet: true });

export interface UserPathOptions {
  /** The tree a user would pass to `create --from` (not written to). */
  tree: string;
  /** A store for this measurement only (made here, removed by the caller). */
  store: string;
  /** Scratch space on the same filesystem (the git copy of the tree, copies, worktrees). */
  scratch: string;
  backend: string;
  rounds: number;
  /** The receipt rows' group, e.g. "full-copy" or "btrfs/overlay". */
  group: string;
  /** Also measure gc's reclaim (5 sessions x 20 MB). */
  gc?: boolean;
  /** Also time `cp -a --reflink=never` of the tree in each round (the full-copy goal). */
  cp?: boolean;
  /** The worktree + pnpm install baseline, when the tree has one. */
  worktree?: WorktreeBaseline | null;
  /** An all-tracked git copy of the tree on the same filesystem, shared by the groups (else one is made and removed). */
  git?: AllTracked;
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

function line(name: string, xs: number[], base?: number[], baseName?: string): string {
  const r = base ? `${ratioOf(xs, base).toFixed(2)}x ${baseName}` : '';
  return `  ${name.padEnd(44)} ${formatDuration(median(xs), 3).padStart(9)}   ${r}`;
}

type Pdb = (...args: string[]) => Promise<{ stdout: string }>;

/** Every user-path measurement of one backend on one tree. */
export async function userPathRows(o: UserPathOptions): Promise<{ rows: BenchRow[]; lines: string[] }> {
  const log = o.log ?? (() => {});
  mkdirSync(o.scratch, { recursive: true });
  const pdb: Pdb = (...args) => $`${PDB_ENV} ${args} --store ${o.store}`;
  log(`${o.group}: an all-tracked git copy of the tree (the git status baseline)`);
  const git = o.git ?? (await allTrackedCopy(o.tree, join(o.scratch, 'git-tree')));
  if (o.git) await o.git.reset();
  log(`${o.group}: first import and a warm create (not timed)`);
  const base = JSON.parse((await pdb('create', 'warm', '--from', o.tree, '--backend', o.backend, '--json')).stdout).base as string;
  await pdb('discard', 'warm');
  await settle();
  await pdb('create', 'warm', '--from', o.tree, '--backend', o.backend); // the source index now trusts every file
  await pdb('discard', 'warm');
  const creates = await createRounds(o, pdb, base, git.status);
  const checkpoints = await checkpointRounds(o, pdb, base, git, log);
  const rows = [...creates.rows, ...checkpoints.rows];
  const lines = [`${o.group} (${o.backend}):`, ...creates.lines, ...checkpoints.lines];
  if (o.gc) {
    const g = await gcReclaim(o, pdb, log);
    rows.push(g.row);
    lines.push(g.line);
  }
  if (!o.git) await $`rm -rf ${git.dir}`;
  return { rows, lines };
}

interface CreateSamples {
  node: number[];
  nodeBare: number[];
  find: number[];
  git: number[];
  list: number[];
  from: number[];
  base: number[];
  cp: number[];
  worktree: number[];
}

/** One round of the create measurements (and their baselines) into `s`; what it made goes onto `cleanup`. */
async function createRound(
  o: UserPathOptions,
  pdb: Pdb,
  base: string,
  status: () => Promise<unknown>,
  i: number,
  s: CreateSamples,
  cleanup: Array<() => Promise<unknown>>,
) {
  const sync = () => $`sync`;
  s.node.push(await time(() => $`node -e 0`));
  s.nodeBare.push(await time(() => $({ env: { ...process.env, NODE_EXTRA_CA_CERTS: undefined } })`node -e 0`));
  s.find.push(await time(() => $`find ${o.tree} -fprintf /dev/null ${'%i %s %T@ %C@ %m %p\n'}`));
  s.git.push(await time(status));
  s.list.push(await time(() => pdb('list')));
  const from = async () => (await sync(), s.from.push(await time(() => pdb('create', `f${i}`, '--from', o.tree, '--backend', o.backend))));
  const fromBase = async () => (
    await sync(),
    s.base.push(await time(() => pdb('create', `b${i}`, '--base', base, '--backend', o.backend)))
  );
  if (i % 2 === 0) await from().then(fromBase);
  else await fromBase().then(from);
  cleanup.push(
    () => pdb('discard', `f${i}`),
    () => pdb('discard', `b${i}`),
  );
  if (o.cp) {
    const dst = join(o.scratch, `cp-${i}`);
    await sync();
    s.cp.push(await time(() => $`cp -a --reflink=never ${o.tree} ${dst}`));
    cleanup.push(async () => rmSync(dst, { recursive: true, force: true }));
  }
  if (o.worktree && !o.worktree.unavailable) {
    let undo = async () => {};
    s.worktree.push(await time(async () => ({ undo } = await o.worktree!.run(join(o.scratch, `wt-${i}`)))));
    cleanup.push(() => undo());
  }
}

/** Bytes of the tree's files (what a full copy of it writes). */
function treeBytes(root: string): number {
  let bytes = 0;
  const walk = (dir: string) => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      if (d.isDirectory()) {
        if (d.name !== '.git' || dir !== root) walk(join(dir, d.name));
      } else if (d.isFile()) bytes += statSync(join(dir, d.name)).size;
    }
  };
  walk(root);
  return bytes;
}

/**
 * Can every round's trees stay until the last round? Full copies of the tree (two sessions of a
 * copying backend, the cp baseline) each round, and a quarter of the disk's free space to spare.
 */
function roomForAllRounds(o: UserPathOptions): boolean {
  const copies = (o.backend === 'full-copy' ? 2 : 0) + (o.cp ? 1 : 0);
  if (copies === 0) return true;
  const fs = statfsSync(o.scratch);
  return copies * o.rounds * treeBytes(o.tree) < 0.75 * fs.bavail * fs.bsize;
}

const emptySamples = (): CreateSamples => ({
  node: [],
  nodeBare: [],
  find: [],
  git: [],
  list: [],
  from: [],
  base: [],
  cp: [],
  worktree: [],
});

async function createRounds(
  o: UserPathOptions,
  pdb: Pdb,
  base: string,
  status: () => Promise<unknown>,
): Promise<{ rows: BenchRow[]; lines: string[] }> {
  const s = emptySamples();
  const keep = roomForAllRounds(o);
  if (!keep) o.log?.(`${o.group}: too little disk to keep every round's trees: each round's are removed after it`);
  const cleanup: Array<() => Promise<unknown>> = [];
  // One untimed round first: the first tree written after the setup's deletes pays for them (see
  // the header), so that the timed rounds all start alike.
  await createRound(o, pdb, base, status, -1, emptySamples(), cleanup);
  if (!keep) for (const undo of cleanup.splice(0)) await undo();
  for (let i = 0; i < o.rounds; i++) {
    await createRound(o, pdb, base, status, i, s, cleanup);
    if (!keep) for (const undo of cleanup.splice(0)) await undo();
  }
  for (const undo of cleanup.splice(0)) await undo();
  const minus = s.from.map((x, i) => x - s.base[i]!);
  const g = o.group;
  const vs = (extra: Record<string, number[]>) => Object.fromEntries(Object.entries(extra).filter(([, xs]) => xs.length === o.rounds));
  const rows = [
    benchRow('node -e 0', g, s.node),
    benchRow('node -e 0 (NODE_EXTRA_CA_CERTS unset)', g, s.nodeBare),
    benchRow('find -printf (stat walk)', g, s.find),
    benchRow(GIT_STATUS, g, s.git),
    benchRow('pdb-env list', g, s.list, { 'node -e 0': s.node, 'node -e 0 (NODE_EXTRA_CA_CERTS unset)': s.nodeBare }),
    benchRow(
      'create --from (unchanged source)',
      g,
      s.from,
      vs({ [GIT_STATUS]: s.git, 'cp -a --reflink=never': s.cp, [WORKTREE]: s.worktree }),
    ),
    benchRow('create --base', g, s.base, vs({ 'node -e 0': s.node, [WORKTREE]: s.worktree })),
    benchRow('create --from minus create --base', g, minus, { [GIT_STATUS]: s.git, 'find -printf (stat walk)': s.find }),
  ];
  if (s.cp.length) rows.push(benchRow('cp -a --reflink=never', g, s.cp));
  if (s.worktree.length) rows.push(benchRow(WORKTREE, g, s.worktree));
  const lines = [
    line('node -e 0', s.node),
    line('node -e 0, NODE_EXTRA_CA_CERTS unset', s.nodeBare),
    line('find -printf (stat walk)', s.find),
    line(GIT_STATUS, s.git),
    line('pdb-env list', s.list, s.node, 'node -e 0'),
    line('create --from (unchanged source)', s.from, s.git, 'git status'),
    line('create --base', s.base, s.node, 'node -e 0'),
    line('create --from minus create --base', minus, s.git, 'git status'),
    ...(s.cp.length ? [line('cp -a --reflink=never', s.cp), line('create --from vs cp -a', s.from, s.cp, 'cp -a --reflink=never')] : []),
    ...(s.worktree.length ? [line(WORKTREE, s.worktree), line('create --base vs worktree + install', s.base, s.worktree, WORKTREE)] : []),
    ...(o.worktree?.unavailable ? [`  (no ${WORKTREE} baseline: ${o.worktree.unavailable})`] : []),
    keep
      ? "  (every round's sessions and copies removed after the last round)"
      : "  (each round's sessions and copies removed after it: too little disk to keep them)",
  ];
  return { rows, lines };
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

async function checkpointRounds(
  o: UserPathOptions,
  pdb: Pdb,
  base: string,
  git: { status: () => Promise<unknown>; dir: string },
  log: (l: string) => void,
) {
  log(`${o.group}: a session to checkpoint`);
  await pdb('create', 'cp', '--base', base, '--backend', o.backend);
  const root = (await pdb('path', 'cp')).stdout.trim();
  await settle();
  await pdb('checkpoint', 'cp'); // records signatures once the session's files are past the racy window
  await settle();
  await pdb('checkpoint', 'cp'); // and its directories'
  const s = { git0: [] as number[], cp0: [] as number[], git10: [] as number[], cp10: [] as number[] };
  const files = someFiles(git.dir, 10 * o.rounds);
  for (let i = 0; i < o.rounds; i++) {
    s.git0.push(await time(git.status));
    s.cp0.push(await time(() => pdb('checkpoint', 'cp')));
    for (const f of files.slice(i * 10, i * 10 + 10)) {
      appendFileSync(join(git.dir, f), `\n// round ${i}\n`);
      appendFileSync(join(root, f), `\n// round ${i}\n`);
    }
    s.git10.push(await time(git.status));
    s.cp10.push(await time(() => pdb('checkpoint', 'cp')));
    await settle();
  }
  await pdb('discard', 'cp');
  const g = o.group;
  const [g0, g10] = [`${GIT_STATUS} (0 changed)`, `${GIT_STATUS} (10 changed)`];
  return {
    rows: [
      benchRow(g0, g, s.git0),
      benchRow('checkpoint (0 changed)', g, s.cp0, { [g0]: s.git0 }),
      benchRow(g10, g, s.git10),
      benchRow('checkpoint (10 changed)', g, s.cp10, { [g10]: s.git10 }),
    ],
    lines: [
      line(g0, s.git0),
      line('checkpoint (0 changed)', s.cp0, s.git0, 'git status'),
      line(g10, s.git10),
      line('checkpoint (10 changed)', s.cp10, s.git10, 'git status'),
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
  const metrics = {
    storeBeforeBytes: before,
    storeBeforeGcBytes: grown,
    storeAfterGcBytes: after,
    withinFiveMB: within ? 'yes' : 'no',
    verifyAfterGc: verifyOk ? 'pass' : 'FAIL',
  };
  return {
    row: benchRow('gc after 5 x 20 MB discarded', o.group, [gcMs], {}, metrics),
    line: `  gc: store ${mb(before)} -> ${mb(grown)} after the sessions -> ${mb(after)} after gc (${formatDuration(gcMs, 2)}); within 5 MB: ${within ? 'yes' : 'NO'}; verify after gc: ${verifyOk ? 'pass' : 'FAIL'}`,
  };
}

/** Entries of a tree as a scan counts them (what the 20,000-50,000-entry goals count): .git at the top left out. */
export function countEntries(root: string): number {
  let n = 0;
  const walk = (dir: string) => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      if (dir === root && d.name === '.git') continue;
      n++;
      if (d.isDirectory()) walk(join(dir, d.name));
    }
  };
  if (statSync(root).isDirectory()) walk(root);
  return n;
}

/** Apparent bytes of the files under `dir` (what a copy of it would hold), skipping directories named in `skip`. */
export function bytesUnder(dir: string, skip: ReadonlySet<string> = new Set()): number {
  let n = 0;
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (skip.has(p)) continue;
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) n += statSync(p).size;
    }
  };
  if (existsSync(dir)) walk(dir);
  return n;
}

/** Regular files of the tree by relative path (sorted, .git left out): what the turns edit. */
export function regularFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const e of readdirSync(join(root, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (p === '.git') continue;
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.push(p);
    }
  };
  walk('');
  return out.sort();
}
