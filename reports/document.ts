// Report numbers -> a neutral document (headings, paragraphs, tables, charts), which the Markdown
// and HTML renderers print. Both outputs therefore show the same numbers in the same order.
import type { Comparison, PhaseCell, RateRow, ReportData } from './report-data.js';
import type { GateResult, Policy } from './gate.js';
import { distributionChart, ratioChart } from './svg.js';

export type Block =
  | { kind: 'heading'; level: 1 | 2 | 3; text: string }
  | { kind: 'paragraph'; text: string }
  | { kind: 'verdict'; verdict: GateResult['verdict']; text: string }
  | { kind: 'list'; items: string[] }
  | { kind: 'table'; header: string[]; rows: string[][]; align?: ('l' | 'r')[] }
  | { kind: 'chart'; name: string; title: string; svg: string };

export interface ReportInput {
  data: ReportData;
  gate: GateResult | null;
  policy: Policy | null;
}

export function fmtMs(x: number | null | undefined): string {
  if (x === null || x === undefined) return '-';
  if (x >= 10000) return x.toFixed(0);
  if (x >= 100) return x.toFixed(1);
  return x.toFixed(2);
}

export function fmtRatio(x: number | null | undefined): string {
  return x === null || x === undefined ? '-' : x.toFixed(3);
}

export function fmtP(p: number | null | undefined): string {
  if (p === null || p === undefined) return '-';
  return p < 0.001 ? p.toExponential(1) : p.toFixed(3);
}

export function fmtPct(x: number | null | undefined): string {
  if (x === null || x === undefined) return '-';
  return `${(x * 100).toFixed(x < 0.01 && x > 0 ? 2 : 1)}%`;
}

function fmtGiB(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(0)} GiB`;
}

function slug(s: string): string {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

export function buildDocument(input: ReportInput): Block[] {
  const { data, gate, policy } = input;
  return [
    ...overview(data),
    ...(gate && policy ? decision(gate, policy) : []),
    ...testbeds(data),
    ...ratios(data, policy?.speedup.maxRatioUpper95),
    ...timings(data),
    ...rates(data),
    ...diagnostics(data),
    ...method(),
  ];
}

function overview(data: ReportData): Block[] {
  const synthetic = data.receipts.filter((r) => r.synthetic).length;
  return [
    { kind: 'heading', level: 1, text: 'pdb-env decision report' },
    {
      kind: 'paragraph',
      text:
        `${data.receipts.length} receipt(s), ${data.testbeds.length} testbed(s), ${data.backends.length} backend(s), ${data.workloads.length} workload(s); ` +
        `ratios against ${data.baseline}. Testbeds are never pooled: every number below belongs to one testbed (host + store filesystem).` +
        (synthetic > 0 ? ` ${synthetic} receipt(s) are SYNTHETIC test data, not evidence.` : ''),
    },
  ];
}

function decision(gate: GateResult, policy: Policy): Block[] {
  const b: Block[] = [];
  b.push({ kind: 'heading', level: 2, text: `Decision: ${gate.candidate} (policy ${gate.policy})` });
  const counts = { reject: 0, hold: 0, met: 0 };
  for (const f of gate.findings) counts[f.status]++;
  b.push({
    kind: 'verdict',
    verdict: gate.verdict,
    text: `${gate.verdict}: ${counts.reject} reject, ${counts.hold} hold, ${counts.met} met. Counted testbeds: ${gate.countedTestbeds.join(', ') || 'none'}.`,
  });
  b.push({ kind: 'paragraph', text: policy.description });
  if (gate.ignoredReceipts.length > 0) {
    b.push({
      kind: 'paragraph',
      text: `Left out of the decision: ${gate.ignoredReceipts.map((r) => `${r.runId} (${r.reason})`).join('; ')}.`,
    });
  }
  const order = { reject: 0, hold: 1, met: 2 } as const;
  const findings = [...gate.findings].sort((x, y) => order[x.status] - order[y.status]);
  b.push({
    kind: 'table',
    header: ['status', 'criterion', 'testbed', 'finding'],
    rows: findings.map((f) => [f.status.toUpperCase(), f.criterion, f.testbed ?? '-', f.message]),
  });
  return b;
}

function testbeds(data: ReportData): Block[] {
  return [
    { kind: 'heading', level: 2, text: 'Testbeds' },
    {
      kind: 'table',
      header: [
        'testbed',
        'host',
        'os',
        'kernel',
        'arch',
        'cpu',
        'cores',
        'memory',
        'store fs',
        'receipts',
        'plans',
        'unavailable backends',
      ],
      rows: data.testbeds.map((t) => [
        t.id + (t.synthetic ? ' (synthetic)' : ''),
        t.hostId,
        t.os,
        t.kernels.join(', '),
        t.arch,
        t.cpuModel,
        String(t.cores),
        fmtGiB(t.memoryBytes),
        t.storeFs,
        String(t.receipts),
        t.planNames.join(', '),
        t.unavailable.map((u) => `${u.backend} (${u.reason ?? '?'})`).join(', ') || '-',
      ]),
    },
    {
      kind: 'table',
      header: ['run', 'plan', 'testbed', 'started', 'finished', 'cases'],
      rows: data.receipts.map((r) => [r.runId, r.planName, r.testbed, r.startedAt, r.finishedAt, String(r.cases)]),
      align: ['l', 'l', 'l', 'l', 'l', 'r'],
    },
  ];
}

function ratios(data: ReportData, threshold: number | undefined): Block[] {
  const b: Block[] = [];
  b.push({ kind: 'heading', level: 2, text: `Ratio to ${data.baseline}, paired per block` });
  b.push({
    kind: 'paragraph',
    text:
      `Each block runs every backend once; the ratio is candidate / ${data.baseline} for the same block and phase (< 1 is faster). ` +
      `Median ratio with a percentile bootstrap 95% CI resampling whole blocks (${data.bootstrapResamples} resamples, seed ${data.seed}); ` +
      `p from a paired sign-flip permutation test on log ratios (exact up to 16 blocks, else ${data.permutationDraws} Monte Carlo draws as (k+1)/(m+1)); "~" = not significant (p >= ${data.alpha} or the CI contains 1).`,
  });
  for (const t of data.testbeds) {
    const cs = data.comparisons.filter((c) => c.testbed === t.id && c.blocks > 0);
    if (cs.length === 0) continue;
    b.push({ kind: 'heading', level: 3, text: `${t.id}: ${t.os} ${t.arch}, ${t.cpuModel}, store ${t.storeFs}` });
    b.push({
      kind: 'chart',
      name: `ratio-${slug(t.id)}`,
      title: `${t.id} ratio to ${data.baseline} (95% CI)`,
      svg: ratioChart(`${t.id} (${t.storeFs}): ratio to ${data.baseline}, median and 95% bootstrap CI`, cs, data.backends, threshold),
    });
    b.push(comparisonTable(cs));
  }
  return b;
}

function timings(data: ReportData): Block[] {
  const b: Block[] = [];
  b.push({ kind: 'heading', level: 2, text: 'Timings per backend, workload, phase and testbed' });
  b.push({
    kind: 'paragraph',
    text:
      'Milliseconds, monotonic clock. Warm-up cases are counted and drawn (hollow grey) but excluded from every statistic. ' +
      'Median 95% CI from order statistics (binomial ranks, distribution-free; needs n >= 6); p95 only when n >= 20; CV = sample SD / mean. ' +
      'Chart: dots are cases, box = IQR, thick bar = median, shaded band = its 95% CI.',
  });
  for (const t of data.testbeds) {
    for (const w of data.workloads) {
      const cells = data.cells.filter((c) => c.testbed === t.id && c.workload === w);
      if (cells.length === 0) continue;
      b.push({ kind: 'heading', level: 3, text: `${t.id} · ${w}` });
      b.push({
        kind: 'chart',
        name: `dist-${slug(t.id)}-${slug(w)}`,
        title: `${t.id} ${w} per-phase distributions`,
        svg: distributionChart(`${t.id} (${t.storeFs}) · ${w}: per-phase durations by backend`, cells, data.phases, data.backends),
      });
      b.push(cellTable(cells, data.phases, data.backends));
    }
  }
  return b;
}

function rates(data: ReportData): Block[] {
  return [
    { kind: 'heading', level: 2, text: 'Failure, mismatch and clone-fallback rates' },
    {
      kind: 'paragraph',
      text: 'One-sided 95% bounds: with 0 events in N trials the upper bound is 1 - 0.05^(1/N); otherwise exact Clopper-Pearson. Failures count failed and timed-out cases (warm-up included); mismatches count failed oracle checks; a fallback is a clone backend case with cloneObserved false or a typed clone failure.',
    },
    rateTable(data.rates),
  ];
}

function diagnostics(data: ReportData): Block[] {
  const heading: Block = { kind: 'heading', level: 2, text: 'Diagnostics' };
  if (data.diagnostics.length === 0) return [heading, { kind: 'paragraph', text: 'None.' }];
  return [
    heading,
    { kind: 'paragraph', text: 'Shown for review; no data point is removed because of them.' },
    {
      kind: 'table',
      header: ['kind', 'testbed', 'backend', 'workload', 'phase', 'detail'],
      rows: data.diagnostics.map((d) => [d.kind, d.testbed, d.backend, d.workload, d.phase, d.message]),
    },
  ];
}

function method(): Block[] {
  return [
    { kind: 'heading', level: 2, text: 'Method' },
    {
      kind: 'list',
      items: [
        'Testbed = salted host id + OS + CPU model + store filesystem; receipts of one testbed are combined, testbeds never are.',
        'simple-statistics computes medians, quantiles (p95, IQR), standard deviation, MAD, Spearman rank correlation and the resampling draws (with a seeded mulberry32 source).',
        'Written here because simple-statistics has no equivalent: the order-statistic ranks of the median CI (exact binomial), the regularized incomplete beta (continued fraction) and its quantile by bisection for Clopper-Pearson, and the paired sign-flip permutation test.',
        'Outliers: modified z-score 0.6745 (x - median) / MAD above 3.5. Slow first block: first measured case above 1.5x the median of the rest and the slowest. Drift: |Spearman rho| of duration against run position above 1.96 / sqrt(n - 1).',
        `Gate findings come from the receipts the policy admits; synthetic receipts (plan name "synthetic...") never count toward a promotion.`,
      ],
    },
  ];
}

function comparisonTable(cs: Comparison[]): Block {
  return {
    kind: 'table',
    header: ['backend', 'workload', 'phase', 'blocks', 'median ratio', '95% CI', 'p', 'test', 'verdict'],
    rows: cs.map((c) => [
      c.backend,
      c.workload,
      c.phase,
      String(c.blocks),
      c.significant ? fmtRatio(c.medianRatio) : `~${fmtRatio(c.medianRatio)}`,
      c.ci ? `[${fmtRatio(c.ci.lower)}, ${fmtRatio(c.ci.upper)}]` : '-',
      fmtP(c.permutation?.p),
      c.permutation ? `${c.permutation.method} (${c.permutation.permutations})` : '-',
      c.verdict,
    ]),
    align: ['l', 'l', 'l', 'r', 'r', 'r', 'r', 'l', 'l'],
  };
}

function cellTable(cells: PhaseCell[], phases: string[], backends: string[]): Block {
  const sorted = [...cells].sort(
    (a, b) => phases.indexOf(a.phase) - phases.indexOf(b.phase) || backends.indexOf(a.backend) - backends.indexOf(b.backend),
  );
  return {
    kind: 'table',
    header: [
      'phase',
      'backend',
      'planned',
      'warm-up',
      'done',
      'failed',
      'timeout',
      'unavail.',
      'not run',
      'median',
      '95% CI',
      'p95',
      'min',
      'max',
      'IQR',
      'CV',
    ],
    rows: sorted.map((c) => [
      c.phase,
      c.backend,
      String(c.planned),
      String(c.warmup),
      String(c.completed),
      String(c.failed),
      String(c.timeout),
      String(c.unavailable),
      String(c.notRun),
      fmtMs(c.summary.median),
      c.summary.medianCi ? `[${fmtMs(c.summary.medianCi.lower)}, ${fmtMs(c.summary.medianCi.upper)}]` : '-',
      fmtMs(c.summary.p95),
      fmtMs(c.summary.min),
      fmtMs(c.summary.max),
      fmtMs(c.summary.iqr),
      c.summary.cv === null ? '-' : c.summary.cv.toFixed(3),
    ]),
    align: ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
  };
}

function rateTable(rates: RateRow[]): Block {
  return {
    kind: 'table',
    header: ['testbed', 'backend', 'workload', 'rate of', 'events / trials', 'rate', '95% upper', 'method'],
    rows: rates.map((r) => [
      r.testbed,
      r.backend,
      r.workload === '*' ? 'all' : r.workload,
      r.kind,
      `${r.bound.events} / ${r.bound.trials}`,
      fmtPct(r.bound.rate),
      fmtPct(r.bound.upper95),
      r.bound.method,
    ]),
    align: ['l', 'l', 'l', 'l', 'r', 'r', 'r', 'l'],
  };
}
