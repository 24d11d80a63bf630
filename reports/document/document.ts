// Report numbers -> a neutral document (headings, paragraphs, tables, charts), which the Markdown
// and HTML renderers print. Both outputs therefore show the same numbers in the same order: the
// answer first (answer.ts), then the policy verdict, then the detail behind both.
import { answerBlocks, decisionBlocks, evidenceNote } from './answer.js';
import type { Comparison, PhaseCell, RateRow, ReportData } from '../analysis/report-data.js';
import type { GateResult, Policy } from '../gate/gate-policy.js';
import { distributionChart, ratioChart } from './svg.js';
import type { Block } from './block.js';
import { fmtMs, fmtP, fmtPct, fmtRatio } from '../analysis/format.js';

export type { Block } from './block.js';

export interface ReportInput {
  data: ReportData;
  gate: GateResult | null;
  policy: Policy | null;
  /** Who signed each receipt, by run id (keyids whose signatures verify, or 'unsigned'), when the reader checked. */
  signers?: Record<string, string[] | 'unsigned'>;
  /** Whether a gate counts each receipt (by run id): the trusted signer's host, or why it is left out. */
  admission?: Record<string, { trustedHost: string | null; counted: boolean; code: string | null; reason: string | null }>;
  /** Receipts left out before the analysis because they repeat another's measurements. */
  repeats?: { file: string; runId: string; of: string; reason: string }[];
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
    ...answerBlocks(data),
    ...(gate && policy ? decisionBlocks(gate, policy, data) : []),
    ...testbeds(data, input.signers, input.admission),
    ...repeatsNote(input.repeats),
    ...ratios(data, policy ? { backend: policy.candidate, ratio: policy.speedup.maxRatioUpper95 } : undefined),
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
        `${data.receipts.length} receipt(s), ${data.testbeds.length} testbed(s), ${data.backends.length} backend(s), ${data.workloads.length} workload(s), ${data.fixtures.length} fixture(s); ` +
        `ratios against ${data.baseline}. Testbeds and fixtures are never pooled: every number below belongs to one testbed (host + store filesystem) and one fixture.` +
        (synthetic > 0 ? ` ${synthetic} receipt(s) are SYNTHETIC test data, not evidence.` : ''),
    },
    ...evidenceNote(data),
  ];
}

/** A receipt's signers as the Receipts table shows them: each keyid's first 16 hex digits, or "unsigned". */
function signedBy(s: string[] | 'unsigned' | undefined, a?: NonNullable<ReportInput['admission']>[string]): string {
  const who = s === undefined || s === 'unsigned' ? 'unsigned' : s.length ? s.map((k) => k.slice(0, 16)).join(', ') : 'no valid signature';
  if (!a) return who;
  return `${who}${a.trustedHost ? ` (trusted: ${a.trustedHost})` : ''}${a.counted ? '' : `; not counted: ${a.code}`}`;
}

/** Receipts left out because they repeat another's measurements, each with the one it repeats. */
function repeatsNote(repeats: ReportInput['repeats']): Block[] {
  if (!repeats?.length) return [];
  return [
    {
      kind: 'paragraph',
      text: `Left out as repeats (E_RECEIPT_DUPLICATE), counted nowhere: ${repeats.map((r) => `${r.runId} repeats ${r.of} (${r.reason})`).join('; ')}.`,
    },
  ];
}

function testbeds(data: ReportData, signers?: ReportInput['signers'], admission?: ReportInput['admission']): Block[] {
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
    ...receiptsTable(data, signers, admission),
    {
      kind: 'table',
      header: ['fixture', 'workload', 'name', 'version', 'parameters', 'base Snapshot'],
      rows: data.fixtures.map((f) => [
        f.label,
        f.workload,
        f.name,
        f.version ?? '-',
        f.paramsDigest ? f.paramsDigest.slice(0, 19) : '- (v1)',
        f.baseSnapshot ? f.baseSnapshot.slice(0, 19) : '- (v1)',
      ]),
    },
  ];
}

/** The Receipts table: each run, its schema, commit and load, whether it is gate evidence, its harness overhead and signers. */
function receiptsTable(data: ReportData, signers?: ReportInput['signers'], admission?: ReportInput['admission']): Block[] {
  return [
    { kind: 'heading', level: 2, text: 'Receipts' },
    {
      kind: 'table',
      header: [
        'run',
        'plan',
        'testbed',
        'started',
        'finished',
        'cases',
        'schema',
        'commit',
        'load at start',
        'gate evidence',
        'harness overhead (median / max by workload)',
        ...(signers ? ['signed by'] : []),
      ],
      rows: data.receipts.map((r) => [
        r.runId,
        r.planName,
        r.testbed,
        r.startedAt,
        r.finishedAt,
        String(r.cases),
        `v${r.schemaVersion}`,
        r.commit ? r.commit.slice(0, 12) : '-',
        r.loadAverage ? r.loadAverage.map((x) => x.toFixed(2)).join(' / ') : '-',
        r.gateEvidence ? 'yes' : `no: ${r.gateEvidenceReason ?? '?'}`,
        r.overheadByWorkload.map((w) => `${w.workload} ${fmtPct(w.shareMedian)} / ${fmtPct(w.shareMax)}`).join(', ') || '-',
        ...(signers ? [signedBy(signers[r.runId], admission?.[r.runId])] : []),
      ]),
      align: ['l', 'l', 'l', 'l', 'l', 'r', 'l', 'l', 'r', 'l', 'l', ...(signers ? (['l'] as const) : [])],
    },
  ];
}

function ratios(data: ReportData, threshold: { backend: string; ratio: number } | undefined): Block[] {
  const b: Block[] = [];
  b.push({ kind: 'heading', level: 2, text: `Ratio to ${data.baseline}, paired per block` });
  b.push({
    kind: 'paragraph',
    text:
      `Each block runs every backend once; the ratio is candidate / ${data.baseline} for the same block and phase (< 1 is faster). ` +
      `Median ratio with a percentile bootstrap 95% CI resampling whole blocks (${data.bootstrapResamples} resamples, seed ${data.seed}); ` +
      `p from a paired sign-flip permutation test on log ratios (exact up to 16 blocks, else ${data.permutationDraws} Monte Carlo draws as (k+1)/(m+1)). ` +
      `Verdict: faster or slower when p < ${data.alpha} and the CI excludes 1; "no difference shown" otherwise; "too few blocks to tell" below 6 paired blocks. ` +
      `The chart draws the policy's threshold only on a chart that holds its candidate, ` +
      `and leaves out a backend judged not correct for that workload and fixture (the first table): its speed answers nothing; its rows stay in the table.`,
  });
  const incorrect = new Set(
    data.answers.flatMap((a) =>
      a.backends.filter((s) => s.status === 'incorrect').map((s) => `${a.testbed}\0${a.workload}\0${a.fixture}\0${s.backend}`),
    ),
  );
  for (const t of data.testbeds) {
    const cs = data.comparisons.filter((c) => c.testbed === t.id && c.blocks > 0);
    if (cs.length === 0) continue;
    const drawn = cs.filter((c) => !incorrect.has(`${c.testbed}\0${c.workload}\0${c.fixture}\0${c.backend}`));
    b.push({ kind: 'heading', level: 3, text: `${t.id}: ${t.os} ${t.arch}, ${t.cpuModel}, store ${t.storeFs}` });
    b.push({
      kind: 'chart',
      name: `ratio-${slug(t.id)}`,
      title: `${t.id} ratio to ${data.baseline} (95% CI)`,
      svg: ratioChart(`${t.id} (${t.storeFs}): ratio to ${data.baseline}, median and 95% bootstrap CI`, drawn, data.backends, threshold),
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
    for (const f of data.fixtures) {
      const cells = data.cells.filter((c) => c.testbed === t.id && c.workload === f.workload && c.fixture === f.label);
      if (cells.length === 0) continue;
      const drawn = cells.some((c) => c.valuesMs.length + c.warmupValuesMs.length > 0);
      b.push({ kind: 'heading', level: 3, text: `${t.id} · ${f.workload} · ${f.label}` });
      if (drawn)
        b.push({
          kind: 'chart',
          name: `dist-${slug(t.id)}-${slug(f.label)}`,
          title: `${t.id} ${f.workload} ${f.label} per-phase distributions`,
          svg: distributionChart(`${t.id} (${t.storeFs}) · ${f.label}: per-phase durations by backend`, cells, data.phases, data.backends),
        });
      else
        b.push({
          kind: 'paragraph',
          text: 'No measured durations (every case here was unavailable, stopped by the environment or failed).',
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
      text: "One-sided 95% bounds: with 0 events in N trials the upper bound is 1 - 0.05^(1/N); otherwise exact Clopper-Pearson. Trials are attempted cases: environment and unavailable cases are never counted. Failures count failed and timed-out cases (warm-up included); mismatches count evaluated oracle checks that failed, in cases compared with their block's full-copy case; a fallback is a clone backend case with cloneObserved false or a typed clone failure.",
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
      header: ['kind', 'testbed', 'backend', 'workload', 'fixture', 'phase', 'detail'],
      rows: data.diagnostics.map((d) => [d.kind, d.testbed, d.backend, d.workload, d.fixture, d.phase, d.message]),
    },
  ];
}

function method(): Block[] {
  return [
    { kind: 'heading', level: 2, text: 'Method' },
    {
      kind: 'list',
      items: [
        'Testbed = salted host id + OS + CPU model + store filesystem; receipts of one testbed are combined, testbeds never are. Fixture = workload, name and version, parameters digest and base Snapshot; a cell holds one fixture.',
        "Oracle: every case of a non-full-copy backend is compared entry by entry, under the workload's projection, with the full-copy case of its block; when that case failed, the comparison is recorded as not evaluated and the case judges nothing.",
        'Gate evidence: only receipts whose run started at a clean commit and ended with the same code; schema version 1 receipts carry no provenance and never count.',
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
    header: ['backend', 'workload', 'fixture', 'phase', 'blocks', 'median ratio', '95% CI', 'p', 'test', 'verdict'],
    rows: cs.map((c) => [
      c.backend,
      c.workload,
      c.fixture,
      c.phase,
      String(c.blocks),
      c.significant ? fmtRatio(c.medianRatio) : `~${fmtRatio(c.medianRatio)}`,
      c.ci ? `[${fmtRatio(c.ci.lower)}, ${fmtRatio(c.ci.upper)}]` : '-',
      fmtP(c.permutation?.p),
      c.permutation ? `${c.permutation.method} (${c.permutation.permutations})` : '-',
      c.words,
    ]),
    align: ['l', 'l', 'l', 'l', 'r', 'r', 'r', 'r', 'l', 'l'],
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
      'mismatch',
      'failed',
      'timeout',
      'unavail.',
      'environment',
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
      String(c.mismatch),
      String(c.failed),
      String(c.timeout),
      String(c.unavailable),
      String(c.environment),
      String(c.notRun),
      fmtMs(c.summary.median),
      c.summary.medianCi ? `[${fmtMs(c.summary.medianCi.lower)}, ${fmtMs(c.summary.medianCi.upper)}]` : '-',
      fmtMs(c.summary.p95),
      fmtMs(c.summary.min),
      fmtMs(c.summary.max),
      fmtMs(c.summary.iqr),
      c.summary.cv === null ? '-' : c.summary.cv.toFixed(3),
    ]),
    align: ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
  };
}

function rateTable(rates: RateRow[]): Block {
  return {
    kind: 'table',
    header: ['testbed', 'backend', 'workload', 'fixture', 'rate of', 'events / trials', 'rate', '95% upper', 'method'],
    rows: rates.map((r) => [
      r.testbed,
      r.backend,
      r.workload === '*' ? 'all' : r.workload,
      r.fixture === '*' ? 'all' : r.fixture,
      r.kind,
      `${r.bound.events} / ${r.bound.trials}`,
      fmtPct(r.bound.rate),
      fmtPct(r.bound.upper95),
      r.bound.method,
    ]),
    align: ['l', 'l', 'l', 'l', 'l', 'r', 'r', 'r', 'l'],
  };
}
