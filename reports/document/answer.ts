// The top of a report: the answer first (per testbed and fixture, which backends were correct there
// and the fastest correct one, with its ratio and CI), then what the evidence may and may not be
// used for (receipts that are not gate evidence, and why), then the policy verdict.
import type { Block } from './block.js';
import { fmtRatio as r3 } from '../analysis/format.js';
import type { GateResult, Policy } from '../gate/gate-policy.js';
import { MIN_BLOCKS_TO_TELL, type Answer, type BackendStanding, type ReportData, type Testbed } from '../analysis/report-data.js';

function testbedTitle(t: Testbed): string {
  const load = t.loadAverages.length ? `; load at the start of its runs ${t.loadAverages.map((l) => l[0]!.toFixed(2)).join(', ')}` : '';
  return `${t.id}: ${t.os} ${t.arch}, ${t.cpuModel}, ${t.cores} cores, store on ${t.storeFs}${load}`;
}

/** The fastest correct backend of one answer in words (or why there is none, or too few blocks to tell). */
export function fastestText(a: Answer, baseline: string): string {
  const f = a.fastest;
  if (!f && a.backends.every((b) => b.status === 'unavailable' || b.status === 'not-judged'))
    return 'nothing to judge: no case was attempted here';
  if (!f) return `cannot tell: ${baseline} (the oracle) was not correct here`;
  if (f.backend === baseline) return `${baseline}: ${f.words}`;
  const ci = f.ci ? `, 95% CI ${r3(f.ci.lower)}-${r3(f.ci.upper)}` : '';
  return `${f.backend}: ${r3(f.medianRatio)}x ${baseline}'s whole-case time${ci}, ${f.blocks} blocks`;
}

function list(a: Answer, status: string): string {
  return (
    a.backends
      .filter((b) => b.status === status)
      .map((b) => `${b.backend} (${b.detail})`)
      .join('; ') || '-'
  );
}

/** Per testbed and fixture: the backends that were correct here, and the fastest correct one. */
export function answerBlocks(data: ReportData): Block[] {
  const b: Block[] = [{ kind: 'heading', level: 2, text: 'What the evidence says, per testbed and fixture' }];
  b.push({
    kind: 'paragraph',
    text:
      `Correct here: attempted, no case mismatched its block's ${data.baseline} case (the oracle), failed or timed out, over what the oracle compared (the column "compared": the source files, and for the lanes the installed tree and build output too, each file hashed from its bytes). ` +
      `Fastest: the correct backend with the lowest whole-case time against ${data.baseline}, paired per block, shown only when the paired test says it is faster; ` +
      `below ${MIN_BLOCKS_TO_TELL} paired blocks that is too few blocks to tell. Cases stopped by the environment (registry, credentials, network) are counted apart and judge nothing.`,
  });
  if (data.answers.length === 0) b.push({ kind: 'paragraph', text: 'No case ran.' });
  for (const t of data.testbeds) {
    const answers = data.answers.filter((a) => a.testbed === t.id);
    if (answers.length === 0) continue;
    b.push({ kind: 'heading', level: 3, text: testbedTitle(t) });
    if (t.noGateEvidence)
      b.push({ kind: 'paragraph', text: `Not gate evidence: no receipt of ${t.id} may count toward a decision (see Receipts).` });
    b.push({
      kind: 'table',
      header: ['workload', 'fixture', 'correct here', 'compared', 'fastest correct', 'not correct', 'not judged', 'cannot run here'],
      rows: answers.map((a) => [
        a.workload,
        a.fixture,
        a.backends
          .filter((s) => s.status === 'correct')
          .map((s) => s.backend)
          .join(', ') || 'none',
        a.compared,
        fastestText(a, data.baseline),
        list(a, 'incorrect'),
        list(a, 'not-judged'),
        a.backends
          .filter((s) => s.status === 'unavailable')
          .map((s) => `${s.backend} (${s.detail})`)
          .join(', ') || '-',
      ]),
    });
  }
  return b;
}

/**
 * The answer as plain lines, for a terminal: per testbed and fixture, the fastest correct backend,
 * then which backends were correct, not correct, not judged, or could not run here.
 */
export function answerLines(data: ReportData): string[] {
  const lines: string[] = [];
  for (const a of data.answers) {
    lines.push(`${a.fixture} (${a.workload}) on ${a.testbed}: fastest correct here: ${fastestText(a, data.baseline)}`);
    const named = (status: string) =>
      a.backends
        .filter((b) => b.status === status)
        .map((b) => (status === 'correct' ? b.backend : `${b.backend} (${b.detail})`))
        .join(', ');
    const parts = [
      ['correct', named('correct') || 'none'],
      ['compared', a.compared],
      ['not correct', named('incorrect')],
      ['not judged', named('not-judged')],
      ['cannot run here', named('unavailable')],
    ].filter(([, v]) => v);
    lines.push(...parts.map(([k, v]) => `  ${k}: ${v}`));
  }
  if (lines.length === 0) lines.push('no case ran');
  return lines;
}

/** Which receipts are not gate evidence, and why (schema version 1, dirty or changed code, unknown provenance). */
export function evidenceNote(data: ReportData): Block[] {
  const refused = data.receipts.filter((r) => !r.gateEvidence);
  if (refused.length === 0) return [];
  const legacy = refused.filter((r) => r.schemaVersion === 1).length;
  const reasons = [...new Set(refused.map((r) => r.gateEvidenceReason ?? 'unknown'))];
  return [
    {
      kind: 'paragraph',
      text:
        `${refused.length} of ${data.receipts.length} receipt(s) are not gate evidence: their numbers are shown, marked, and no policy counts them` +
        `${legacy ? ` (${legacy} of schema version 1, written before provenance was recorded)` : ''}. Reasons: ${reasons.join('; ')}.`,
    },
  ];
}

/** The policy's verdict, after the answer; a candidate no testbed ran is said to be not applicable here, not decided. */
export function decisionBlocks(gate: GateResult, policy: Policy, data: ReportData): Block[] {
  const b: Block[] = [{ kind: 'heading', level: 2, text: `Decision: ${gate.candidate} (policy ${gate.policy})` }];
  const counts = { reject: 0, hold: 0, met: 0 };
  for (const f of gate.findings) counts[f.status]++;
  const ran = data.cells.some((c) => c.backend === gate.candidate && c.completed + c.mismatch + c.failed + c.timeout > 0);
  const why = data.testbeds.flatMap((t) =>
    t.unavailable.filter((u) => u.backend === gate.candidate).map((u) => `${t.id}: ${u.reason ?? '?'}`),
  );
  const admitted = data.receipts.length - gate.ignoredReceipts.length;
  const text = !ran
    ? `${gate.verdict}: not applicable to these receipts: ${gate.candidate} ran on no testbed here${why.length ? ` (unavailable: ${why.join(', ')})` : ''}, so they cannot decide it.`
    : admitted === 0
      ? `${gate.verdict}: none of these receipts counts toward a decision (see "Left out" below), so there is nothing to decide from yet.`
      : `${gate.verdict}: ${counts.reject} reject, ${counts.hold} hold, ${counts.met} met. Counted testbeds: ${gate.countedTestbeds.join(', ') || 'none'}.`;
  b.push({ kind: 'verdict', verdict: gate.verdict, text });
  b.push({ kind: 'paragraph', text: policy.description });
  if (gate.ignoredReceipts.length > 0) {
    const byReason = new Map<string, string[]>();
    for (const r of gate.ignoredReceipts) byReason.set(r.reason, [...(byReason.get(r.reason) ?? []), r.runId]);
    const parts = [...byReason].map(([reason, runs]) => `${runs.length} receipt(s), ${reason}: ${runs.join(', ')}`);
    b.push({ kind: 'paragraph', text: `Left out of the decision: ${parts.join('; ')}.` });
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

/** Is a backend's "not correct" here made only of mismatches that the expected-mismatch rule expects? */
export type ExpectedFn = (at: { testbed: string; workload: string; fixture: string }, backend: string) => boolean;

/**
 * The proof's closing answer, for a terminal: per testbed, workload and fixture, the fastest
 * correct backend in the words of report.md's first table (the same `answers`, the same
 * fastestText), then which backends were correct and not correct there; what could not run is
 * said once at the end when it is the same everywhere. A not-correct backend whose failures are
 * all expected mismatches (`expected`) is said to be expected, with `why`.
 */
export function closingLines(answers: Answer[], baseline: string, expected: ExpectedFn = () => false, why = ''): string[] {
  if (answers.length === 0) return ['answer: no case ran'];
  const testbeds = new Set(answers.map((a) => a.testbed));
  const unavailable = (a: Answer) =>
    a.backends
      .filter((b) => b.status === 'unavailable')
      .map((b) => `${b.backend} (${b.detail})`)
      .join(', ');
  const sameEverywhere = new Set(answers.map(unavailable)).size === 1;
  const lines = [`answer (the first table of report.md; ratios are whole-case time against ${baseline}, the oracle):`];
  for (const a of answers) {
    const where = testbeds.size > 1 ? `${a.testbed} ` : '';
    lines.push(`  ${where}${a.workload} (${a.fixture}): ${fastestText(a, baseline)}`);
    const named = (status: BackendStanding['status']) => a.backends.filter((b) => b.status === status);
    const notCorrect = named('incorrect').map((b) => `${b.backend} (${b.detail}${expected(a, b.backend) ? `, expected: ${why}` : ''})`);
    const parts = [
      `correct: ${
        named('correct')
          .map((b) => b.backend)
          .join(', ') || 'none'
      }`,
      notCorrect.length ? `not correct: ${notCorrect.join(', ')}` : '',
      named('not-judged').length
        ? `not judged: ${named('not-judged')
            .map((b) => `${b.backend} (${b.detail})`)
            .join(', ')}`
        : '',
      !sameEverywhere && unavailable(a) ? `cannot run here: ${unavailable(a)}` : '',
    ].filter(Boolean);
    lines.push(`    ${parts.join('; ')}`);
  }
  if (sameEverywhere && unavailable(answers[0]!)) lines.push(`  cannot run here: ${unavailable(answers[0]!)}`);
  return lines;
}
