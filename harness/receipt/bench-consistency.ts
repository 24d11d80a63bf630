// A benchmark script's receipt (scripts/bench/*, receipts/bench/) recomputed from its samples: each
// row's count and median, each ratio (the median of per-round ratios to another row of its group),
// and each goal's ratio and verdict. Samples are kept rounded to the microsecond, so a recomputed
// figure may differ from the recorded one in its last digits: RELATIVE_SLACK allows for that and no more.
import { median } from 'simple-statistics';
import type { Inconsistency } from './replay.js';

/** The fields of a benchmark receipt this check reads (schemas/bench-receipt.schema.json). */
export interface BenchReceiptFigures {
  results: Array<{
    name: string;
    group: string;
    n: number;
    medianMs: number | null;
    samplesMs: number[];
    ratios: Record<string, number>;
    metrics?: Record<string, string | number | null>;
  }>;
  goals?: Array<{
    group: string;
    measured: string;
    baseline: string;
    direction: 'at-most' | 'faster';
    limit: number;
    ratio: number;
    met: boolean;
  }>;
}

/** Samples rounded to 1 µs: a 0.5 ms sample moves a ratio by at most 0.1 %. */
const RELATIVE_SLACK = 2e-3;
/** Goal ratios are recorded to three decimals. */
const GOAL_SLACK = 6e-4;

const close = (a: number, b: number, rel = RELATIVE_SLACK) => Math.abs(a - b) <= rel * Math.max(Math.abs(a), Math.abs(b)) + 1e-6;

function perRoundRatio(xs: number[], ys: number[]): number | null {
  const r = xs.map((x, i) => x / ys[i]!).filter(Number.isFinite);
  return r.length ? median(r) : null;
}

type Goal = NonNullable<BenchReceiptFigures['goals']>[number];

/** The ratio a goal's rows give before its direction is applied; undefined where they give none (a missing row is pushed to `out`). */
function goalRaw(r: BenchReceiptFigures, g: Goal, rowAt: Map<string, number>, at: string, out: Inconsistency[]): number | undefined {
  const j = rowAt.get(`${g.group}\u0000${g.measured}`);
  // A peak-RSS goal's baseline is a fixed limit ("300 MB RSS", MB = 10^6 bytes): its ratio is the row's peakRssKiB over it.
  const rssLimitMb = /^(\d+) MB RSS$/.exec(g.baseline)?.[1];
  const kib = j === undefined ? undefined : r.results[j]!.metrics?.peakRssKiB;
  const rssKiB = typeof kib === 'number' ? kib : undefined;
  // A store-growth goal's baseline is "bytes ROW added": the measured row's bytesAddedTotal over that row's.
  const bytesOf = /^bytes (.+) added$/.exec(g.baseline)?.[1];
  const totalAt = (k: number | undefined) => {
    const v = k === undefined ? undefined : r.results[k]!.metrics?.bytesAddedTotal;
    return typeof v === 'number' ? v : undefined;
  };
  const [grew, base] = bytesOf === undefined ? [undefined, undefined] : [totalAt(j), totalAt(rowAt.get(`${g.group}\u0000${bytesOf}`))];
  if (bytesOf !== undefined && (grew === undefined || base === undefined))
    out.push({
      pointer: `${at}/baseline`,
      recorded: g.baseline,
      recomputed: `no rows "${g.measured}" and "${bytesOf}" in group "${g.group}" with bytesAddedTotal`,
      rule: "a store-growth goal's ratio is its row's bytesAddedTotal over the baseline row's",
    });
  const raw =
    bytesOf !== undefined
      ? grew === undefined || base === undefined
        ? undefined
        : grew / base
      : rssLimitMb !== undefined
        ? rssKiB === undefined
          ? undefined
          : (rssKiB * 1024) / (Number(rssLimitMb) * 1e6)
        : j === undefined
          ? undefined
          : r.results[j]!.ratios[g.baseline];
  // Some goals compare groups rather than rows (scale's growth): their ratio is not a row's, and only the verdict is recomputed.
  if (rssLimitMb !== undefined && raw === undefined)
    out.push({
      pointer: `${at}/measured`,
      recorded: g.measured,
      recomputed: `no row "${g.measured}" in group "${g.group}" with peakRssKiB`,
      rule: "a peak-RSS goal's ratio is its row's peak RSS over the limit",
    });
  return raw;
}

/** Every derived figure of a benchmark receipt that does not follow from its samples (empty: consistent). */
export function benchReceiptInconsistencies(r: BenchReceiptFigures): Inconsistency[] {
  const out: Inconsistency[] = [];
  const rowAt = new Map(r.results.map((row, i) => [`${row.group}\u0000${row.name}`, i]));
  r.results.forEach((row, i) => {
    const at = `/results/${i}`;
    if (row.n !== row.samplesMs.length)
      out.push({ pointer: `${at}/n`, recorded: row.n, recomputed: row.samplesMs.length, rule: 'n counts the samples' });
    const m = row.samplesMs.length ? median(row.samplesMs) : null;
    if (m === null ? row.medianMs !== null : row.medianMs === null || !close(row.medianMs, m))
      out.push({ pointer: `${at}/medianMs`, recorded: row.medianMs, recomputed: m, rule: 'the median of the samples' });
    for (const [other, ratio] of Object.entries(row.ratios)) {
      const j = rowAt.get(`${row.group}\u0000${other}`);
      const base = j === undefined ? undefined : r.results[j]!;
      const want = base ? perRoundRatio(row.samplesMs, base.samplesMs) : null;
      if (want === null || !close(ratio, want))
        out.push({
          pointer: `${at}/ratios/${other.replaceAll('~', '~0').replaceAll('/', '~1')}`,
          recorded: ratio,
          recomputed: want ?? `no row "${other}" in group "${row.group}" with samples`,
          rule: 'the median of per-round ratios to that row of the same group',
        });
    }
  });
  r.goals?.forEach((g, i) => {
    const at = `/goals/${i}`;
    const raw = goalRaw(r, g, rowAt, at, out);
    if (raw !== undefined) {
      const ratio = Math.round((g.direction === 'at-most' ? raw : 1 / raw) * 1000) / 1000;
      if (Math.abs(ratio - g.ratio) > GOAL_SLACK)
        out.push({
          pointer: `${at}/ratio`,
          recorded: g.ratio,
          recomputed: ratio,
          rule: "the measured row's ratio to its baseline, in the goal's direction",
        });
    }
    const met = g.ratio > 0 && (g.direction === 'at-most' ? g.ratio <= g.limit : g.ratio >= g.limit);
    if (g.met !== met)
      out.push({
        pointer: `${at}/met`,
        recorded: g.met,
        recomputed: met,
        rule: `met when the ratio is ${g.direction === 'at-most' ? 'at most' : 'at least'} the limit`,
      });
  });
  return out;
}
