// The gate's criteria, each a function that adds its findings (met, hold or reject) in a fixed
// order: hosts, blocks, diversity, fixtures, correctness, clone behaviour; the speed criteria
// (blocks, speed-up, slowdown and slack, fixture by fixture) are in speed.ts.
import { fmtPct as pct } from '../analysis/format.js';
import type { FindingStatus, Policy } from './gate-policy.js';
import type { ReportCase as CaseRecord, ReportReceipt as Receipt } from '../receipts/receipts.js';
import { rateRows } from '../analysis/comparisons.js';
import { CLONE_FAILURE_CODES, type ReportData, type Testbed } from '../analysis/report-data.js';
import type { RateBound } from '../analysis/statistics.js';
import { matchesFixture } from './gate-policy.js';

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

/**
 * How many more trials the bound needs, said exactly where it can be: with no event so far, the
 * fewest trials whose zero-event bound (1 - 0.05^(1/n)) is at most `limit`, less those run.
 */
export function moreTrials(b: RateBound, limit: number): string {
  if (b.events > 0) return `more trials needed (${b.events} event(s) so far: each further event raises the count)`;
  const need = Math.ceil(Math.log(0.05) / Math.log(1 - limit));
  return `${need - b.trials} more trial(s) with none would bring it to ${pct(1 - Math.pow(0.05, 1 / need))}`;
}

/** Host and platform diversity among complete testbeds. */
export function diversityFindings(g: GateContext, complete: Testbed[]): void {
  const { policy } = g;
  const hosts = new Set(complete.map((t) => JSON.stringify([t.hostId, t.os, t.cpuModel])));
  const platforms = new Set(complete.map((t) => JSON.stringify([t.os, t.kernels.join(','), t.arch, t.cpuModel])));
  const short = (have: number, want: number, what: string) => (have >= want ? '' : `: ${want - have} more ${what} needed`);
  g.add(
    'hosts',
    hosts.size >= policy.hosts.minHosts ? 'met' : 'hold',
    `${hosts.size} of ${policy.hosts.minHosts} distinct host(s) with complete evidence (${describeHosts(policy)})${short(hosts.size, policy.hosts.minHosts, 'host(s) with every workload at its blocks')}`,
  );
  g.add(
    'hosts',
    platforms.size >= policy.hosts.minDistinctPlatforms ? 'met' : 'hold',
    `${platforms.size} of ${policy.hosts.minDistinctPlatforms} distinct OS/hardware platform(s) among them${short(platforms.size, policy.hosts.minDistinctPlatforms, 'platform(s) (another OS, kernel, CPU architecture or model)')}`,
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

/** One group the correctness rates are judged on: a fixture, or the pool a policy names. */
interface FixtureGroup {
  label: string;
  cases: CaseRecord[];
}

/** The candidate's measured cases on a testbed (warm-ups out), by fixture, with the policy's pool merged into one group. */
function fixtureGroups(g: GateContext, t: Testbed): FixtureGroup[] {
  const { policy, candidate } = g;
  const cases = g.admitted
    .filter((r) => t.runIds.includes(r.runId))
    .flatMap((r) => r.cases)
    .filter((c) => c.backend === candidate && !c.warmup && policy.workloads.includes(c.workload));
  const pool = policy.correctness.pool ?? [];
  const pooled = (name: string) => pool.some((sel) => matchesFixture(sel, name));
  const groups = new Map<string, FixtureGroup>();
  for (const c of cases) {
    const label = pooled(c.fixture.name) ? `pool (${pool.join(', ')})` : c.fixture.name;
    const group = groups.get(label) ?? { label, cases: [] };
    group.cases.push(c);
    groups.set(label, group);
  }
  return [...groups.values()].sort((a, b) => a.label.localeCompare(b.label));
}

/**
 * Correctness: oracle mismatches over all counted testbeds, then mismatch and failure rates per
 * testbed and per fixture (a pool only where the policy names it), each over measured cases.
 */
export function correctnessFindings(g: GateContext, counted: Testbed[]): void {
  const { policy, candidate } = g;
  const limits = policy.correctness;
  const byTestbed = counted.map((t) => ({ t, groups: fixtureGroups(g, t) }));
  const rates = (cs: CaseRecord[]) => {
    const rows = rateRows({ testbed: '', backend: candidate, workload: '*', fixture: '*' }, cs);
    return { m: rows.find((r) => r.kind === 'mismatch')!.bound, f: rows.find((r) => r.kind === 'failure')!.bound };
  };
  const totalMismatches = byTestbed.reduce((n, x) => n + x.groups.reduce((k, grp) => k + rates(grp.cases).m.events, 0), 0);
  g.add(
    'mismatch',
    totalMismatches > limits.maxMismatches ? 'reject' : 'met',
    `${totalMismatches} oracle mismatch(es) in ${candidate}'s measured cases (at most ${limits.maxMismatches} allowed)`,
  );
  for (const { t, groups } of byTestbed) {
    if (groups.length === 0) g.add('mismatch', 'hold', `${t.id}: no measured ${candidate} case of ${policy.workloads.join(', ')}`, t.id);
    for (const grp of groups) {
      const { m, f } = rates(grp.cases);
      const at = `${t.id} ${grp.label}`;
      if (m.trials === 0) g.add('mismatch', 'hold', `${at}: no ${candidate} case has an oracle check`, t.id);
      else
        g.add(
          'mismatch',
          (m.upper95 ?? 1) > limits.maxMismatchUpper95 ? 'hold' : 'met',
          `${at}: mismatch rate 95% upper bound ${pct(m.upper95)} ${(m.upper95 ?? 1) > limits.maxMismatchUpper95 ? '>' : '<='} ${pct(limits.maxMismatchUpper95)} (${m.events} in ${m.trials}${(m.upper95 ?? 1) > limits.maxMismatchUpper95 ? `; ${moreTrials(m, limits.maxMismatchUpper95)}` : ''})`,
          t.id,
        );
      failureFinding(g, at, t.id, f);
    }
  }
}

function failureFinding(g: GateContext, at: string, testbed: string, f: RateBound): void {
  const limit = g.policy.correctness.maxFailureUpper95;
  if (f.trials === 0) g.add('failure', 'hold', `${at}: no attempted ${g.candidate} case`, testbed);
  else if ((f.lower95 ?? 0) > limit)
    g.add(
      'failure',
      'reject',
      `${at}: failure rate ${pct(f.rate)} (${f.events} in ${f.trials}); even its 95% lower bound ${pct(f.lower95)} exceeds ${pct(limit)}`,
      testbed,
    );
  else
    g.add(
      'failure',
      (f.upper95 ?? 1) > limit ? 'hold' : 'met',
      `${at}: failure rate 95% upper bound ${pct(f.upper95)} ${(f.upper95 ?? 1) > limit ? '>' : '<='} ${pct(limit)} (${f.events} in ${f.trials}${(f.upper95 ?? 1) > limit ? `; ${moreTrials(f, limit)}` : ''})`,
      testbed,
    );
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
