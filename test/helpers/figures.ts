// The figures docs/figures.json lists, computed again from their receipts (test/figures.test.ts):
// each computation as the text names it, from the receipt's own samples and records.
import * as assert from 'uvu/assert';

export type Row = [group: string, name: string];
export type Compute =
  | { kind: 'pointer'; pointer: string }
  | { kind: 'median'; row: Row }
  | { kind: 'per-round-ratio' | 'ratio-of-medians'; row: Row; baseline: Row }
  | { kind: 'metric'; row: Row; metric: string }
  | { kind: 'growth-share'; row: Row }
  | { kind: 'oracle-files'; workload: string }
  | { kind: 'phase-median'; phase: string; backend?: string; workload?: string }
  /** The median over cases of the sum of the phases whose names start with `prefix`, less those named in `except`. */
  | { kind: 'phase-sum-median'; prefix: string; except: string[] }
  | { kind: 'start-time' }
  /** The harness's overhead share of each case's wall time (wall minus every phase, over wall), recomputed from the phases: its median or max. */
  | { kind: 'overhead-share'; stat: 'median' | 'max' };

export interface Figure {
  id: string;
  /** The document (README.md or docs/*.md) and a piece of the line that quotes the figure. */
  doc: string;
  line: string;
  /** Where to start looking for `line` (a piece of an earlier line), when `line` alone is not unique. */
  after?: string;
  quoted: string;
  receipt: string;
  /** In words, as the text says it: "median of per-round ratios", "ratio of medians", "recorded". */
  method: string;
  compute: Compute;
  format: { scale?: number; decimals?: number; prefix?: string; suffix?: string; thousands?: boolean };
}

export interface BenchRowDoc {
  group: string;
  name: string;
  samplesMs: number[];
  metrics: Record<string, number | string | null>;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function pointer(doc: unknown, p: string): unknown {
  return p
    .split('/')
    .slice(1)
    .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], doc);
}

export function row(doc: unknown, [group, name]: Row): BenchRowDoc {
  const found = (doc as { results: BenchRowDoc[] }).results.find((r) => r.group === group && r.name === name);
  if (!found) throw new Error(`no row ${group}/${name}`);
  return found;
}

/** The figure's value, computed from the receipt's own samples and records. */
export function computeFigure(doc: unknown, c: Compute): number | string {
  switch (c.kind) {
    case 'pointer': {
      const v = pointer(doc, c.pointer);
      if (typeof v !== 'number' && typeof v !== 'string') throw new Error(`${c.pointer} is ${JSON.stringify(v)}`);
      return v;
    }
    case 'median':
      return median(row(doc, c.row).samplesMs);
    case 'per-round-ratio': {
      const a = row(doc, c.row).samplesMs;
      const b = row(doc, c.baseline).samplesMs;
      assert.is(a.length, b.length, `${c.row.join('/')} and ${c.baseline.join('/')} have as many rounds`);
      return median(a.map((x, i) => x / b[i]!));
    }
    case 'ratio-of-medians':
      return median(row(doc, c.row).samplesMs) / median(row(doc, c.baseline).samplesMs);
    case 'metric':
      return row(doc, c.row).metrics[c.metric] as number;
    case 'growth-share': {
      const m = row(doc, c.row).metrics;
      return ((m.medianGrowthBytes as number) / (m.baseBytes as number)) * 100;
    }
    case 'oracle-files': {
      const cases = (doc as { cases: Array<{ workload: string; checks: Array<{ name: string; files?: { case?: number } | null }> }> })
        .cases;
      const counts = new Set(
        cases
          .filter((x) => x.workload === c.workload)
          .flatMap((x) => x.checks.filter((k) => k.name === 'oracle').map((k) => k.files?.case)),
      );
      assert.is(counts.size, 1, `one file count for ${c.workload}: ${[...counts].join(', ')}`);
      return [...counts][0]!;
    }
    case 'phase-median': {
      type Case = { warmup?: boolean; backend: string; workload: string; phases: Array<{ name: string; durationMs: number }> };
      const cases = (doc as { cases: Case[] }).cases.filter(
        (x) => !x.warmup && (c.backend === undefined || x.backend === c.backend) && (c.workload === undefined || x.workload === c.workload),
      );
      return median(cases.flatMap((x) => x.phases.filter((p) => p.name === c.phase).map((p) => p.durationMs)));
    }
    case 'phase-sum-median': {
      type Case = { warmup?: boolean; outcome: string; phases: Array<{ name: string; durationMs: number }> };
      const sums = (doc as { cases: Case[] }).cases
        .filter((x) => !x.warmup && x.outcome === 'ok')
        .map((x) =>
          x.phases.filter((p) => p.name.startsWith(c.prefix) && !c.except.includes(p.name)).reduce((t, p) => t + p.durationMs, 0),
        );
      return median(sums);
    }
    case 'start-time':
      return (pointer(doc, '/startedAt') as string).slice(11, 16);
    case 'overhead-share': {
      type Case = { wallMs: number; phases: Array<{ durationMs: number }> };
      const shares = (doc as { cases: Case[] }).cases
        .filter((x) => x.wallMs > 0)
        .map((x) => Math.max(0, x.wallMs - x.phases.reduce((s, p) => s + p.durationMs, 0)) / x.wallMs);
      return (c.stat === 'median' ? median(shares) : Math.max(...shares)) * 100;
    }
    default: {
      const never: never = c;
      throw new Error(`unknown computation ${JSON.stringify(never)}`);
    }
  }
}

export function formatFigure(v: number | string, f: Figure['format']): string {
  if (typeof v === 'string') return `${f.prefix ?? ''}${v}${f.suffix ?? ''}`;
  const d = f.decimals ?? 0;
  const x = Math.round(v * (f.scale ?? 1) * 10 ** d + 1e-9) / 10 ** d;
  const text = f.thousands ? x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }) : x.toFixed(d);
  return `${f.prefix ?? ''}${text}${f.suffix ?? ''}`;
}

/** The first line of `text` holding `f.line` (after the first line holding `f.after`, when given), or null. */
export function quotingLine(text: string, f: Pick<Figure, 'line' | 'after'>): string | null {
  const lines = text.split('\n');
  const from = f.after === undefined ? 0 : lines.findIndex((l) => l.includes(f.after!));
  if (from < 0) return null;
  return lines.slice(from).find((l) => l.includes(f.line)) ?? null;
}
