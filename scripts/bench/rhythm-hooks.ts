// The rhythm bench's hook rounds (issue 53 item 1): a turn as Claude Code's hooks take it, through
// bin/pdb-env as Claude Code runs them. Each round: `pdb-env hook claude-code` with a
// UserPromptSubmit payload (nothing changed since the last checkpoint), then 1-10 files edited in
// the session and the git copy alike, `git status --porcelain` of the copy, and the hook's Stop
// (a checkpoint of the edits, labelled "after turn: PROMPT"); the copy is committed after, untimed.
// With a daemon (started or on demand), the hooks go through it as checkpoints do (docs/agents.md).
// And the edits of a turn (editTurn), which the bench's turns and these rounds make alike.
import { appendFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Random } from '../../harness/plan/prng.js';
import type { BenchGoal, BenchRow } from './bench-receipt.js';
import { benchRow } from './bench-receipt.js';
import { formatDuration, median } from '../lib.js';

/** One turn's edits, the same bytes in both trees: mostly a line appended, one edit in ten a new file beside the chosen one. */
export function editTurn(turn: number, count: number, files: string[], rand: Random, roots: string[]): { paths: string[]; bytes: number } {
  const paths: string[] = [];
  for (let j = 0; j < count; j++) {
    const pick = files[rand.int(files.length)]!;
    if (rand.int(10) === 0) {
      const added = `${pick.includes('/') ? pick.slice(0, pick.lastIndexOf('/') + 1) : ''}rhythm-${turn}-${j}.txt`;
      const body = `added at turn ${turn}: ${'x'.repeat(rand.int(2000))}\n`;
      for (const r of roots) writeFileSync(join(r, added), body);
      files.push(added);
      paths.push(added);
    } else {
      for (const r of roots) appendFileSync(join(r, pick), `\n// turn ${turn}, edit ${j}\n`);
      paths.push(pick);
    }
  }
  const unique = [...new Set(paths)];
  return { paths: unique, bytes: unique.reduce((n, p) => n + statSync(join(roots[0]!, p)).size, 0) };
}

export interface HookRound {
  files: number;
  statusMs: number;
  promptMs: number;
  stopMs: number;
}

export const HOOK_STOP = 'pdb-env hook claude-code, Stop (1-10 files changed)';
export const HOOK_PROMPT = 'pdb-env hook claude-code, UserPromptSubmit (0 changed)';
export const HOOK_STATUS = 'git status --porcelain (the hook rounds)';

const timed = async (fn: () => Promise<unknown>) => {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
};

/**
 * `rounds` hook rounds on the session whose root is `root`: `hook(payload)` runs the hook with the
 * payload on stdin (failing on a non-zero exit), `edit(round)` makes the round's edits in both
 * trees (their number), `status()` is git status of the copy, `commit(round)` records the copy.
 */
export async function runHookRounds(o: {
  rounds: number;
  root: string;
  hook: (payload: string) => Promise<unknown>;
  edit: (round: number) => number;
  status: () => Promise<unknown>;
  commit: (round: number) => Promise<unknown>;
}): Promise<HookRound[]> {
  const out: HookRound[] = [];
  for (let i = 0; i < o.rounds; i++) {
    const payload = (event: string) =>
      JSON.stringify({ hook_event_name: event, session_id: 'rhythm', cwd: o.root, prompt: `hook round ${i}` });
    const promptMs = await timed(() => o.hook(payload('UserPromptSubmit')));
    const files = o.edit(i);
    const statusMs = await timed(o.status);
    const stopMs = await timed(() => o.hook(payload('Stop')));
    await o.commit(i);
    out.push({ files, statusMs, promptMs, stopMs });
    console.log(
      `hook round ${String(i + 1).padStart(2)}: UserPromptSubmit ${formatDuration(promptMs, 3)}; ${files} files; git status ${formatDuration(statusMs, 3)}; Stop ${formatDuration(stopMs, 3)}`,
    );
  }
  return out;
}

/** The hook rounds' rows and goal: the Stop's per-round ratio to git status at most 1.5x, as for a checkpoint. */
export function summarizeHooks(rounds: HookRound[], group: string): { rows: BenchRow[]; goals: BenchGoal[] } {
  if (!rounds.length) return { rows: [], goals: [] };
  const [stop, prompt, status] = [rounds.map((r) => r.stopMs), rounds.map((r) => r.promptMs), rounds.map((r) => r.statusMs)];
  const rows = [
    benchRow(HOOK_STOP, group, stop, { [HOOK_STATUS]: status }, { filesChangedPerRound: rounds.map((r) => r.files).join(',') }),
    benchRow(HOOK_PROMPT, group, prompt, { [HOOK_STATUS]: status }),
    benchRow(HOOK_STATUS, group, status),
  ];
  const ratio = median(stop.map((x, i) => x / status[i]!)) ?? Number.NaN;
  const r = Math.round(ratio * 1000) / 1000;
  const goals: BenchGoal[] = [
    {
      goal: "Claude Code's Stop hook (1-10 files changed) at most 1.5x git status --porcelain",
      group,
      measured: HOOK_STOP,
      baseline: HOOK_STATUS,
      direction: 'at-most',
      limit: 1.5,
      ratio: r,
      met: ratio <= 1.5,
    },
  ];
  console.log(
    `${rounds.length} hook rounds: UserPromptSubmit ${formatDuration(median(prompt), 3)}, Stop ${formatDuration(median(stop), 3)}, git status ${formatDuration(median(status), 3)}`,
  );
  for (const g of goals) console.log(`  ${g.met ? 'MET    ' : 'NOT MET'}  ${g.goal}: ${g.ratio}x (limit ${g.limit}x)`);
  return { rows, goals };
}
