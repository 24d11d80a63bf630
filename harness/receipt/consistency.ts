// A receipt's derived fields, recomputed from what they derive from. The schema says a receipt is
// well formed; this says it is not edited: the summary is counted again from the cases and block
// orders, each case's wall time is held to its start and finish times (at most their span) and to the sum of its phases,
// its overhead and its outcome to its own phases and checks, and each case sits where its block's
// order says. `pdb-env validate` and `pdb-env report` refuse a receipt that disagrees.
import { PdbError } from '../../model/errors.js';
import { summarize } from './receipt.js';
import type { CaseRecord, Receipt } from './receipt-types.js';

export interface Inconsistency {
  /** JSON pointer of the recorded field. */
  pointer: string;
  recorded: unknown;
  recomputed: unknown;
}

/**
 * How far a case's monotonic wall time may exceed its UTC start-to-finish span (clock resolution
 * and slew: measured 0.5% on this project's VMs). The span is only an upper bound: a host's clock
 * stepped forward during a case (seen: 36 s in a pnpm proof case) lengthens the span and not the
 * monotonic wall. A wall edited down is caught by the sum of its phases instead.
 */
const WALL_SLACK_MS = 100;
const WALL_SLACK_SHARE = 0.01;
const EPSILON = 1e-6;

const near = (a: number | null, b: number | null, slack = EPSILON) => (a === null || b === null ? a === b : Math.abs(a - b) <= slack);

function caseProblems(c: CaseRecord, i: number, r: Receipt): Inconsistency[] {
  const at = `/cases/${i}`;
  const out: Inconsistency[] = [];
  const inPhases = c.phases.reduce((s, p) => s + p.durationMs, 0);
  const clock = Date.parse(c.finishedAt) - Date.parse(c.startedAt);
  if (c.wallMs > clock + WALL_SLACK_MS + WALL_SLACK_SHARE * Math.abs(clock))
    out.push({ pointer: `${at}/wallMs`, recorded: c.wallMs, recomputed: `at most ${clock} (finishedAt - startedAt)` });
  if (inPhases > c.wallMs + 1) out.push({ pointer: `${at}/wallMs`, recorded: c.wallMs, recomputed: `at least ${inPhases} (its phases)` });
  const overhead = Math.max(0, c.wallMs - inPhases);
  if (!near(c.overheadMs, overhead, 0.01)) out.push({ pointer: `${at}/overheadMs`, recorded: c.overheadMs, recomputed: overhead });
  if ((c.outcome === 'ok') !== (c.failure === null))
    out.push({
      pointer: `${at}/outcome`,
      recorded: c.outcome,
      recomputed: c.failure ? `not ok (failure ${c.failure.code})` : 'ok (no failure)',
    });
  if (c.outcome === 'ok' && c.checks.some((k) => k.evaluated && !k.passed))
    out.push({ pointer: `${at}/outcome`, recorded: 'ok', recomputed: 'not ok: an evaluated check failed' });
  for (const [j, k] of c.checks.entries()) {
    const total = k.counts ? Object.values(k.counts).reduce((s, n) => s + n, 0) : 0;
    if (k.mismatches !== null && k.counts !== null && k.mismatches !== total)
      out.push({ pointer: `${at}/checks/${j}/mismatches`, recorded: k.mismatches, recomputed: total });
    if (k.evaluated && k.mismatches !== null && k.passed !== (k.mismatches === 0))
      out.push({ pointer: `${at}/checks/${j}/passed`, recorded: k.passed, recomputed: k.mismatches === 0 });
    for (const side of ['case', 'reference'] as const) {
      const files = k.files?.[side];
      const hashed = k.filesHashed?.[side];
      if (typeof files === 'number' && typeof hashed === 'number' && hashed > files)
        out.push({
          pointer: `${at}/checks/${j}/filesHashed/${side}`,
          recorded: hashed,
          recomputed: `at most ${files} (the files compared)`,
        });
    }
  }
  const block = r.blocks[c.block];
  if (!block || block.order[c.position] !== c.backend || block.workload !== c.workload)
    out.push({
      pointer: `${at}/position`,
      recorded: [c.block, c.position, c.backend],
      recomputed: block ? block.order[c.position] : 'no such block',
    });
  return out;
}

/** Every derived field of `r` that disagrees with what it derives from (empty: consistent). */
export function receiptInconsistencies(r: Receipt): Inconsistency[] {
  const out: Inconsistency[] = [];
  const unavailable = new Set(r.backends.filter((b) => !b.available).map((b) => b.name));
  const slots = r.blocks.flatMap((b) => b.order);
  const summary = summarize(r.cases, slots.length, slots.filter((b) => unavailable.has(b)).length);
  for (const key of Object.keys(summary) as (keyof typeof summary)[]) {
    if (!near(r.summary[key] as number | null, summary[key] as number | null))
      out.push({ pointer: `/summary/${key}`, recorded: r.summary[key], recomputed: summary[key] });
  }
  if (Date.parse(r.finishedAt) < Date.parse(r.startedAt))
    out.push({ pointer: '/finishedAt', recorded: r.finishedAt, recomputed: `after ${r.startedAt}` });
  r.cases.forEach((c, i) => out.push(...caseProblems(c, i, r)));
  return out;
}

/** E_RECEIPT_INCONSISTENT naming the first fields that disagree, with both values. */
export function inconsistencyError(what: string, issues: Inconsistency[]): PdbError {
  const shown = issues
    .slice(0, 5)
    .map((i) => `${i.pointer} is ${JSON.stringify(i.recorded)}, recomputed ${JSON.stringify(i.recomputed)}`)
    .join('; ');
  const more = issues.length > 5 ? ` (and ${issues.length - 5} more)` : '';
  return new PdbError('E_RECEIPT_INCONSISTENT', `${what} disagrees with itself: ${shown}${more}`, {
    hint: 'A receipt is written whole by pdb-env bench; one whose derived fields do not follow from its cases was edited. Use the receipt as it was written.',
  });
}
