// The output of cow.ts: one row per filesystem x case, the table, and the targets of issue 3.
import { formatBytes } from '../../model/progress.js';
import { formatDuration } from '../lib.js';

export { formatBytes };

export interface CowRow {
  fs: string;
  /** "<entries> entries, <MB> MB". */
  tree: string;
  entries: number;
  baseBytes: number;
  backend: string;
  n: number;
  medianMs: number;
  minMs: number;
  medianGrowthBytes: number;
  samplesMs: number[];
  growthBytes: number[];
}

const percent = (part: number, whole: number) => `${((100 * part) / whole).toFixed(3)}%`;

export function cowTable(rows: CowRow[]): string {
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
    const base = (name: string) => rows.find((x) => x.fs === r.fs && x.backend === name)?.medianMs ?? NaN;
    lines.push([
      r.fs,
      r.backend,
      r.tree,
      String(r.n),
      formatDuration(r.medianMs, 3),
      `${(r.medianMs / base('cp --reflink=always')).toFixed(2)}x`,
      `${(r.medianMs / base('cp --reflink=never')).toFixed(3)}x`,
      `${(base('git worktree add') / r.medianMs).toFixed(1)}x`,
      formatBytes(r.medianGrowthBytes),
      percent(r.medianGrowthBytes, r.baseBytes),
    ]);
  }
  const widths = header.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
  return lines
    .map((l, j) => (j === 1 ? `${widths.map((w) => '-'.repeat(w)).join('  ')}\n` : '') + l.map((c, i) => c.padEnd(widths[i]!)).join('  '))
    .join('\n');
}

type Target = [what: string, met: boolean, value: string];

/** The targets of one filesystem, for the rows present. */
function fsTargets(fs: string, rows: CowRow[]): Target[] {
  const get = (b: string) => rows.find((r) => r.fs === fs && r.backend === b);
  const out: Target[] = [];
  const cpR = get('cp --reflink=always');
  const git = get('git worktree add');
  const rf = get('reflink');
  const ov = get('overlay');
  const bs = get('btrfs-snapshot');
  const bw = get('btrfs-snapshot (10x entries)');
  const growth = (r: CowRow) => r.medianGrowthBytes / r.baseBytes;
  if (rf && cpR)
    out.push([
      `${fs}: reflink <= 1.2x cp --reflink=always`,
      rf.medianMs / cpR.medianMs <= 1.2,
      `${(rf.medianMs / cpR.medianMs).toFixed(2)}x`,
    ]);
  if (rf) out.push([`${fs}: reflink growth <= 3%`, growth(rf) <= 0.03, percent(rf.medianGrowthBytes, rf.baseBytes)]);
  if (ov)
    out.push(
      [`${fs}: overlay <= 0.1 s`, ov.medianMs <= 100, formatDuration(ov.medianMs, 3)],
      [`${fs}: overlay growth <= 0.5%`, growth(ov) <= 0.005, percent(ov.medianGrowthBytes, ov.baseBytes)],
    );
  if (bs)
    out.push(
      [`${fs}: btrfs-snapshot <= 0.5 s`, bs.medianMs <= 500, formatDuration(bs.medianMs, 3)],
      [`${fs}: btrfs-snapshot growth <= 0.5%`, growth(bs) <= 0.005, percent(bs.medianGrowthBytes, bs.baseBytes)],
    );
  if (bw)
    out.push([`${fs}: btrfs-snapshot on 10x entries <= 2x the 0.5 s limit (1 s)`, bw.medianMs <= 1000, formatDuration(bw.medianMs, 3)]);
  if (bs && bw)
    out.push([
      `${fs}: btrfs-snapshot on 10x entries <= 2x the measured normal-tree time`,
      bw.medianMs <= 2 * bs.medianMs,
      `${(bw.medianMs / bs.medianMs).toFixed(2)}x`,
    ]);
  for (const cow of [rf, ov, bs]) {
    if (cow && git)
      out.push([
        `${fs}: ${cow.backend} >= 20x faster than git worktree add`,
        git.medianMs / cow.medianMs >= 20,
        `${(git.medianMs / cow.medianMs).toFixed(1)}x`,
      ]);
  }
  return out;
}

export function cowTargets(filesystems: string[], rows: CowRow[]): Target[] {
  return filesystems.flatMap((fs) => fsTargets(fs, rows));
}
