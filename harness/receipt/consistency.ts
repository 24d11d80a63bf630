// A receipt's derived fields, recomputed from what they derive from. The schema says a receipt is
// well formed; this says it is not edited: the summary is counted again from the cases and block
// orders, each case's wall time is held to its start and finish times (at most their span) and to the sum of its phases,
// its overhead and its outcome to its own phases and checks, and each case sits where its block's
// order says. `pdb-env validate` and `pdb-env report` refuse a receipt that disagrees.
import { PdbError } from '../../model/errors.js';
import type { Workload } from '../../workloads/types.js';
import { summarize } from './receipt.js';
import { PLAN_IN_RECEIPT_SINCE_VERSION, type CaseRecord, type Receipt } from './receipt-types.js';
import { planSourceOf, replayInconsistencies, type Inconsistency, type PlanSource } from './replay.js';

export type { Inconsistency, PlanSource } from './replay.js';

/**
 * How far a case's monotonic wall time may exceed its UTC start-to-finish span (clock resolution
 * and slew: measured 0.5% on this project's VMs). The span is only an upper bound: a host's clock
 * stepped forward during a case (seen: 36 s in a pnpm proof case) lengthens the span and not the
 * monotonic wall. A wall edited down is caught by the sum of its phases instead.
 */
const WALL_SLACK_MS = 100;
const WALL_SLACK_SHARE = 0.01;
const EPSILON = 1e-6;
/** How far a case may seem to start before the one before it ended: a UTC clock slewed back between two readings. */
const CLOCK_STEP_BACK_MS = 1000;

const near = (a: number | null, b: number | null, slack = EPSILON) => (a === null || b === null ? a === b : Math.abs(a - b) <= slack);

function caseProblems(c: CaseRecord, i: number, r: Receipt): Inconsistency[] {
  const at = `/cases/${i}`;
  const out: Inconsistency[] = [];
  const inPhases = c.phases.reduce((s, p) => s + p.durationMs, 0);
  const clock = Date.parse(c.finishedAt) - Date.parse(c.startedAt);
  if (c.wallMs > clock + WALL_SLACK_MS + WALL_SLACK_SHARE * Math.abs(clock))
    out.push({
      pointer: `${at}/wallMs`,
      recorded: c.wallMs,
      recomputed: `at most ${clock} (finishedAt - startedAt)`,
      rule: 'the wall time fits between the case start and finish',
    });
  if (inPhases > c.wallMs + 1)
    out.push({
      pointer: `${at}/wallMs`,
      recorded: c.wallMs,
      recomputed: `at least ${inPhases} (its phases)`,
      rule: 'the wall time holds its phases',
    });
  const overhead = Math.max(0, c.wallMs - inPhases);
  if (!near(c.overheadMs, overhead, 0.01))
    out.push({
      pointer: `${at}/overheadMs`,
      recorded: c.overheadMs,
      recomputed: overhead,
      rule: 'overhead is the wall time minus every phase',
    });
  if ((c.outcome === 'ok') !== (c.failure === null))
    out.push({
      pointer: `${at}/outcome`,
      recorded: c.outcome,
      recomputed: c.failure ? `not ok (failure ${c.failure.code})` : 'ok (no failure)',
      rule: 'a case is ok exactly when it has no failure',
    });
  if (c.outcome === 'ok' && c.checks.some((k) => k.evaluated && !k.passed))
    out.push({
      pointer: `${at}/outcome`,
      recorded: 'ok',
      recomputed: 'not ok: an evaluated check failed',
      rule: 'an ok case failed no check',
    });
  for (const [j, k] of c.checks.entries()) {
    const total = k.counts ? Object.values(k.counts).reduce((s, n) => s + n, 0) : 0;
    if (k.mismatches !== null && k.counts !== null && k.mismatches !== total)
      out.push({
        pointer: `${at}/checks/${j}/mismatches`,
        recorded: k.mismatches,
        recomputed: total,
        rule: 'mismatches are the sum of their counts',
      });
    if (k.evaluated && k.mismatches !== null && k.passed !== (k.mismatches === 0))
      out.push({
        pointer: `${at}/checks/${j}/passed`,
        recorded: k.passed,
        recomputed: k.mismatches === 0,
        rule: 'a tree check passes exactly when nothing differs',
      });
    for (const side of ['case', 'reference'] as const) {
      const files = k.files?.[side];
      const hashed = k.filesHashed?.[side];
      if (typeof files === 'number' && typeof hashed === 'number' && hashed > files)
        out.push({
          pointer: `${at}/checks/${j}/filesHashed/${side}`,
          recorded: hashed,
          recomputed: `at most ${files} (the files compared)`,
          rule: 'no more files hashed than compared',
        });
    }
  }
  const block = r.blocks[c.block];
  if (!block || block.order[c.position] !== c.backend || block.workload !== c.workload)
    out.push({
      pointer: `${at}/position`,
      recorded: [c.block, c.position, c.backend],
      recomputed: block ? block.order[c.position] : 'no such block',
      rule: "a case sits where its block's order puts it",
    });
  return out;
}

/**
 * Cases run one at a time inside their run (version 4 on): each starts once the one before it has
 * ended, and all lie between the run's startedAt and finishedAt. A case's wall and end made later
 * (to add overhead without taking it from a phase) runs into the next case or past the run's end.
 */
function clockProblems(r: Receipt): Inconsistency[] {
  const out: Inconsistency[] = [];
  const [runStart, runEnd] = [Date.parse(r.startedAt), Date.parse(r.finishedAt)];
  const order = r.cases.map((c, i) => ({ c, i })).sort((a, b) => Date.parse(a.c.startedAt) - Date.parse(b.c.startedAt) || a.i - b.i);
  let prev: { c: CaseRecord; i: number } | null = null;
  for (const x of order) {
    const [s, e] = [Date.parse(x.c.startedAt), Date.parse(x.c.finishedAt)];
    if (s < runStart || e > runEnd)
      out.push({
        pointer: `/cases/${x.i}/startedAt`,
        recorded: [x.c.startedAt, x.c.finishedAt],
        recomputed: `within ${r.startedAt} .. ${r.finishedAt}`,
        rule: 'a case runs inside its run',
      });
    if (prev && s < Date.parse(prev.c.finishedAt) - CLOCK_STEP_BACK_MS)
      out.push({
        pointer: `/cases/${x.i}/startedAt`,
        recorded: x.c.startedAt,
        recomputed: `at or after ${prev.c.finishedAt} (case ${prev.c.id} ends then)`,
        rule: 'cases run one at a time',
      });
    prev = x;
  }
  return out;
}

/** The overhead per workload, compared as a list (an object field of the summary). */
function overheadProblems(r: Receipt, summary: ReturnType<typeof summarize>): Inconsistency[] {
  const want = summary.overheadByWorkload ?? [];
  const got = r.summary.overheadByWorkload;
  if (got === undefined) return r.schemaVersion >= PLAN_IN_RECEIPT_SINCE_VERSION ? [missing('/summary/overheadByWorkload', want)] : [];
  const agrees =
    got.length === want.length &&
    got.every(
      (g, i) =>
        g.workload === want[i]!.workload &&
        g.cases === want[i]!.cases &&
        near(g.shareMedian, want[i]!.shareMedian) &&
        near(g.shareMax, want[i]!.shareMax),
    );
  return agrees ? [] : [{ pointer: '/summary/overheadByWorkload', recorded: got, recomputed: want, rule: 'the summary counts the cases' }];
}

const missing = (pointer: string, recomputed: unknown): Inconsistency => ({
  pointer,
  recorded: 'absent',
  recomputed,
  rule: `a receipt of version ${PLAN_IN_RECEIPT_SINCE_VERSION} on records it`,
});

/** Every derived field of `r` that disagrees with what it derives from, itself alone (no plan). */
function selfInconsistencies(r: Receipt): Inconsistency[] {
  const out: Inconsistency[] = [];
  const unavailable = new Set(r.backends.filter((b) => !b.available).map((b) => b.name));
  const slots = r.blocks.flatMap((b) => b.order);
  const summary = summarize(r.cases, slots.length, slots.filter((b) => unavailable.has(b)).length);
  for (const key of Object.keys(summary) as (keyof typeof summary)[]) {
    if (key === 'overheadByWorkload') continue;
    if (!near(r.summary[key] as number | null, summary[key] as number | null))
      out.push({ pointer: `/summary/${key}`, recorded: r.summary[key], recomputed: summary[key], rule: 'the summary counts the cases' });
  }
  out.push(...overheadProblems(r, summary));
  if (Date.parse(r.finishedAt) < Date.parse(r.startedAt))
    out.push({
      pointer: '/finishedAt',
      recorded: r.finishedAt,
      recomputed: `after ${r.startedAt}`,
      rule: 'a run finishes after it starts',
    });
  // Outside a git checkout nothing about the checkout is known; inside one, its state is.
  const p = r.provenance;
  if ((p.commit === null) !== (p.dirty === null) || (p.commit === null) !== (p.changedDuringRun === null))
    out.push({
      pointer: '/provenance',
      recorded: { commit: p.commit, dirty: p.dirty, changedDuringRun: p.changedDuringRun },
      recomputed: p.commit === null ? 'dirty and changedDuringRun null' : 'dirty and changedDuringRun known',
      rule: "a checkout's state is known exactly when its commit is",
    });
  r.cases.forEach((c, i) => out.push(...caseProblems(c, i, r)));
  if (r.schemaVersion >= PLAN_IN_RECEIPT_SINCE_VERSION) out.push(...clockProblems(r));
  return out;
}

export interface ReceiptCheck {
  /** Every field that disagrees, with both values and the rule. */
  issues: Inconsistency[];
  /** The plan the schedule was replayed from (none: not replayed). */
  plan: PlanSource;
}

export interface ReceiptCheckOptions {
  /** Where committed plans are looked up by digest (default: the package's plans/). */
  plansDir?: string;
  /** The workload registry (default: the built-in one); a workload it lacks skips its own rules. */
  workloads?: Record<string, Workload>;
  /**
   * Whether the receipt came signed: only then is its recorded load trusted to widen the gap a
   * phase may leave (replay.ts phaseGapLimit). Unsigned, the quiet limit holds whatever load it claims.
   */
  signed?: boolean;
}

/**
 * `r` held to itself, then replayed from its plan: its own (version 4 on), else the committed plan
 * its planDigest names. A version 4 receipt without its plan is itself an inconsistency.
 */
export function checkReceipt(r: Receipt, options: ReceiptCheckOptions = {}): ReceiptCheck {
  const issues = selfInconsistencies(r);
  const plan = planSourceOf(r, options.plansDir);
  if (plan.from !== 'none') issues.push(...replayInconsistencies(r, plan.plan, options.workloads, options.signed === true));
  if (r.schemaVersion >= PLAN_IN_RECEIPT_SINCE_VERSION) {
    const projected = r.cases.findIndex((c) => c.projectedSnapshot === undefined);
    if (projected >= 0) issues.push(missing(`/cases/${projected}/projectedSnapshot`, 'a digest or null'));
  }
  return { issues, plan };
}

/** Every derived field of `r` that disagrees with what it derives from or with its plan (empty: consistent). */
export function receiptInconsistencies(r: Receipt, options: ReceiptCheckOptions = {}): Inconsistency[] {
  return checkReceipt(r, options).issues;
}

/** One inconsistency in words: the field, both values and the rule. */
export function describeInconsistency(i: Inconsistency): string {
  return `${i.pointer} is ${JSON.stringify(i.recorded)}, recomputed ${JSON.stringify(i.recomputed)} (rule: ${i.rule})`;
}

/** E_RECEIPT_INCONSISTENT naming the first fields that disagree, with both values and the rule. */
export function inconsistencyError(what: string, issues: Inconsistency[]): PdbError {
  const shown = issues.slice(0, 5).map(describeInconsistency).join('; ');
  const more = issues.length > 5 ? ` (and ${issues.length - 5} more)` : '';
  return new PdbError('E_RECEIPT_INCONSISTENT', `${what} disagrees with itself or its plan: ${shown}${more}`, {
    hint: 'A receipt is written whole by pdb-env bench; one whose derived fields do not follow from its cases, or whose cases are not what its plan and seed schedule, was edited. Use the receipt as it was written.',
  });
}
