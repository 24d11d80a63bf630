// The gate's criteria, each a function that adds its findings (met, hold or reject) in a fixed
// order: hosts, blocks, diversity, fixtures, correctness, clone behaviour; the speed criteria
// (blocks, speed-up, slowdown and slack, fixture by fixture) are in gate-speed.ts.
import { fmtPct as pct } from '../format.js';
import type { FindingStatus, Policy } from './policy.js';
import type { ReportCase as CaseRecord, ReportReceipt as Receipt } from '../receipts.js';
import { CLONE_FAILURE_CODES, type ReportData, type Testbed } from '../report-data.js';

/** What every criterion reads, and where it adds its findings. */
export interface GateContext {
  policy: Policy;
  candidate: string;
  data: ReportData;
  /** The receipts the policy admits. */
  admitted: Receipt[];
  add(criterion: string, status: FindingStatus, message: string, testbed?: string | null): void;
}

const TYPED_CODE = /^E_[A-Z0-9_]+$/;

function describeHosts(policy: Policy): string {
  const parts = [
    policy.hosts.os ? `os ${policy.hosts.os.join('/')}` : 'any os',
    policy.hosts.storeFs ? `store on ${policy.hosts.storeFs.join('/')}` : 'any store filesystem',
  ];
  return parts.join(', ');
}

/** Which testbeds count: inside the policy's hosts, and the candidate actually ran there. Says why each other testbed does not. */
export function countedTestbeds(g: GateContext): Testbed[] {
  const { policy, data, candidate } = g;
  const eligible = data.testbeds.filter((t) => {
    if (policy.hosts.os && !policy.hosts.os.includes(t.os)) return false;
    if (policy.hosts.storeFs && !policy.hosts.storeFs.includes(t.storeFs)) return false;
    return true;
  });
  const ranCandidate = (tb: string): boolean =>
    data.cells.some((c) => c.testbed === tb && c.backend === candidate && c.completed + c.mismatch + c.failed + c.timeout > 0);
  const counted = eligible.filter((t) => ranCandidate(t.id));
  for (const t of data.testbeds) {
    if (!eligible.includes(t))
      g.add('hosts', 'met', `${t.id} (${t.os}, ${t.storeFs}) is outside the policy's hosts and does not count`, t.id);
    else if (!counted.includes(t)) {
      const why = t.unavailable.find((u) => u.backend === candidate);
      g.add(
        'hosts',
        'met',
        `${t.id} did not run ${candidate}${why ? ` (unavailable: ${why.reason ?? 'no reason given'})` : ''} and does not count`,
        t.id,
      );
    }
  }
  if (counted.length === 0)
    g.add('evidence', 'hold', `no admitted receipt has ${candidate} cases on a host the policy counts (${describeHosts(policy)})`);
  return counted;
}

/** Host and platform diversity among complete testbeds. */
export function diversityFindings(g: GateContext, complete: Testbed[]): void {
  const { policy } = g;
  const hosts = new Set(complete.map((t) => JSON.stringify([t.hostId, t.os, t.cpuModel])));
  const platforms = new Set(complete.map((t) => JSON.stringify([t.os, t.kernels.join(','), t.arch, t.cpuModel])));
  g.add(
    'hosts',
    hosts.size >= policy.hosts.minHosts ? 'met' : 'hold',
    `${hosts.size} of ${policy.hosts.minHosts} distinct host(s) with complete evidence (${describeHosts(policy)})`,
  );
  g.add(
    'hosts',
    platforms.size >= policy.hosts.minDistinctPlatforms ? 'met' : 'hold',
    `${platforms.size} of ${policy.hosts.minDistinctPlatforms} distinct OS/hardware platform(s) among them`,
  );
}

export function fixtureFindings(g: GateContext, countedIds: Set<string>): void {
  const { policy, candidate } = g;
  const fixtures = new Set(
    g.data.cells
      .filter((c) => countedIds.has(c.testbed) && c.backend === candidate && c.completed + c.mismatch + c.failed + c.timeout > 0)
      .map((c) => c.fixture),
  );
  g.add(
    'fixtures',
    fixtures.size >= policy.minFixtures ? 'met' : 'hold',
    `${fixtures.size} of ${policy.minFixtures} distinct fixture(s) run by ${candidate}${fixtures.size ? `: ${[...fixtures].sort().join(', ')}` : ''}`,
  );
}

/** Correctness: oracle mismatches over all counted testbeds, then mismatch and failure rates per testbed. */
export function correctnessFindings(g: GateContext, counted: Testbed[]): void {
  const { policy, candidate } = g;
  const limits = policy.correctness;
  const rate = (tb: string, kind: 'failure' | 'mismatch' | 'fallback') =>
    g.data.rates.find((r) => r.testbed === tb && r.backend === candidate && r.workload === '*' && r.kind === kind)?.bound;
  let totalMismatches = 0;
  for (const t of counted) totalMismatches += rate(t.id, 'mismatch')?.events ?? 0;
  g.add(
    'mismatch',
    totalMismatches > limits.maxMismatches ? 'reject' : 'met',
    `${totalMismatches} oracle mismatch(es) in ${candidate} cases (at most ${limits.maxMismatches} allowed)`,
  );
  for (const t of counted) {
    const m = rate(t.id, 'mismatch');
    if (!m || m.trials === 0) g.add('mismatch', 'hold', `${t.id}: no ${candidate} case has an oracle check`, t.id);
    else if ((m.upper95 ?? 1) > limits.maxMismatchUpper95) {
      g.add(
        'mismatch',
        'hold',
        `${t.id}: mismatch rate 95% upper bound ${pct(m.upper95)} > ${pct(limits.maxMismatchUpper95)} (${m.events} in ${m.trials}; more trials needed)`,
        t.id,
      );
    } else
      g.add(
        'mismatch',
        'met',
        `${t.id}: mismatch rate 95% upper bound ${pct(m.upper95)} <= ${pct(limits.maxMismatchUpper95)} (${m.events} in ${m.trials})`,
        t.id,
      );
    const f = rate(t.id, 'failure');
    if (!f || f.trials === 0) g.add('failure', 'hold', `${t.id}: no attempted ${candidate} case`, t.id);
    else if ((f.lower95 ?? 0) > limits.maxFailureUpper95) {
      g.add(
        'failure',
        'reject',
        `${t.id}: failure rate ${pct(f.rate)} (${f.events} in ${f.trials}); even its 95% lower bound ${pct(f.lower95)} exceeds ${pct(limits.maxFailureUpper95)}`,
        t.id,
      );
    } else if ((f.upper95 ?? 1) > limits.maxFailureUpper95) {
      g.add(
        'failure',
        'hold',
        `${t.id}: failure rate 95% upper bound ${pct(f.upper95)} > ${pct(limits.maxFailureUpper95)} (${f.events} in ${f.trials}; more trials needed)`,
        t.id,
      );
    } else
      g.add(
        'failure',
        'met',
        `${t.id}: failure rate 95% upper bound ${pct(f.upper95)} <= ${pct(limits.maxFailureUpper95)} (${f.events} in ${f.trials})`,
        t.id,
      );
  }
}

/** Clone observation and typed failures, straight from the candidate's cases, then the fallback evidence. */
export function cloneFindings(g: GateContext, countedIds: Set<string>): void {
  const { policy, candidate, data } = g;
  const candidateCases = g.admitted.flatMap((r) =>
    (countedIds.has(data.testbeds.find((t) => t.runIds.includes(r.runId))?.id ?? '') ? r.cases : []).filter((c) => c.backend === candidate),
  );
  if (policy.clone.requireObserved) cloneObservedFindings(g, candidateCases);
  if (policy.clone.requireTypedFailures) {
    const failedCases = candidateCases.filter((c) => c.outcome === 'failed' || c.outcome === 'timeout');
    const untyped = failedCases.filter((c) => c.failure === null || !TYPED_CODE.test(c.failure.code));
    if (untyped.length > 0)
      g.add(
        'typed-failure',
        'reject',
        `${untyped.length} ${candidate} failure(s) carry no stable E_* code: ${untyped
          .slice(0, 5)
          .map((c) => c.id)
          .join(', ')}`,
      );
    else g.add('typed-failure', 'met', `${failedCases.length} ${candidate} failure(s), each with a stable code`);
  }
  if (policy.clone.requireFallbackEvidence) fallbackEvidenceFindings(g);
}

function cloneObservedFindings(g: GateContext, candidateCases: CaseRecord[]): void {
  const { candidate } = g;
  const done = candidateCases.filter((c) => c.outcome === 'ok');
  const silent = done.filter((c) => c.cloneObserved === false);
  const unknown = done.filter((c) => c.cloneObserved === null);
  if (silent.length > 0)
    g.add(
      'clone-observed',
      'reject',
      `${silent.length} completed ${candidate} case(s) did not observe a clone (a silent copy): ${silent
        .slice(0, 5)
        .map((c) => c.id)
        .join(', ')}`,
    );
  if (unknown.length > 0) g.add('clone-observed', 'hold', `${unknown.length} completed ${candidate} case(s) recorded no clone observation`);
  if (done.length === 0) g.add('clone-observed', 'hold', `no completed ${candidate} case to observe a clone in`);
  else if (silent.length === 0 && unknown.length === 0)
    g.add('clone-observed', 'met', `all ${done.length} completed ${candidate} case(s) observed the clone`);
}

function fallbackEvidenceFindings(g: GateContext): void {
  const { candidate, admitted } = g;
  // Any admitted receipt counts here, whatever its host: the point is to see the failure path.
  const probe = admitted
    .flatMap((r) => r.backends)
    .filter((b) => b.name === candidate && !b.available && b.reason !== null && TYPED_CODE.test(b.reason));
  const caseEvidence = admitted
    .flatMap((r) => r.cases)
    .filter((c) => c.backend === candidate && c.failure !== null && CLONE_FAILURE_CODES.includes(c.failure.code));
  if (probe.length + caseEvidence.length === 0) {
    g.add(
      'fallback-evidence',
      'hold',
      `no receipt shows ${candidate} failing closed with a typed reason (run a plan where a forced clone cannot work, e.g. a store on ext4 or HFS+)`,
    );
  } else {
    const codes = [...new Set([...probe.map((b) => b.reason!), ...caseEvidence.map((c) => c.failure!.code)])].sort();
    g.add(
      'fallback-evidence',
      'met',
      `${candidate} failed closed with a typed reason ${probe.length + caseEvidence.length} time(s): ${codes.join(', ')}`,
    );
  }
}
