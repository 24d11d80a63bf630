// Receipts -> report numbers. A pure function: no clock, no file system, no environment; the same
// receipts and options give the same document byte for byte (resampling is seeded per comparison).
// Testbeds, fixtures, phase cells, comparisons and answers each have their own module; this one
// walks the grid: testbed x backend x workload x fixture, so no number pools two fixtures.
import type { AnyReceipt } from '../../harness/receipt/receipt-types.js';
import { answerFor } from './answers.js';
import { compare, rateRows, seedFor, tooFewBlocks } from './comparisons.js';
import { cellDiagnostics, phaseCell, plannedSlots, type CellKey, type Slots } from './phase-cells.js';
import { readReceipt, type ReportReceipt } from '../receipts/receipts.js';
import {
  MIN_BLOCKS_TO_TELL,
  REPORT_VERSION,
  TOTAL_PHASE,
  uniqSorted,
  type FixtureInfo,
  type IndexedCase,
  type ReportData,
  type Testbed,
} from './report-data.js';
import { buildTestbeds, isSyntheticReceipt, labelTestbeds, sortReceipts, testbedKey } from './testbeds.js';
import { summarize } from './statistics.js';

export interface AnalyzeOptions {
  /** The reference backend for paired ratios. */
  baseline?: string;
  /** Seed for the bootstrap and Monte Carlo permutations; recorded in the report. */
  seed?: number;
  /** Significance level of the permutation test. */
  alpha?: number;
  bootstrapResamples?: number;
  permutationDraws?: number;
  /** Testbed labels by testbedKey (from labelTestbeds over a larger receipt set), so a subset keeps its labels. */
  labels?: Map<string, string>;
}

type Settings = Required<Omit<AnalyzeOptions, 'labels'>>;

type Rows = Pick<ReportData, 'cells' | 'comparisons' | 'rates' | 'diagnostics' | 'answers'>;

/** Everything the grid walk reads. */
interface Grid {
  settings: Settings;
  testbeds: Testbed[];
  backends: string[];
  workloads: string[];
  fixtures: FixtureInfo[];
  phases: string[];
  cases: IndexedCase[];
  /** Cases by JSON [testbed, backend, workload, fixture]. */
  groups: Map<string, IndexedCase[]>;
  slots: Map<string, Slots>;
}

const keyOf = (k: CellKey): string => JSON.stringify([k.testbed, k.backend, k.workload, k.fixture]);

export function analyzeReceipts(input: (AnyReceipt | ReportReceipt)[], options: AnalyzeOptions = {}): ReportData {
  const settings: Settings = {
    baseline: options.baseline ?? 'full-copy',
    seed: options.seed ?? 20260101,
    alpha: options.alpha ?? 0.05,
    bootstrapResamples: options.bootstrapResamples ?? 4000,
    permutationDraws: options.permutationDraws ?? 9999,
  };
  const receipts = input.map(readReceipt);
  const ordered = sortReceipts(receipts);
  const { testbedIds, testbeds } = buildTestbeds(ordered, options.labels ?? labelTestbeds(receipts));
  const fixtures = fixtureInfos(ordered);
  const labels = new Map(fixtures.map((f) => [f.key, f.label]));
  const cases = indexCases(ordered, testbedIds, labels);
  const slots = plannedSlots(ordered, testbedIds, labels);
  const slotKeys = [...slots.keys()].map((k) => JSON.parse(k) as [string, string, string, string]);
  const { baseline } = settings;
  const backends = uniqSorted([...cases.map((x) => x.c.backend), ...slotKeys.map((k) => k[1])]).sort((a, b) =>
    a === baseline ? -1 : b === baseline ? 1 : a.localeCompare(b),
  );
  const workloads = uniqSorted([...cases.map((x) => x.c.workload), ...slotKeys.map((k) => k[2])]);
  const phases = phaseList(cases);
  const rows = walkGrid({ settings, testbeds, backends, workloads, fixtures, phases, cases, groups: groupCases(cases), slots });
  return {
    kind: 'pdb-env-report',
    reportVersion: REPORT_VERSION,
    ...settings,
    receipts: ordered.map((r) => ({
      runId: r.runId,
      planName: r.planName,
      testbed: testbedIds.get(testbedKey(r))!,
      startedAt: r.startedAt,
      finishedAt: r.finishedAt,
      cases: r.cases.length,
      synthetic: isSyntheticReceipt(r),
      schemaVersion: r.schemaVersion,
      commit: r.provenance?.commit ?? r.legacyCommit,
      loadAverage: r.host.loadAverage,
      gateEvidence: r.gateEvidence.ok,
      gateEvidenceReason: r.gateEvidence.reason,
      overheadByWorkload: overheadByWorkload(r.cases),
    })),
    testbeds,
    backends,
    workloads,
    fixtures,
    phases,
    ...rows,
  };
}

/** Every fixture of the receipts, labelled by its name, made unique by its parameters (then its base) when names repeat. */
function fixtureInfos(ordered: ReportReceipt[]): FixtureInfo[] {
  const byKey = new Map<string, ReportReceipt['cases'][number]['fixture']>();
  for (const r of ordered) for (const c of r.cases) if (!byKey.has(c.fixture.key)) byKey.set(c.fixture.key, c.fixture);
  const all = [...byKey.values()].sort((a, b) => a.workload.localeCompare(b.workload) || a.key.localeCompare(b.key));
  const count = (f: (x: (typeof all)[number]) => string) => {
    const m = new Map<string, number>();
    for (const x of all) m.set(f(x), (m.get(f(x)) ?? 0) + 1);
    return m;
  };
  const names = count((x) => `${x.workload}\0${x.name}`);
  const withParams = count((x) => `${x.workload}\0${x.name}\0${x.paramsDigest}`);
  return all.map((f) => {
    let label = f.name;
    if ((names.get(`${f.workload}\0${f.name}`) ?? 0) > 1) {
      label += ` p:${(f.paramsDigest ?? 'unknown').replace('sha256:', '').slice(0, 6)}`;
      if ((withParams.get(`${f.workload}\0${f.name}\0${f.paramsDigest}`) ?? 0) > 1)
        label += ` b:${(f.baseSnapshot ?? 'unknown').replace('sha256:', '').slice(0, 6)}`;
    }
    return { label, ...f };
  });
}

/** Every case with its testbed, fixture label and place in the testbed's run order (receipts by start, then block, position). */
function indexCases(ordered: ReportReceipt[], testbedIds: Map<string, string>, labels: Map<string, string>): IndexedCase[] {
  const cases: IndexedCase[] = [];
  const runCounter = new Map<string, number>();
  for (const r of ordered) {
    const testbed = testbedIds.get(testbedKey(r))!;
    const sorted = [...r.cases].sort((a, b) => a.block - b.block || a.position - b.position);
    for (const c of sorted) {
      const runIndex = runCounter.get(testbed) ?? 0;
      runCounter.set(testbed, runIndex + 1);
      cases.push({ receipt: r, testbed, fixture: labels.get(c.fixture.key) ?? c.fixture.name, runIndex, c });
    }
  }
  return cases;
}

function phaseOrder(a: string, b: string, firstSeen: Map<string, number>): number {
  const rank = (p: string): number =>
    p === 'create' ? 0 : p.startsWith('step:') ? 1 : p === 'checkpoint' ? 2 : p === 'discard' ? 3 : p === TOTAL_PHASE ? 5 : 4;
  return rank(a) - rank(b) || (firstSeen.get(a) ?? 0) - (firstSeen.get(b) ?? 0) || a.localeCompare(b);
}

/** Every phase seen, plus the whole case, in lifecycle order (create, steps, checkpoint, discard, others, total). */
function phaseList(cases: IndexedCase[]): string[] {
  const firstSeen = new Map<string, number>();
  for (const { c } of cases) for (const p of c.phases) if (!firstSeen.has(p.name)) firstSeen.set(p.name, firstSeen.size);
  return [...firstSeen.keys(), TOTAL_PHASE].sort((a, b) => phaseOrder(a, b, firstSeen));
}

function groupCases(cases: IndexedCase[]): Map<string, IndexedCase[]> {
  const groups = new Map<string, IndexedCase[]>();
  for (const x of cases) {
    const k = keyOf({ testbed: x.testbed, backend: x.c.backend, workload: x.c.workload, fixture: x.fixture });
    const g = groups.get(k);
    if (g) g.push(x);
    else groups.set(k, [x]);
  }
  return groups;
}

/** Rates, cells, comparisons, diagnostics and answers for every testbed x backend x workload x fixture. */
function walkGrid(g: Grid): Rows {
  const rows: Rows = { cells: [], comparisons: [], rates: [], diagnostics: [], answers: [] };
  for (const tb of g.testbeds) {
    for (const backend of g.backends) {
      const all = g.cases.filter((x) => x.testbed === tb.id && x.c.backend === backend);
      if (all.length > 0)
        rows.rates.push(
          ...rateRows(
            { testbed: tb.id, backend, workload: '*', fixture: '*' },
            all.map((x) => x.c),
          ),
        );
      for (const workload of g.workloads)
        for (const fixture of fixturesOf(g, tb.id, workload)) analyzeGroup(g, rows, { testbed: tb.id, backend, workload, fixture });
    }
    for (const workload of g.workloads)
      for (const fixture of fixturesOf(g, tb.id, workload)) {
        const casesOf = (backend: string) => (g.groups.get(keyOf({ testbed: tb.id, backend, workload, fixture })) ?? []).map((x) => x.c);
        const answer = answerFor(g.settings.baseline, tb, { workload, fixture }, rows, g.backends, casesOf);
        if (answer) rows.answers.push(answer);
      }
  }
  return rows;
}

/** The fixtures of a workload on a testbed: those its cases ran, and those of planned slots. */
function fixturesOf(g: Grid, testbed: string, workload: string): string[] {
  const fromCases = g.cases.filter((x) => x.testbed === testbed && x.c.workload === workload).map((x) => x.fixture);
  const fromSlots = [...g.slots.keys()]
    .map((k) => JSON.parse(k) as [string, string, string, string])
    .filter((k) => k[0] === testbed && k[2] === workload)
    .map((k) => k[3]);
  return uniqSorted([...fromCases, ...fromSlots]);
}

function analyzeGroup(g: Grid, rows: Rows, key: CellKey): void {
  const { baseline, seed } = g.settings;
  const group = g.groups.get(keyOf(key));
  const slot = g.slots.get(keyOf(key));
  if (!group) {
    // Planned but never run here (backend unavailable, run interrupted): counts only.
    if (slot) rows.cells.push(phaseCell(key, TOTAL_PHASE, [], slot));
    return;
  }
  rows.rates.push(
    ...rateRows(
      key,
      group.map((x) => x.c),
    ),
  );
  for (const phase of g.phases) {
    const cell = phaseCell(key, phase, group, slot);
    if (
      cell.completed + cell.mismatch + cell.failed + cell.timeout + cell.unavailable + cell.environment === 0 &&
      cell.warmupValuesMs.length === 0
    )
      continue;
    rows.cells.push(cell);
    rows.diagnostics.push(...cellDiagnostics(cell, group, phase));
    if (key.backend === baseline) continue;
    const base = g.groups.get(keyOf({ ...key, backend: baseline }));
    if (!base) continue;
    const cmp = compare({ ...key, baseline, phase }, group, base, {
      seed: seedFor(seed, JSON.stringify([key.testbed, key.backend, key.workload, key.fixture, phase])),
      alpha: g.settings.alpha,
      bootstrapResamples: g.settings.bootstrapResamples,
      permutationDraws: g.settings.permutationDraws,
    });
    rows.comparisons.push(cmp);
    if (phase === TOTAL_PHASE && cmp.blocks > 0 && cmp.blocks < MIN_BLOCKS_TO_TELL) rows.diagnostics.push(tooFewBlocks(cmp));
  }
}

/** Harness overhead shares (overheadMs / wallMs) per workload, in the order the workloads first appear. */
function overheadByWorkload(cases: readonly { workload: string; wallMs: number; overheadMs: number }[]) {
  const by = new Map<string, number[]>();
  for (const c of cases) if (c.wallMs > 0) by.set(c.workload, [...(by.get(c.workload) ?? []), c.overheadMs / c.wallMs]);
  return [...by].map(([workload, shares]) => ({
    workload,
    cases: shares.length,
    shareMedian: summarize(shares).median!,
    shareMax: Math.max(...shares),
  }));
}
