#!/usr/bin/env node
// Rhythm benchmark (issue 38, item 4): checkpoints at the rhythm agents work. A session of the
// tree takes --turns checkpoints (default 100), each after 1-10 files changed (every tenth turn
// exactly one, so the 1-file goal has samples); beside it the same bytes are written into an
// all-tracked git copy of the tree and committed with `git add -A -f && git commit`, as Conductor
// commits every turn. Per turn: the time of `git status --porcelain` (the changes made, before the
// commit), of `pdb-env checkpoint` and of the commit, and the bytes each added: apparent sizes of
// the files under the store's objects/ and under .git/objects. After both sides recorded the turn,
// nothing changed: a timed checkpoint and `git status --porcelain` of the clean copy (the issue's
// 0-changed goal, 1.2x). The receipt is path-free.
//
// Then --restore-rounds rounds (default 11, issue 39): exactly one file of the session changed, a
// timed `pdb-env checkpoint` of it (C), then a timed `pdb-env restore --to` the checkpoint before
// (R: the command a user runs, its safety checkpoint included); the goal is R at most C (the
// median of the per-round ratios R/C, as every ratio of these receipts). A checkpoint follows each
// restore, so the next round's C starts from a recorded tree; it has its own row, outside the goal.
//
// Checkpoints and restores go through bin/pdb-env as a user runs them, handed to the run's own
// pdb-env daemon (bench-daemon.ts: the run fails unless it ran every one); --no-daemon without it;
// --default-path starts none: the native client starts it on demand, as for a user who never typed
// `pdb-env daemon start` (the commands before it listens run in node, and the receipt says how many);
// --watch starts it with `--watch` (model/scan/watch.ts: it lstats only what an event touched).
//
// The tree: --pnpm-fixture DIR (the pinned pnpm monorepo, installed into DIR once: what the lead
// runs), --tree DIR (any tree; not written to), or --generated N (a node_modules-shaped tree of N
// files, scripts/bench/cow-tree.ts, for a quick functional run without a network).
import { appendFileSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { $ as zx } from 'zx';
import { createRandom, type Random } from '../../harness/plan/prng.js';
import { storeFilesystem } from '../../harness/receipt/host.js';
import { packageFile } from '../../model/paths.js';
import { scannerInfo } from '../../model/scan/scanner.js';
import { PDB_ENV, allTrackedCopy, ensurePnpmMonorepo } from './baselines.js';
import { benchRow, startBenchReceipt, writeBenchReceipt, type BenchGoal, type BenchRow, type BenchStart } from './bench-receipt.js';
import { growthGoal } from './goals.js';
import { generateTree } from './cow-tree.js';
import { startOnDemand, startOwnDaemon } from './bench-daemon.js';
import { editTurn, runHookRounds, summarizeHooks } from './rhythm-hooks.js';
import { bytesUnder, countEntries, regularFiles } from './user-path.js';
import { formatDuration, median, scriptArgs } from '../lib.js';

const USAGE =
  'usage: node dist/scripts/bench/rhythm.js [--pnpm-fixture DIR | --tree DIR | --generated FILES] [--turns 100] [--seed 38]\n' +
  '                                      [--restore-rounds 11] [--hook-rounds 11] [--backend full-copy] [--work /var/tmp/pdb-env-rhythm] [--out receipts/local] [--no-daemon | --default-path] [--watch]';
const { values } = scriptArgs(USAGE, {
  'pnpm-fixture': { type: 'string' },
  tree: { type: 'string' },
  generated: { type: 'string' },
  turns: { type: 'string', default: '100' },
  'restore-rounds': { type: 'string', default: '11' },
  'hook-rounds': { type: 'string', default: '11' },
  seed: { type: 'string', default: '38' },
  backend: { type: 'string', default: 'full-copy' },
  work: { type: 'string', default: '/var/tmp/pdb-env-rhythm' },
  out: { type: 'string', default: packageFile('receipts', 'local') },
  'no-daemon': { type: 'boolean', default: false },
  watch: { type: 'boolean', default: false },
  'default-path': { type: 'boolean', default: false },
});
const $ = zx({ verbose: false, quiet: true });
const turns = Number(values.turns);
const restoreRounds = Number(values['restore-rounds']);
const hookRounds = Number(values['hook-rounds']);
const seed = Number(values.seed);
const work = resolve(values.work);
const backend = values.backend;
const daemon = values['no-daemon'] !== true;
/** The path a user takes: no `daemon start`; the client starts the daemon on demand (its first calls run in node). */
const defaultPath = daemon && values['default-path'] === true;
const watch = daemon && !defaultPath && values.watch === true;
/** The goal of a 1-file checkpoint: at most this many bytes plus the changed file's. */
const ONE_FILE_ALLOWANCE = 64 * 1024;

async function chooseTree(): Promise<{ tree: string; what: string }> {
  if (values.tree) return { tree: resolve(values.tree), what: 'given with --tree' };
  if (values.generated) {
    const files = Number(values.generated);
    const tree = join(work, `generated-${files}`);
    if (!existsSync(join(tree, 'package.json'))) generateTree(tree, files, Math.max(20, Math.round(files / 250)), 26);
    return { tree, what: `a generated node_modules-shaped tree of ${files} files` };
  }
  const dir = resolve(values['pnpm-fixture'] ?? join(work, 'pnpm-monorepo'));
  console.log('the pinned pnpm monorepo fixture (installed once)');
  return { tree: await ensurePnpmMonorepo(dir, work), what: 'the pinned pnpm monorepo fixture' };
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

const p95 = (xs: readonly number[]) =>
  xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(xs.length * 0.95) - 1)]! : null;
const round = (x: number | null) => (x === null ? null : Math.round(x * 1000) / 1000);

interface Turn {
  files: number;
  fileBytes: number;
  statusMs: number;
  checkpointMs: number;
  commitMs: number;
  /** After both sides recorded the turn: a checkpoint with nothing changed, and git status of the clean copy. */
  zeroMs: number;
  cleanStatusMs: number;
  storeBytes: number;
  metaBytes: number;
  gitBytes: number;
}

/** One restore round: a 1-file checkpoint (C), the restore to the checkpoint before it (R), the checkpoint after that. */
interface RestoreRound {
  checkpointMs: number;
  restoreMs: number;
  afterMs: number;
  written: number;
  removed: number;
}

const CHECKPOINT_1 = 'pdb-env checkpoint (1 file changed)';
const RESTORE_1 = 'pdb-env restore --to the checkpoint before (1 file)';
const CHECKPOINT_AFTER = 'pdb-env checkpoint right after a restore';

/** The restore rows and goal (empty when no rounds ran). */
function summarizeRestore(rounds: RestoreRound[]): { rows: BenchRow[]; goals: BenchGoal[] } {
  if (!rounds.length) return { rows: [], goals: [] };
  const group = backend;
  const c = rounds.map((r) => r.checkpointMs);
  const rs = rounds.map((r) => r.restoreMs);
  const rows = [
    benchRow(CHECKPOINT_1, group, c, {}, { p95Ms: round(p95(c)) }),
    benchRow(
      RESTORE_1,
      group,
      rs,
      { [CHECKPOINT_1]: c },
      {
        p95Ms: round(p95(rs)),
        ratioOfMediansToCheckpoint: round(median(rs)! / median(c)!),
        writtenPerRound: rounds.map((r) => r.written).join(','),
        removedPerRound: rounds.map((r) => r.removed).join(','),
      },
    ),
    benchRow(
      CHECKPOINT_AFTER,
      group,
      rounds.map((r) => r.afterMs),
      { [CHECKPOINT_1]: c },
      { p95Ms: round(p95(rounds.map((r) => r.afterMs))) },
    ),
  ];
  const ratio = rows[1]!.ratios[CHECKPOINT_1] ?? Number.NaN;
  const goals: BenchGoal[] = [
    {
      goal: 'restore of a 1-file change at most a checkpoint of it',
      group,
      measured: RESTORE_1,
      baseline: CHECKPOINT_1,
      direction: 'at-most',
      limit: 1,
      ratio: round(ratio) ?? Number.NaN,
      met: round(ratio)! <= 1,
    },
  ];
  console.log(
    `${rounds.length} restore rounds: checkpoint of 1 file ${formatDuration(median(c), 3)}, restore --to the one before ${formatDuration(median(rs), 3)} (p95 ${formatDuration(p95(rs), 3)}), the checkpoint after it ${formatDuration(median(rounds.map((r) => r.afterMs)), 3)}`,
  );
  for (const g of goals) console.log(`  ${g.met ? 'MET    ' : 'NOT MET'}  ${g.goal}: ${g.ratio}x (limit ${g.limit}x)`);
  return { rows, goals };
}

/** The restore rounds of the module comment, on the session only (git has no counterpart). */
async function runRestoreRounds(
  pdb: (...args: string[]) => Promise<{ stdout: string }>,
  root: string,
  files: string[],
  rand: Random,
): Promise<RestoreRound[]> {
  const rounds: RestoreRound[] = [];
  for (let i = 0; i < restoreRounds; i++) {
    const pick = files[rand.int(files.length)]!;
    appendFileSync(join(root, pick), `\n// restore round ${i}\n`);
    let number = 0;
    const checkpointMs = await timed(async () => {
      number = (JSON.parse((await pdb('checkpoint', 'rhythm', '--json')).stdout) as { number: number }).number;
    });
    let r = { written: 0, removed: 0 };
    const restoreMs = await timed(async () => {
      r = JSON.parse((await pdb('restore', 'rhythm', '--to', String(number - 1), '--json')).stdout) as typeof r;
    });
    const afterMs = await timed(() => pdb('checkpoint', 'rhythm'));
    rounds.push({ checkpointMs, restoreMs, afterMs, written: r.written, removed: r.removed });
    console.log(
      `restore round ${String(i + 1).padStart(2)}: checkpoint ${formatDuration(checkpointMs, 3)}; restore --to ${number - 1} ${formatDuration(restoreMs, 3)} (${r.written} written, ${r.removed} removed); checkpoint after it ${formatDuration(afterMs, 3)}`,
    );
  }
  return rounds;
}

/** A time goal: the median of the per-turn ratios of `measured` to `baseline` at most `limit` (and `stretch`, when given). */
function timeGoal(
  goal: string,
  [measured, xs]: [string, number[]],
  [baseline, ys]: [string, number[]],
  limit: number,
  stretch?: number,
): BenchGoal {
  const r = median(xs.map((x, i) => x / ys[i]!)) ?? Number.NaN;
  return {
    goal,
    group: backend,
    measured,
    baseline,
    direction: 'at-most',
    limit,
    ratio: round(r)!,
    met: r <= limit,
    ...(stretch === undefined ? {} : { stretchMet: r <= stretch }),
  };
}

/** The receipt's rows (checkpoint, commit, status) and goals from the turns, each printed too. */
function summarize(done: Turn[], entries: number): { rows: BenchRow[]; goals: BenchGoal[] } {
  const col = <K extends keyof Turn>(k: K, ts: Turn[] = done) => ts.map((t) => t[k]);
  const one = done.filter((t) => t.files === 1);
  const group = backend;
  const GIT_COMMIT = 'git add -A -f && git commit';
  const GIT_STATUS = 'git status --porcelain';
  const CHECKPOINT = 'pdb-env checkpoint';
  const CHECKPOINT_0 = 'pdb-env checkpoint (0 changed)';
  const GIT_STATUS_CLEAN = 'git status --porcelain (clean)';
  const bytesMetrics = (k: 'storeBytes' | 'gitBytes') => ({
    bytesAddedMedian: median(col(k)),
    bytesAddedP95: p95(col(k)),
    bytesAddedTotal: col(k).reduce((a, b) => a + b, 0),
    bytesAdded1FileMedian: median(col(k, one)),
    bytesAdded1FileMax: one.length ? Math.max(...col(k, one)) : null,
    bytesAddedPerTurn: col(k).join(','),
  });
  const rows: BenchRow[] = [
    benchRow(
      CHECKPOINT,
      group,
      col('checkpointMs'),
      { [GIT_COMMIT]: col('commitMs'), [GIT_STATUS]: col('statusMs') },
      {
        p95Ms: round(p95(col('checkpointMs'))),
        ...bytesMetrics('storeBytes'),
        indexAndRecordBytesMedian: median(col('metaBytes')),
        filesChangedPerTurn: col('files').join(','),
        changedFileBytesPerTurn: col('fileBytes').join(','),
      },
    ),
    benchRow(GIT_COMMIT, group, col('commitMs'), {}, { p95Ms: round(p95(col('commitMs'))), ...bytesMetrics('gitBytes') }),
    benchRow(GIT_STATUS, group, col('statusMs'), {}, { p95Ms: round(p95(col('statusMs'))) }),
    benchRow(CHECKPOINT_0, group, col('zeroMs'), { [GIT_STATUS_CLEAN]: col('cleanStatusMs') }, { p95Ms: round(p95(col('zeroMs'))) }),
    benchRow(GIT_STATUS_CLEAN, group, col('cleanStatusMs'), {}, { p95Ms: round(p95(col('cleanStatusMs'))) }),
  ];
  const oneFile = one.length ? Math.max(...one.map((t) => t.storeBytes / (ONE_FILE_ALLOWANCE + t.fileBytes))) : Number.NaN;
  const goals: BenchGoal[] = [
    {
      goal: 'store growth of a 1-file checkpoint at most 64 KiB plus the file (the largest of the 1-file turns)',
      group,
      measured: CHECKPOINT,
      baseline: '64 KiB + the changed file',
      direction: 'at-most',
      limit: 1,
      ratio: round(oneFile) ?? Number.NaN,
      met: oneFile <= 1,
      stretchMet: one.every((t) => t.storeBytes <= t.gitBytes),
    },
    growthGoal([CHECKPOINT, col('storeBytes')], [GIT_COMMIT, col('gitBytes')], group),
    timeGoal('per-turn time at most git add -A -f && git commit', [CHECKPOINT, col('checkpointMs')], [GIT_COMMIT, col('commitMs')], 1),
    timeGoal(
      'checkpoint (1-10 files changed) at most 1.5x git status --porcelain',
      [CHECKPOINT, col('checkpointMs')],
      [GIT_STATUS, col('statusMs')],
      1.5,
    ),
    timeGoal(
      'checkpoint (0 changed) at most 1.2x git status --porcelain of the clean copy',
      [CHECKPOINT_0, col('zeroMs')],
      [GIT_STATUS_CLEAN, col('cleanStatusMs')],
      1.2,
      1,
    ),
  ];
  console.log(
    `\n${turns} turns, ${entries} entries, ${backend}: checkpoint median ${formatDuration(median(col('checkpointMs')), 3)} (p95 ${formatDuration(p95(col('checkpointMs')), 3)}), ` +
      `git add+commit ${formatDuration(median(col('commitMs')), 3)} (p95 ${formatDuration(p95(col('commitMs')), 3)}), git status ${formatDuration(median(col('statusMs')), 3)}`,
  );
  console.log(
    `bytes per turn (median): store ${median(col('storeBytes'))}, .git/objects ${median(col('gitBytes'))}; 1-file turns (${one.length}): store ${median(col('storeBytes', one))} (max ${rows[0]!.metrics.bytesAdded1FileMax}), git ${median(col('gitBytes', one))}`,
  );
  for (const g of goals) console.log(`  ${g.met ? 'MET    ' : 'NOT MET'}  ${g.goal}: ${g.ratio}x (limit ${g.limit}x)`);
  return { rows, goals };
}

/** The receipt of the run: the turns' rows and goals, then the restore rounds'. */
async function writeRhythmReceipt(
  start: BenchStart,
  parts: Array<{ rows: BenchRow[]; goals: BenchGoal[] }>,
  t: { what: string; entries: number; fs: string; scanner: ReturnType<typeof scannerInfo>; daemonServed: number | null },
): Promise<string> {
  return writeBenchReceipt(start, {
    benchmark: 'rhythm',
    command: `npm run bench:rhythm -- --turns ${turns} --restore-rounds ${restoreRounds} --hook-rounds ${hookRounds} --seed ${seed} --backend ${backend}${daemon ? '' : ' --no-daemon'}${defaultPath ? ' --default-path' : ''}${watch ? ' --watch' : ''}${values.tree ? ' --tree <dir>' : ''}${values.generated ? ` --generated ${values.generated}` : ''}${values.tree || values.generated ? '' : ' --pnpm-fixture <dir>'}`,
    params: {
      turns,
      restoreRounds,
      hookRounds,
      seed,
      backend,
      tree: t.what,
      entries: t.entries,
      filesystem: t.fs,
      scanner: t.scanner.scanner,
      lstatThreads: t.scanner.threads,
      daemon,
      defaultPath,
      watch,
      daemonServed: t.daemonServed,
    },
    results: parts.flatMap((p) => p.rows),
    goals: parts.flatMap((p) => p.goals),
  });
}

/** Both timed, the first first on even turns and second on odd ones, so machine noise does not favour one side. */
async function alternately(turn: number, a: () => Promise<unknown>, b: () => Promise<unknown>): Promise<[number, number]> {
  if (turn % 2 === 0) {
    const ta = await timed(a);
    return [ta, await timed(b)];
  }
  const tb = await timed(b);
  return [await timed(a), tb];
}

/** The hook rounds (rhythm-hooks.ts) after the turns and restore rounds: their edits numbered on from the turns'. */
async function hookPart(
  own: { count(command: string): void } | null,
  store: string,
  root: string,
  files: string[],
  rand: Random,
  git: { dir: string; status: () => Promise<unknown> },
  commit: (turn: number) => Promise<unknown>,
) {
  const hook = (payload: string) => (own?.count('hook'), $({ input: payload })`${PDB_ENV} hook claude-code --store ${store}`);
  const edit = (i: number) => editTurn(turns + i, 1 + rand.int(10), files, rand, [root, git.dir]).paths.length;
  const rounds = await runHookRounds({ rounds: hookRounds, root, hook, edit, status: git.status, commit: (i) => commit(turns + i) });
  return summarizeHooks(rounds, backend);
}

async function main(): Promise<void> {
  mkdirSync(work, { recursive: true });
  const { tree, what } = await chooseTree();
  const entries = countEntries(tree);
  const fs = storeFilesystem(work).type;
  const scanner = scannerInfo();
  console.log(`tree: ${entries} entries (${what}), filesystem ${fs}, ${backend}, scanner ${scanner.scanner}; ${turns} turns`);
  const start = await startBenchReceipt(work, resolve(values.out));
  const store = join(work, 'store');
  rmSync(store, { recursive: true, force: true });
  const own = !daemon ? null : defaultPath ? startOnDemand(work) : await startOwnDaemon(work, { watch });
  const pdb = (...args: string[]) => {
    own?.count(args[0]!);
    return $`${PDB_ENV} ${args} --store ${store}`;
  };
  await pdb('create', 'rhythm', '--from', tree, '--backend', backend);
  const root = (await pdb('path', 'rhythm')).stdout.trim();
  const git = await allTrackedCopy(tree, join(work, 'git-tree'));
  const gitCmd = (...args: string[]) => $({ cwd: git.dir })`git -c core.excludesFile=/dev/null ${args}`;
  const commit = async (turn: number) => {
    await gitCmd('add', '-A', '-f');
    await gitCmd('-c', 'user.name=bench', '-c', 'user.email=bench@example.invalid', 'commit', '-q', '-m', `turn ${turn}`);
  };
  // A checkpoint of the untouched session first (not counted): the tree as created, recorded once.
  await sleep(300);
  await pdb('checkpoint', 'rhythm');
  const objects = join(store, 'objects');
  // What else a checkpoint writes into the store: the session's tree index (or its delta), its record and logs; never the workspace.
  const meta = () => bytesUnder(store, new Set([objects, join(store, 'sessions', 'rhythm', 'root'), join(store, 'bases')]));
  const files = regularFiles(root);
  const rand = createRandom(seed);
  const done: Turn[] = [];
  for (let turn = 0; turn < turns; turn++) {
    const count = turn % 10 === 0 ? 1 : 1 + rand.int(10);
    const edit = editTurn(turn, count, files, rand, [root, git.dir]);
    const statusMs = await timed(() => git.status());
    const [store0, meta0, git0] = [bytesUnder(objects), meta(), bytesUnder(join(git.dir, '.git', 'objects'))];
    const [checkpointMs, commitMs] = await alternately(
      turn,
      () => pdb('checkpoint', 'rhythm'),
      () => commit(turn),
    );
    const storeBytes = bytesUnder(objects) - store0;
    const [metaBytes, gitBytes] = [meta() - meta0, bytesUnder(join(git.dir, '.git', 'objects')) - git0];
    // Nothing changed since: a checkpoint (the issue's 0-changed case) and git status of the clean copy.
    const [zeroMs, cleanStatusMs] = await alternately(
      turn,
      () => pdb('checkpoint', 'rhythm'),
      () => git.status(),
    );
    done.push({
      files: edit.paths.length,
      fileBytes: edit.bytes,
      statusMs,
      checkpointMs,
      commitMs,
      zeroMs,
      cleanStatusMs,
      storeBytes,
      metaBytes,
      gitBytes,
    });
    const d = done[done.length - 1]!;
    console.log(
      `turn ${String(turn + 1).padStart(3)}: ${String(d.files).padStart(2)} files; checkpoint ${formatDuration(checkpointMs, 3)} +${d.storeBytes} B objects (+${d.metaBytes} B index/records); git status ${formatDuration(statusMs, 3)}; git add+commit ${formatDuration(commitMs, 3)} +${d.gitBytes} B; nothing changed: checkpoint ${formatDuration(zeroMs, 3)}, git status ${formatDuration(cleanStatusMs, 3)}`,
    );
  }
  const parts = [summarize(done, entries), summarizeRestore(await runRestoreRounds(pdb, root, files, rand))];
  parts.push(await hookPart(own, store, root, files, rand, git, commit));
  await pdb('discard', 'rhythm', '--force');
  rmSync(git.dir, { recursive: true, force: true });
  rmSync(store, { recursive: true, force: true });
  const daemonServed = own ? await own.stop() : null;
  const file = await writeRhythmReceipt(start, parts, { what, entries, fs, scanner, daemonServed });
  console.log(`receipt: ${file}`);
}

await main();
