// Unsigned receipts are held to the clock they ran on (issue 52): the audit's coordinated edit (half
// of reflink's fileops create time moved into overheadMs, every summary field derived again), made
// on a plain copy of a committed receipt, passed validate before; now the widened gap between two
// timed phases gives it away, in validate and in report. A move of any case's phase time into
// overhead larger than the glue bound is caught wherever it is put (fast-check over cases, phases
// and amounts); what is under the bound is the most an unsigned receipt can hide, which is why a
// policy can require signatures.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkReceipt, receiptInconsistencies } from '../../../harness/receipt/consistency.js';
import { phaseGapLimit } from '../../../harness/receipt/replay.js';
import { readReceiptFile } from '../../../harness/receipt/envelope.js';
import { summarize } from '../../../harness/receipt/receipt.js';
import type { Receipt } from '../../../harness/receipt/receipt-types.js';
import { cli, REPO_ROOT, tempDir } from '../../helpers/index.js';

const t = tempDir('pdb-unsigned-');
test.after(() => t.cleanup());
const COMMITTED = join(REPO_ROOT, 'receipts', 'full-20261203T122257Z-1daced.json');
const original = readReceiptFile(COMMITTED).document as Receipt;

/** The summary derived again from the cases, as a careful editor would. */
function rederive(r: Receipt): Receipt {
  const unavailable = new Set(r.backends.filter((b) => !b.available).map((b) => b.name));
  const slots = r.blocks.flatMap((b) => b.order);
  r.summary = summarize(r.cases, slots.length, slots.filter((b) => unavailable.has(b)).length);
  return r;
}

/** Move `share` of phase `j` of case `i` into overhead; `where` says whether the phases after it keep their starts (the gap follows the phase) or the phase keeps its end (the gap precedes it). */
function move(r: Receipt, i: number, j: number, share: number, where: 'after' | 'before'): number {
  const c = r.cases[i]!;
  const p = c.phases[j]!;
  const ms = p.durationMs * share;
  p.durationMs -= ms;
  if (where === 'before') p.startMs! += ms;
  c.overheadMs += ms;
  return ms;
}

function plain(name: string, r: Receipt): string {
  const file = join(t.dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(r, null, 2));
  return file;
}

test('the audit edit on an unsigned copy: validate names the widened gap, report refuses it', () => {
  const r = structuredClone(original);
  for (const [i, c] of r.cases.entries())
    if (c.backend === 'reflink' && c.workload === 'fileops')
      move(
        r,
        i,
        c.phases.findIndex((p) => p.name === 'create'),
        0.5,
        'after',
      );
  rederive(r);
  const file = plain('audit-edit', r);
  const v = cli(['validate', file]);
  assert.is(v.code, 1, v.stdout);
  assert.match(v.stdout, 'INVALID');
  assert.match(v.stdout, /\/cases\/\d+\/phases\/\d+\/startMs E_RECEIPT_INCONSISTENT/);
  assert.match(v.stdout, 'between two phases (every harness step is timed)');
  assert.not.match(v.stdout, '/summary/', 'the summary was derived again: only the clock gives the edit away');
  const rep = cli(['report', file, '--json']);
  assert.is(rep.code, 1, rep.stdout);
  assert.match(rep.stdout + rep.stderr, 'E_RECEIPT_INCONSISTENT');
  // The plain copy as committed passes: the rule is one the harness meets.
  const clean = cli(['validate', plain('as-committed', structuredClone(original))]);
  assert.is(clean.code, 0, clean.stdout + clean.stderr);
});

test('any move of phase time into overhead past the glue bound is caught, before or after the phase', () => {
  const timed = original.cases.flatMap((c, i) =>
    c.phases.map((p, j) => ({ i, j, ms: p.durationMs, bound: phaseGapLimit(original, c.wallMs, false) })),
  );
  const movable = timed.filter((x) => x.ms > 2 * x.bound);
  assert.ok(movable.length > 50, `phases long enough to move from: ${movable.length}`);
  fc.assert(
    fc.property(
      fc.constantFrom(...movable),
      fc.double({ min: 0, max: 1, noNaN: true }),
      fc.constantFrom('after' as const, 'before' as const),
      (x, u, where) => {
        const r = structuredClone(original);
        // An amount from just past the bound to the whole phase.
        const share = (x.bound * 1.05 + u * (x.ms - x.bound * 1.05)) / x.ms;
        move(r, x.i, x.j, share, where);
        rederive(r);
        const found = receiptInconsistencies(r);
        return found.some((f) => /between two phases|soon after its last phase/.test(f.rule));
      },
    ),
    { numRuns: 200, seed: Number(process.env.PDB_BOUNDS_SEED ?? 52) },
  );
});

test('what the bound lets through is small: a move under it passes (the reason requireSigned exists)', () => {
  const r = structuredClone(original);
  const i = r.cases.findIndex((c) => c.backend === 'reflink' && c.workload === 'fileops');
  const j = r.cases[i]!.phases.findIndex((p) => p.name === 'create');
  const ms = move(r, i, j, 5 / r.cases[i]!.phases[j]!.durationMs, 'after');
  rederive(r);
  assert.ok(ms < phaseGapLimit(r, r.cases[i]!.wallMs, false));
  assert.equal(receiptInconsistencies(r), []);
});

test('a case stretched past the next one (its end and wall made later) breaks the run clock', () => {
  const r = structuredClone(original);
  const c = r.cases[0]!;
  c.finishedAt = new Date(Date.parse(r.cases[1]!.startedAt) + 5_000).toISOString();
  c.wallMs += 5_000;
  c.overheadMs += 5_000;
  rederive(r);
  const rules = receiptInconsistencies(r).map((f) => f.rule);
  assert.ok(rules.includes('cases run one at a time'), rules.join('; '));
  assert.ok(
    rules.some((x) => /soon after its last phase/.test(x)),
    rules.join('; '),
  );
});

test("an unsigned receipt cannot widen the limit by claiming a busy host; a signed one's load is trusted", () => {
  const r = structuredClone(original);
  const i = r.cases.findIndex((c) => c.backend === 'reflink' && c.workload === 'fileops');
  const j = r.cases[i]!.phases.findIndex((p) => p.name === 'create');
  // Just past the quiet limit, well inside what a load of 40 on 2 cores (20x) would allow.
  const quiet = phaseGapLimit(r, r.cases[i]!.wallMs, false);
  move(r, i, j, (quiet * 1.5) / r.cases[i]!.phases[j]!.durationMs, 'after');
  r.host.loadAverage = [40, 40, 40];
  rederive(r);
  const gap = (signed: boolean) => checkReceipt(r, { signed }).issues.filter((f) => /between two phases/.test(f.rule));
  assert.is(gap(false).length, 1, 'unsigned: the quiet limit holds');
  assert.is(gap(true).length, 0, 'signed: the load is part of what was signed');
});

test.run();
