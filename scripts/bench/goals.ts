// The goals of issue 26, each a ratio to a baseline measured in the same rounds: which receipt
// row is measured against which, the limit, and whether the run met it. Printed at the end of a
// benchmark and written into its receipt.
import type { BenchGoal, BenchRow } from './bench-receipt.js';

export const GIT_STATUS = 'git status --porcelain (all tracked)';
export const WORKTREE = 'git worktree add + pnpm install --offline';

interface GoalSpec {
  what: string;
  /** Receipt rows: the measured one and its baseline (same group). */
  row: string;
  baseline: string;
  /** at-most: measured / baseline <= limit; faster: baseline / measured >= limit. */
  direction: 'at-most' | 'faster';
  limit: number;
  stretch?: number;
  /** Only in groups of these backends (null: every group). */
  backends: string[] | null;
}

export const GOALS: GoalSpec[] = [
  {
    what: 'checkpoint, 0 files changed',
    row: 'checkpoint (0 changed)',
    baseline: `${GIT_STATUS} (0 changed)`,
    direction: 'at-most',
    limit: 3,
    stretch: 1.5,
    backends: null,
  },
  {
    what: 'checkpoint, 10 files changed',
    row: 'checkpoint (10 changed)',
    baseline: `${GIT_STATUS} (10 changed)`,
    direction: 'at-most',
    limit: 3,
    stretch: 1.5,
    backends: null,
  },
  {
    what: 'create --from an unchanged source minus create --base',
    row: 'create --from minus create --base',
    baseline: GIT_STATUS,
    direction: 'at-most',
    limit: 2,
    backends: null,
  },
  {
    what: 'overlay create --from an unchanged installed monorepo',
    row: 'create --from (unchanged source)',
    baseline: WORKTREE,
    direction: 'faster',
    limit: 10,
    backends: ['overlay'],
  },
  { what: 'overlay create --base', row: 'create --base', baseline: WORKTREE, direction: 'faster', limit: 20, backends: ['overlay'] },
  {
    what: 'full-copy create --from an unchanged source',
    row: 'create --from (unchanged source)',
    baseline: 'cp -a --reflink=never',
    direction: 'at-most',
    limit: 1.3,
    backends: ['full-copy'],
  },
  { what: 'pdb-env list', row: 'pdb-env list', baseline: 'node -e 0', direction: 'at-most', limit: 2.5, backends: null },
];

/** Every goal the rows can answer, per group; `backendOf` names a group's backend. */
export function evaluateGoals(rows: BenchRow[], backendOf: (group: string) => string): BenchGoal[] {
  const out: BenchGoal[] = [];
  for (const group of [...new Set(rows.map((r) => r.group))]) {
    for (const g of GOALS) {
      if (g.backends && !g.backends.includes(backendOf(group))) continue;
      const row = rows.find((r) => r.group === group && r.name === g.row);
      const r = row?.ratios[g.baseline];
      if (r === undefined) continue;
      const ratio = g.direction === 'at-most' ? r : 1 / r;
      // A difference of two timings can come out negative in a noisy run: that meets nothing.
      const met = ratio > 0 && (g.direction === 'at-most' ? ratio <= g.limit : ratio >= g.limit);
      out.push({
        goal: g.what,
        group,
        measured: g.row,
        baseline: g.baseline,
        direction: g.direction,
        limit: g.limit,
        ratio: Math.round(ratio * 1000) / 1000,
        met,
        ...(g.stretch !== undefined ? { stretchMet: ratio <= g.stretch } : {}),
      });
    }
  }
  return out;
}

export function goalLines(goals: BenchGoal[]): string[] {
  return goals.map((g) => {
    const rel =
      g.direction === 'at-most'
        ? `${g.ratio.toFixed(2)}x ${g.baseline} (goal <= ${g.limit}x`
        : `${g.ratio.toFixed(1)}x faster than ${g.baseline} (goal >= ${g.limit}x`;
    const stretch = g.stretchMet === undefined ? '' : `; stretch ${g.stretchMet ? 'met' : 'not met'}`;
    return `  ${g.met ? 'MET    ' : 'NOT MET'}  ${g.group}: ${g.goal}: ${rel}${stretch})`;
  });
}

/**
 * Issue 53 item 3: what the store's objects gained over all the turns at most twice what git's loose
 * objects gained for the same edits (apparent bytes, both sides: the bytes each kept).
 */
export function growthGoal([measured, store]: [string, number[]], [baseline, git]: [string, number[]], group: string): BenchGoal {
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const r = sum(store) / sum(git);
  return {
    goal: "store growth over the turns at most 2x what git's loose objects gained",
    group,
    measured,
    // validate recomputes it from both rows' bytesAddedTotal (harness/receipt/bench-consistency.ts).
    baseline: `bytes ${baseline} added`,
    direction: 'at-most',
    limit: 2,
    ratio: Math.round(r * 1000) / 1000,
    met: r <= 2,
  };
}
