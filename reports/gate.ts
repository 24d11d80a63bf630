// Policy -> verdict. A pure function of receipts and a policy: PROMOTE when every criterion is met,
// REJECT when the evidence shows a defect (mismatch, regression, silent copy, untyped failure),
// HOLD otherwise, naming every missing item. Every criterion is listed, met or not.
import type { Receipt } from '../harness/receipt-types.js';
import { analyzeReceipts, CLONE_FAILURE_CODES, isSyntheticReceipt, labelTestbeds, type ReportData } from './analyze.js';

export interface Policy {
  $schema?: string;
  kind: 'pdb-env-policy';
  policyVersion: 1;
  name: string;
  description: string;
  candidate: string;
  baseline: string;
  workloads: string[];
  hosts: { os?: string[]; storeFs?: string[]; minHosts: number; minDistinctPlatforms: number };
  minBlocksPerWorkloadAndHost: number;
  minFixtures: number;
  excludeSyntheticReceipts?: boolean;
  alpha?: number;
  correctness: { maxMismatches: number; maxMismatchUpper95: number; maxFailureUpper95: number };
  clone: { requireObserved: boolean; requireTypedFailures: boolean; requireFallbackEvidence: boolean };
  speedup: { phases: string[]; maxRatioUpper95: number; noSlowdownPhases: string[] };
}

export type Verdict = 'PROMOTE' | 'HOLD' | 'REJECT';
export type FindingStatus = 'met' | 'hold' | 'reject';

export interface Finding {
  /** Which criterion: hosts, blocks, fixtures, mismatch, failure, clone-observed, typed-failure, fallback-evidence, speedup, slowdown, evidence. */
  criterion: string;
  status: FindingStatus;
  /** Testbed label when the finding is about one testbed. */
  testbed: string | null;
  message: string;
}

export interface GateResult {
  policy: string;
  candidate: string;
  baseline: string;
  verdict: Verdict;
  /** Testbeds whose evidence counted (match the host filter and ran the candidate). */
  countedTestbeds: string[];
  /** Receipts left out of the decision, with the reason. */
  ignoredReceipts: { runId: string; reason: string }[];
  findings: Finding[];
}

const TYPED_CODE = /^E_[A-Z0-9_]+$/;

function fmtRatio(x: number): string {
  return x.toFixed(3);
}

/**
 * Evaluate `policy` against receipts. The numbers come from the same analysis as the report
 * (with the policy's baseline and alpha), over the receipts the policy admits.
 */
export function evaluateGate(receipts: Receipt[], policy: Policy, options: { seed?: number; analysis?: ReportData } = {}): GateResult {
  const ignoredReceipts: GateResult['ignoredReceipts'] = [];
  const admitted = receipts.filter((r) => {
    if ((policy.excludeSyntheticReceipts ?? true) && isSyntheticReceipt(r)) {
      ignoredReceipts.push({ runId: r.runId, reason: `synthetic plan "${r.planName}"` });
      return false;
    }
    return true;
  });
  // Reuse the report's analysis when it covers exactly the admitted receipts with the same settings.
  const given = options.analysis;
  const alpha = policy.alpha ?? 0.05;
  const reusable =
    given !== undefined &&
    admitted.length === receipts.length &&
    given.receipts.length === receipts.length &&
    given.baseline === policy.baseline &&
    given.alpha === alpha &&
    (options.seed === undefined || given.seed === options.seed);
  const data = reusable
    ? given
    : analyzeReceipts(admitted, { baseline: policy.baseline, alpha, seed: options.seed, labels: labelTestbeds(receipts) });
  const findings: Finding[] = [];
  const add = (criterion: string, status: FindingStatus, message: string, testbed: string | null = null): void => {
    findings.push({ criterion, status, testbed, message });
  };
  const { candidate } = policy;

  // Which testbeds can count: host filter, and the candidate actually ran there.
  const eligible = data.testbeds.filter((t) => {
    if (policy.hosts.os && !policy.hosts.os.includes(t.os)) return false;
    if (policy.hosts.storeFs && !policy.hosts.storeFs.includes(t.storeFs)) return false;
    return true;
  });
  const ranCandidate = (tb: string): boolean =>
    data.cells.some((c) => c.testbed === tb && c.backend === candidate && c.completed + c.failed + c.timeout > 0);
  const counted = eligible.filter((t) => ranCandidate(t.id));
  for (const t of data.testbeds) {
    if (!eligible.includes(t))
      add('hosts', 'met', `${t.id} (${t.os}, ${t.storeFs}) is outside the policy's hosts and does not count`, t.id);
    else if (!counted.includes(t)) {
      const why = t.unavailable.find((u) => u.backend === candidate);
      add(
        'hosts',
        'met',
        `${t.id} did not run ${candidate}${why ? ` (unavailable: ${why.reason ?? 'no reason given'})` : ''} and does not count`,
        t.id,
      );
    }
  }
  if (counted.length === 0)
    add('evidence', 'hold', `no admitted receipt has ${candidate} cases on a host the policy counts (${describeHosts(policy)})`);

  // Blocks per workload and testbed: a testbed is complete when every workload has enough paired blocks.
  const complete: typeof counted = [];
  for (const t of counted) {
    let ok = true;
    for (const w of policy.workloads) {
      const blocks = Math.min(
        ...policy.speedup.phases.map(
          (p) =>
            data.comparisons.find((c) => c.testbed === t.id && c.backend === candidate && c.workload === w && c.phase === p)?.blocks ?? 0,
        ),
      );
      if (blocks < policy.minBlocksPerWorkloadAndHost) {
        ok = false;
        add(
          'blocks',
          'hold',
          `${t.id} workload ${w}: ${blocks} of ${policy.minBlocksPerWorkloadAndHost} paired measured blocks against ${policy.baseline}`,
          t.id,
        );
      }
    }
    if (ok) {
      complete.push(t);
      add(
        'blocks',
        'met',
        `${t.id}: at least ${policy.minBlocksPerWorkloadAndHost} paired blocks for each of ${policy.workloads.join(', ')}`,
        t.id,
      );
    }
  }

  // Host and platform diversity among complete testbeds.
  const hosts = new Set(complete.map((t) => JSON.stringify([t.hostId, t.os, t.cpuModel])));
  const platforms = new Set(complete.map((t) => JSON.stringify([t.os, t.kernels.join(','), t.arch, t.cpuModel])));
  add(
    'hosts',
    hosts.size >= policy.hosts.minHosts ? 'met' : 'hold',
    `${hosts.size} of ${policy.hosts.minHosts} distinct host(s) with complete evidence (${describeHosts(policy)})`,
  );
  add(
    'hosts',
    platforms.size >= policy.hosts.minDistinctPlatforms ? 'met' : 'hold',
    `${platforms.size} of ${policy.hosts.minDistinctPlatforms} distinct OS/hardware platform(s) among them`,
  );

  // Fixtures.
  const countedIds = new Set(counted.map((t) => t.id));
  const fixtures = new Set(data.cells.filter((c) => countedIds.has(c.testbed) && c.backend === candidate).flatMap((c) => c.fixtures));
  add(
    'fixtures',
    fixtures.size >= policy.minFixtures ? 'met' : 'hold',
    `${fixtures.size} of ${policy.minFixtures} distinct fixture(s) run by ${candidate}${fixtures.size ? `: ${[...fixtures].sort().join(', ')}` : ''}`,
  );

  // Correctness: mismatches and failures, per counted testbed.
  const rate = (tb: string, kind: 'failure' | 'mismatch' | 'fallback') =>
    data.rates.find((r) => r.testbed === tb && r.backend === candidate && r.workload === '*' && r.kind === kind)?.bound;
  let totalMismatches = 0;
  for (const t of counted) totalMismatches += rate(t.id, 'mismatch')?.events ?? 0;
  add(
    'mismatch',
    totalMismatches > policy.correctness.maxMismatches ? 'reject' : 'met',
    `${totalMismatches} oracle mismatch(es) in ${candidate} cases (at most ${policy.correctness.maxMismatches} allowed)`,
  );
  for (const t of counted) {
    const m = rate(t.id, 'mismatch');
    if (!m || m.trials === 0) add('mismatch', 'hold', `${t.id}: no ${candidate} case has an oracle check`, t.id);
    else if ((m.upper95 ?? 1) > policy.correctness.maxMismatchUpper95) {
      add(
        'mismatch',
        'hold',
        `${t.id}: mismatch rate 95% upper bound ${pct(m.upper95)} > ${pct(policy.correctness.maxMismatchUpper95)} (${m.events} in ${m.trials}; more trials needed)`,
        t.id,
      );
    } else
      add(
        'mismatch',
        'met',
        `${t.id}: mismatch rate 95% upper bound ${pct(m.upper95)} <= ${pct(policy.correctness.maxMismatchUpper95)} (${m.events} in ${m.trials})`,
        t.id,
      );
    const f = rate(t.id, 'failure');
    if (!f || f.trials === 0) add('failure', 'hold', `${t.id}: no attempted ${candidate} case`, t.id);
    else if ((f.lower95 ?? 0) > policy.correctness.maxFailureUpper95) {
      add(
        'failure',
        'reject',
        `${t.id}: failure rate ${pct(f.rate)} (${f.events} in ${f.trials}); even its 95% lower bound ${pct(f.lower95)} exceeds ${pct(policy.correctness.maxFailureUpper95)}`,
        t.id,
      );
    } else if ((f.upper95 ?? 1) > policy.correctness.maxFailureUpper95) {
      add(
        'failure',
        'hold',
        `${t.id}: failure rate 95% upper bound ${pct(f.upper95)} > ${pct(policy.correctness.maxFailureUpper95)} (${f.events} in ${f.trials}; more trials needed)`,
        t.id,
      );
    } else
      add(
        'failure',
        'met',
        `${t.id}: failure rate 95% upper bound ${pct(f.upper95)} <= ${pct(policy.correctness.maxFailureUpper95)} (${f.events} in ${f.trials})`,
        t.id,
      );
  }

  // Clone observation and typed failures, straight from the candidate's cases.
  const candidateCases = admitted.flatMap((r) =>
    (countedIds.has(data.testbeds.find((t) => t.runIds.includes(r.runId))?.id ?? '') ? r.cases : []).filter((c) => c.backend === candidate),
  );
  if (policy.clone.requireObserved) {
    const done = candidateCases.filter((c) => c.outcome === 'ok');
    const silent = done.filter((c) => c.cloneObserved === false);
    const unknown = done.filter((c) => c.cloneObserved === null);
    if (silent.length > 0)
      add(
        'clone-observed',
        'reject',
        `${silent.length} completed ${candidate} case(s) did not observe a clone (a silent copy): ${silent
          .slice(0, 5)
          .map((c) => c.id)
          .join(', ')}`,
      );
    if (unknown.length > 0) add('clone-observed', 'hold', `${unknown.length} completed ${candidate} case(s) recorded no clone observation`);
    if (done.length === 0) add('clone-observed', 'hold', `no completed ${candidate} case to observe a clone in`);
    else if (silent.length === 0 && unknown.length === 0)
      add('clone-observed', 'met', `all ${done.length} completed ${candidate} case(s) observed the clone`);
  }
  if (policy.clone.requireTypedFailures) {
    const failedCases = candidateCases.filter((c) => c.outcome === 'failed' || c.outcome === 'timeout');
    const untyped = failedCases.filter((c) => c.failure === null || !TYPED_CODE.test(c.failure.code));
    if (untyped.length > 0)
      add(
        'typed-failure',
        'reject',
        `${untyped.length} ${candidate} failure(s) carry no stable E_* code: ${untyped
          .slice(0, 5)
          .map((c) => c.id)
          .join(', ')}`,
      );
    else add('typed-failure', 'met', `${failedCases.length} ${candidate} failure(s), each with a stable code`);
  }
  if (policy.clone.requireFallbackEvidence) {
    // Any admitted receipt counts here, whatever its host: the point is to see the failure path.
    const probe = admitted
      .flatMap((r) => r.backends)
      .filter((b) => b.name === candidate && !b.available && b.reason !== null && TYPED_CODE.test(b.reason));
    const caseEvidence = admitted
      .flatMap((r) => r.cases)
      .filter((c) => c.backend === candidate && c.failure !== null && CLONE_FAILURE_CODES.includes(c.failure.code));
    if (probe.length + caseEvidence.length === 0) {
      add(
        'fallback-evidence',
        'hold',
        `no receipt shows ${candidate} failing closed with a typed reason (run a plan where a forced clone cannot work, e.g. a store on ext4 or HFS+)`,
      );
    } else {
      const codes = [...new Set([...probe.map((b) => b.reason!), ...caseEvidence.map((c) => c.failure!.code)])].sort();
      add(
        'fallback-evidence',
        'met',
        `${candidate} failed closed with a typed reason ${probe.length + caseEvidence.length} time(s): ${codes.join(', ')}`,
      );
    }
  }

  // Speed-up and regressions, per counted testbed and workload.
  for (const t of counted) {
    for (const w of policy.workloads) {
      for (const p of policy.speedup.phases) {
        const c = data.comparisons.find((x) => x.testbed === t.id && x.backend === candidate && x.workload === w && x.phase === p);
        const where = `${t.id} ${w} ${p}`;
        if (!c || !c.ci || c.medianRatio === null)
          add('speedup', 'hold', `${where}: no ratio interval (${c?.blocks ?? 0} paired blocks)`, t.id);
        else if (c.blocks < policy.minBlocksPerWorkloadAndHost) {
          // A bootstrap interval from a handful of blocks is too unstable to reject on.
          add(
            'speedup',
            'hold',
            `${where}: median ratio ${fmtRatio(c.medianRatio)} from ${c.blocks} of ${policy.minBlocksPerWorkloadAndHost} blocks; judged once the blocks are there`,
            t.id,
          );
        } else if (c.ci.upper < policy.speedup.maxRatioUpper95) {
          add(
            'speedup',
            'met',
            `${where}: median ratio ${fmtRatio(c.medianRatio)}, 95% CI [${fmtRatio(c.ci.lower)}, ${fmtRatio(c.ci.upper)}] below ${policy.speedup.maxRatioUpper95}`,
            t.id,
          );
        } else if (c.ci.lower >= policy.speedup.maxRatioUpper95) {
          add(
            'speedup',
            'reject',
            `${where}: median ratio ${fmtRatio(c.medianRatio)}, 95% CI [${fmtRatio(c.ci.lower)}, ${fmtRatio(c.ci.upper)}] lies wholly at or above ${policy.speedup.maxRatioUpper95}: the required speed-up is excluded`,
            t.id,
          );
        } else {
          add(
            'speedup',
            'hold',
            `${where}: 95% CI [${fmtRatio(c.ci.lower)}, ${fmtRatio(c.ci.upper)}] reaches ${policy.speedup.maxRatioUpper95}; more blocks needed to show the speed-up`,
            t.id,
          );
        }
      }
      for (const p of policy.speedup.noSlowdownPhases) {
        const c = data.comparisons.find((x) => x.testbed === t.id && x.backend === candidate && x.workload === w && x.phase === p);
        if (!c || c.blocks === 0) continue;
        if (c.verdict === 'slower') {
          add(
            'slowdown',
            'reject',
            `${t.id} ${w} ${p}: significantly slower than ${policy.baseline} (median ratio ${fmtRatio(c.medianRatio!)}, p = ${c.permutation!.p.toPrecision(2)})`,
            t.id,
          );
        } else
          add(
            'slowdown',
            'met',
            `${t.id} ${w} ${p}: not significantly slower (median ratio ${fmtRatio(c.medianRatio!)}, ${c.verdict})`,
            t.id,
          );
      }
    }
  }

  const verdict: Verdict = findings.some((f) => f.status === 'reject')
    ? 'REJECT'
    : findings.some((f) => f.status === 'hold')
      ? 'HOLD'
      : 'PROMOTE';
  return {
    policy: policy.name,
    candidate,
    baseline: policy.baseline,
    verdict,
    countedTestbeds: counted.map((t) => t.id),
    ignoredReceipts,
    findings,
  };
}

function pct(x: number | null | undefined): string {
  if (x === null || x === undefined) return '-';
  return `${(x * 100).toFixed(x < 0.01 ? 2 : 1)}%`;
}

function describeHosts(policy: Policy): string {
  const parts = [
    policy.hosts.os ? `os ${policy.hosts.os.join('/')}` : 'any os',
    policy.hosts.storeFs ? `store on ${policy.hosts.storeFs.join('/')}` : 'any store filesystem',
  ];
  return parts.join(', ');
}
