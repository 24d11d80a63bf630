// Policy -> verdict. A pure function of receipts and a policy: PROMOTE when every criterion is met,
// REJECT when the evidence shows a defect (mismatch, regression, silent copy, untyped failure),
// HOLD otherwise, naming every missing item. Every criterion is listed, met or not; the criteria
// themselves are in criteria.ts, in the order the findings are listed.
import type { AnyReceipt } from '../../harness/receipt/receipt-types.js';
import { analyzeReceipts } from '../analysis/analyze.js';
import { cloneFindings, correctnessFindings, countedTestbeds, diversityFindings, fixtureFindings, type GateContext } from './criteria.js';
import { blockFindings, speedupFindings } from './speed.js';
import { readReceipt, type ReportReceipt } from '../receipts/receipts.js';
import type { ReportData } from '../analysis/report-data.js';
import { isSyntheticReceipt, labelTestbeds } from '../analysis/testbeds.js';
import type { Finding, GateResult, Policy, Verdict } from './gate-policy.js';

/**
 * Evaluate `policy` against receipts. The numbers come from the same analysis as the report
 * (with the policy's baseline and alpha), over the receipts the policy admits.
 */
export function evaluateGate(
  input: (AnyReceipt | ReportReceipt)[],
  policy: Policy,
  options: { seed?: number; analysis?: ReportData; excluded?: { runId: string; reason: string }[] } = {},
): GateResult {
  const receipts = input.map(readReceipt);
  const ignoredReceipts: GateResult['ignoredReceipts'] = [];
  const excluded = new Map((options.excluded ?? []).map((x) => [x.runId, x.reason]));
  const admitted = receipts.filter((r) => {
    // Left out by its reader (who signed it, whether its overhead is bounded): shown, never counted.
    if (excluded.has(r.runId)) {
      ignoredReceipts.push({ runId: r.runId, reason: excluded.get(r.runId)! });
      return false;
    }
    if ((policy.excludeSyntheticReceipts ?? true) && isSyntheticReceipt(r)) {
      ignoredReceipts.push({ runId: r.runId, reason: `synthetic plan "${r.planName}"` });
      return false;
    }
    if (!r.gateEvidence.ok) {
      ignoredReceipts.push({ runId: r.runId, reason: `not gate evidence: ${r.gateEvidence.reason}` });
      return false;
    }
    return true;
  });
  const findings: Finding[] = [];
  const g: GateContext = {
    policy,
    candidate: policy.candidate,
    data: gateAnalysis(receipts, admitted, policy, options),
    admitted,
    add: (criterion, status, message, testbed = null) => void findings.push({ criterion, status, testbed, message }),
  };
  const counted = countedTestbeds(g);
  diversityFindings(g, blockFindings(g, counted));
  const countedIds = new Set(counted.map((t) => t.id));
  fixtureFindings(g, countedIds);
  correctnessFindings(g, counted);
  cloneFindings(g, countedIds);
  speedupFindings(g, counted);
  return {
    policy: policy.name,
    candidate: policy.candidate,
    baseline: policy.baseline,
    verdict: verdictOf(findings),
    countedTestbeds: counted.map((t) => t.id),
    ignoredReceipts,
    findings,
  };
}

/** The report's analysis when it covers exactly the admitted receipts with the same settings; otherwise a fresh one. */
function gateAnalysis(
  receipts: ReportReceipt[],
  admitted: ReportReceipt[],
  policy: Policy,
  options: { seed?: number; analysis?: ReportData },
): ReportData {
  const given = options.analysis;
  const alpha = policy.alpha ?? 0.05;
  const reusable =
    given !== undefined &&
    admitted.length === receipts.length &&
    given.receipts.length === receipts.length &&
    given.baseline === policy.baseline &&
    given.alpha === alpha &&
    (options.seed === undefined || given.seed === options.seed);
  return reusable
    ? given
    : analyzeReceipts(admitted, { baseline: policy.baseline, alpha, seed: options.seed, labels: labelTestbeds(receipts) });
}

function verdictOf(findings: Finding[]): Verdict {
  return findings.some((f) => f.status === 'reject') ? 'REJECT' : findings.some((f) => f.status === 'hold') ? 'HOLD' : 'PROMOTE';
}
