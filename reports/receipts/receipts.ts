// Receipts as the reports read them: any schema version, in one shape (the current one's, with what
// version 1 never recorded left null), each with its fixture's identity and whether it may count as
// gate evidence. Only a version 3 receipt whose run started at a clean commit, with a fresh build,
// and ended at the same state may: version 1 receipts have no provenance (their commit was read when
// the receipt was written) and version 2 receipts' oracle trusted what the checkpoint recorded, so
// their numbers are shown, marked, and never counted toward a decision.
import { ORACLE_HASHING_SINCE_VERSION } from '../../harness/receipt/receipt-types.js';
import type {
  AnyReceipt,
  BackendAvailability,
  CaseRecord,
  CaseRecordV1,
  CheckRecord,
  FailureRecord,
  HostFingerprint,
  PhaseRecord,
  Provenance,
  Receipt,
  ReceiptV1,
} from '../../harness/receipt/receipt-types.js';

/** A fixture's identity in a report: cases of one key are one fixture, never pooled with another. */
export interface ReportFixture {
  /** JSON of [workload, name, paramsDigest, baseSnapshot]: what makes two fixtures the same. */
  key: string;
  name: string;
  workload: string;
  /** Null in version 1 receipts, which recorded only the name. */
  version: string | null;
  paramsDigest: string | null;
  baseSnapshot: string | null;
}

export interface ReportCase extends Omit<CaseRecord, 'fixture' | 'startedAt' | 'finishedAt'> {
  fixture: ReportFixture;
  /** Null in version 1 receipts. */
  startedAt: string | null;
  finishedAt: string | null;
}

export interface GateEvidence {
  /** Whether the receipt may count toward a gate. */
  ok: boolean;
  /** Why not, in words; null when it may. */
  reason: string | null;
}

export interface ReportReceipt extends Omit<Receipt, 'schemaVersion' | 'tool' | 'provenance' | 'host' | 'backends' | 'cases' | 'summary'> {
  schemaVersion: 1 | 2 | 3 | 4;
  tool: { name: 'pdb-env'; version: string };
  /** Null in version 1 receipts, which recorded no provenance. */
  provenance: Provenance | null;
  /** The commit a version 1 receipt recorded (read when it was written, not when its run started). */
  legacyCommit: string | null;
  host: Omit<HostFingerprint, 'hostIdSource' | 'loadAverage'> & {
    hostIdSource: HostFingerprint['hostIdSource'] | null;
    loadAverage: number[] | null;
  };
  backends: (Omit<BackendAvailability, 'capabilities'> & { capabilities?: BackendAvailability['capabilities'] })[];
  cases: ReportCase[];
  gateEvidence: GateEvidence;
}

export function fixtureKey(workload: string, name: string, paramsDigest: string | null, baseSnapshot: string | null): string {
  return JSON.stringify([workload, name, paramsDigest, baseSnapshot]);
}

/** Whether a receipt's version and provenance let it count as gate evidence. */
export function gateEvidenceOf(p: Provenance | null, schemaVersion: 1 | 2 | 3 | 4 = 3): GateEvidence {
  if (p === null || schemaVersion === 1)
    return { ok: false, reason: 'schema version 1: no provenance recorded (its commit was read when the receipt was written)' };
  if (schemaVersion < ORACLE_HASHING_SINCE_VERSION)
    return {
      ok: false,
      reason:
        'schema version 2: its oracle compared what each checkpoint recorded (stat signatures the backend wrote), not bytes it hashed',
    };
  if (p.staleBuild === true) return { ok: false, reason: 'the build that ran was older than its sources (--allow-stale-build)' };
  if (p.commit === null) return { ok: false, reason: 'no commit recorded (not run from a git checkout)' };
  if (p.dirty === true) return { ok: false, reason: `the checkout was dirty when the run started (commit ${p.commit.slice(0, 12)})` };
  if (p.dirty === null) return { ok: false, reason: 'whether the checkout was clean is unknown' };
  if (p.changedDuringRun === true) return { ok: false, reason: 'the code changed during the run (HEAD or the working tree)' };
  if (p.changedDuringRun === null) return { ok: false, reason: 'whether the code changed during the run is unknown' };
  return { ok: true, reason: null };
}

function checkFromV1(c: CaseRecordV1['checks'][number]): CheckRecord {
  const n = c.mismatches ? Object.values(c.mismatches).reduce((s, x) => s + x, 0) : null;
  return {
    name: c.name,
    passed: c.passed,
    evaluated: true,
    mismatches: n,
    counts: c.mismatches,
    paths: [],
    reference: null,
    detail: c.detail,
  };
}

function caseFromV1(c: CaseRecordV1): ReportCase {
  const phases: PhaseRecord[] = c.phases.map((p) => ({ ...p, outcome: p.outcome === 'unavailable' ? 'failed' : p.outcome }));
  const version = /@([^-+]+)/.exec(c.fixture)?.[1] ?? null;
  const failures: FailureRecord[] = c.failure ? [c.failure] : [];
  return {
    ...c,
    startedAt: null,
    finishedAt: null,
    fixture: {
      key: fixtureKey(c.workload, c.fixture, null, null),
      name: c.fixture,
      workload: c.workload,
      version,
      paramsDigest: null,
      baseSnapshot: null,
    },
    failures,
    phases,
    checks: c.checks.map(checkFromV1),
  };
}

function fromV1({ summary: _summary, ...r }: ReceiptV1): ReportReceipt {
  return {
    ...r,
    tool: { name: r.tool.name, version: r.tool.version },
    provenance: null,
    legacyCommit: r.tool.commit,
    host: { ...r.host, hostIdSource: null, loadAverage: null },
    cases: r.cases.map(caseFromV1),
    gateEvidence: gateEvidenceOf(null),
  };
}

function fromV2({ summary: _summary, ...r }: Receipt): ReportReceipt {
  return {
    ...r,
    legacyCommit: null,
    cases: r.cases.map((c) => ({
      ...c,
      fixture: { key: fixtureKey(c.workload, c.fixture.name, c.fixture.paramsDigest, c.fixture.baseSnapshot), ...c.fixture },
    })),
    gateEvidence: gateEvidenceOf(r.provenance, r.schemaVersion),
  };
}

/** A receipt of either version in the reports' one shape. */
export function readReceipt(r: AnyReceipt | ReportReceipt): ReportReceipt {
  if ('gateEvidence' in r) return r;
  return r.schemaVersion === 1 ? fromV1(r) : fromV2(r);
}
