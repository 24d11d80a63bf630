// Receipts -> report numbers. A pure function: no clock, no file system, no environment; the same
// receipts and options give the same document byte for byte (resampling is seeded per comparison).
// Testbeds, phase cells and comparisons each have their own module; this one walks the grid.
import type { Receipt } from '../harness/receipt-types.js';
import { compare, rateRows, seedFor, tooFewBlocks } from './comparisons.js';
import { cellDiagnostics, phaseCell, plannedSlots, type Slots } from './phase-cells.js';
import { REPORT_VERSION, TOTAL_PHASE, uniqSorted, type IndexedCase, type ReportData, type Testbed } from './report-data.js';
import { buildTestbeds, isSyntheticReceipt, labelTestbeds, sortReceipts, testbedKey } from './testbeds.js';

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

type Rows = Pick<ReportData, 'cells' | 'comparisons' | 'rates' | 'diagnostics'>;

/** Everything the grid walk reads. */
interface Grid {
  settings: Settings;
  testbeds: Testbed[];
  backends: string[];
  workloads: string[];
  phases: string[];
  cases: IndexedCase[];
  /** Cases by JSON [testbed, backend, workload]. */
  groups: Map<string, IndexedCase[]>;
  slots: Map<string, Slots>;
}

export function analyzeReceipts(receipts: Receipt[], options: AnalyzeOptions = {}): ReportData {
  const settings: Settings = {
    baseline: options.baseline ?? 'full-copy',
    seed: options.seed ?? 20260101,
    alpha: options.alpha ?? 0.05,
    bootstrapResamples: options.bootstrapResamples ?? 4000,
    permutationDraws: options.permutationDraws ?? 9999,
  };
  const ordered = sortReceipts(receipts);
  const { testbedIds, testbeds } = buildTestbeds(ordered, options.labels ?? labelTestbeds(receipts));
  const cases = indexCases(ordered, testbedIds);
  const slots = plannedSlots(ordered, testbedIds);
  const slotKeys = [...slots.keys()].map((k) => JSON.parse(k) as [string, string, string]);
  const { baseline } = settings;
  const backends = uniqSorted([...cases.map((x) => x.c.backend), ...slotKeys.map((k) => k[1])]).sort((a, b) =>
    a === baseline ? -1 : b === baseline ? 1 : a.localeCompare(b),
  );
  const workloads = uniqSorted([...cases.map((x) => x.c.workload), ...slotKeys.map((k) => k[2])]);
  const phases = phaseList(cases);
  const rows = walkGrid({ settings, testbeds, backends, workloads, phases, cases, groups: groupCases(cases), slots });
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
    })),
    testbeds,
    backends,
    workloads,
    phases,
    ...rows,
  };
}

/** Every case with its testbed and its place in the testbed's run order (receipts by start, then block, position). */
function indexCases(ordered: Receipt[], testbedIds: Map<string, string>): IndexedCase[] {
  const cases: IndexedCase[] = [];
  const runCounter = new Map<string, number>();
  for (const r of ordered) {
    const testbed = testbedIds.get(testbedKey(r))!;
    const sorted = [...r.cases].sort((a, b) => a.block - b.block || a.position - b.position);
    for (const c of sorted) {
      const runIndex = runCounter.get(testbed) ?? 0;
      runCounter.set(testbed, runIndex + 1);
      cases.push({ receipt: r, testbed, runIndex, c });
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
    const k = JSON.stringify([x.testbed, x.c.backend, x.c.workload]);
    const g = groups.get(k);
    if (g) g.push(x);
    else groups.set(k, [x]);
  }
  return groups;
}

/** Rates, cells, comparisons and diagnostics for every testbed x backend x workload, in that order. */
function walkGrid(g: Grid): Rows {
  const rows: Rows = { cells: [], comparisons: [], rates: [], diagnostics: [] };
  for (const tb of g.testbeds) {
    for (const backend of g.backends) {
      const all = g.cases.filter((x) => x.testbed === tb.id && x.c.backend === backend);
      if (all.length > 0)
        rows.rates.push(
          ...rateRows(
            tb.id,
            backend,
            '*',
            all.map((x) => x.c),
          ),
        );
      for (const workload of g.workloads) analyzeGroup(g, rows, tb.id, backend, workload);
    }
  }
  return rows;
}

function analyzeGroup(g: Grid, rows: Rows, testbed: string, backend: string, workload: string): void {
  const { baseline, seed } = g.settings;
  const key = JSON.stringify([testbed, backend, workload]);
  const group = g.groups.get(key);
  const slot = g.slots.get(key);
  if (!group) {
    // Planned but never run here (backend unavailable, run interrupted): counts only.
    if (slot) rows.cells.push(phaseCell(testbed, backend, workload, TOTAL_PHASE, [], slot));
    return;
  }
  rows.rates.push(
    ...rateRows(
      testbed,
      backend,
      workload,
      group.map((x) => x.c),
    ),
  );
  for (const phase of g.phases) {
    const cell = phaseCell(testbed, backend, workload, phase, group, slot);
    if (cell.completed + cell.failed + cell.timeout + cell.unavailable === 0 && cell.warmupValuesMs.length === 0) continue;
    rows.cells.push(cell);
    rows.diagnostics.push(...cellDiagnostics(cell, group, phase));
    if (backend === baseline) continue;
    const base = g.groups.get(JSON.stringify([testbed, baseline, workload]));
    if (!base) continue;
    const cmp = compare(testbed, backend, baseline, workload, phase, group, base, {
      seed: seedFor(seed, JSON.stringify([testbed, backend, workload, phase])),
      alpha: g.settings.alpha,
      bootstrapResamples: g.settings.bootstrapResamples,
      permutationDraws: g.settings.permutationDraws,
    });
    rows.comparisons.push(cmp);
    if (phase === TOTAL_PHASE && cmp.blocks > 0 && cmp.blocks < 6) rows.diagnostics.push(tooFewBlocks(cmp));
  }
}
