// Receipts: built from a run's finished cases, summarized, checked against
// schemas/receipt.schema.json (ajv strict) and the path-free rule, and only then written
// (atomically, signed: harness/receipt/envelope.ts). A receipt that fails either check is never written.
import { median } from 'simple-statistics';
import type { Digest } from '../../model/canonical-json.js';
import { PdbError } from '../../model/errors.js';
import { packageVersion } from '../../model/paths.js';
import { loadSigningKey, type SigningKey } from '../../model/signing/key-store.js';
import { writeSealedReceipt } from './envelope.js';
import { findPathIssues, type PathFreeOptions } from './path-free.js';
import { planDigest, type Plan } from '../plan/plan.js';
import {
  RECEIPT_SCHEMA_VERSION,
  type BackendAvailability,
  type CaseRecord,
  type HarnessMemory,
  type HostFingerprint,
  type Provenance,
  type Receipt,
  type ReceiptPlan,
  type ReceiptSummary,
  type WorkloadOverhead,
} from './receipt-types.js';
import type { ScheduledBlock } from '../plan/scheduler.js';
import { formatIssues, validateAgainst } from '../../model/schemas.js';

const overheadShare = (c: CaseRecord): number => c.overheadMs / c.wallMs;

/** Overhead shares per workload, in the order the workloads first appear among the cases. */
export function overheadByWorkload(cases: CaseRecord[]): WorkloadOverhead[] {
  const by = new Map<string, number[]>();
  for (const c of cases) if (c.wallMs > 0) by.set(c.workload, [...(by.get(c.workload) ?? []), overheadShare(c)]);
  return [...by].map(([workload, shares]) => ({
    workload,
    cases: shares.length,
    shareMedian: median(shares),
    shareMax: Math.max(...shares),
  }));
}

/** The summary of `cases`; `perWorkload` adds the overhead per workload (receipts of version 4 on). */
export function summarize(cases: CaseRecord[], planned: number, skippedUnavailable: number, perWorkload = true): ReceiptSummary {
  const count = (o: CaseRecord['outcome']) => cases.filter((c) => c.outcome === o).length;
  const shares = cases.filter((c) => c.wallMs > 0).map(overheadShare);
  const oracle = cases.flatMap((c) => c.checks.filter((k) => k.name === 'oracle'));
  return {
    planned,
    ok: count('ok'),
    mismatch: count('mismatch'),
    failed: count('failed'),
    environment: count('environment'),
    timeout: count('timeout'),
    unavailable: skippedUnavailable + count('unavailable'),
    oracleChecked: oracle.filter((k) => k.evaluated).length,
    oracleMismatches: oracle.filter((k) => k.evaluated && !k.passed).length,
    oracleNotEvaluated: oracle.filter((k) => !k.evaluated).length,
    overheadShareMedian: shares.length ? median(shares) : null,
    overheadShareMax: shares.length ? Math.max(...shares) : null,
    ...(perWorkload ? { overheadByWorkload: overheadByWorkload(cases) } : {}),
  };
}

function toolVersion(): string {
  try {
    return packageVersion();
  } catch {
    return '0.0.0'; // an unreadable package.json must not cost the run its receipt
  }
}

export interface ReceiptInput {
  runId: string;
  plan: Plan;
  planDigest: Digest;
  seed: number;
  startedAt: string;
  /** The checkout the run ran, read at its start and checked again at its end. */
  provenance: Provenance;
  host: HostFingerprint;
  backends: BackendAvailability[];
  schedule: ScheduledBlock[];
  /** Backends available on this host; the others' slots count as unavailable. */
  available: Set<string>;
  /** Finished cases (any order; cases not in the schedule are left out). */
  cases: Iterable<CaseRecord>;
  /** The harness process's own memory, when measured. */
  harness?: HarnessMemory;
  /** What else counts as a path (the receipt's plan is left out when it holds one, rather than losing the receipt). */
  pathFree?: PathFreeOptions;
}

/** The plan as a receipt carries it: path-free, so without its store location (which does not change the schedule). */
export function receiptPlan(plan: Plan): ReceiptPlan {
  const { store: _store, ...rest } = plan;
  return rest;
}

/** The receipt of a run: its cases in schedule order, its blocks, and the summary; finishedAt is now. */
export function buildReceipt(r: ReceiptInput): Receipt {
  const slots = r.schedule.flatMap((b) => b.cases);
  const order = new Map(slots.map((c, i) => [c.id, i]));
  const cases = [...r.cases].filter((c) => order.has(c.id)).sort((a, b) => order.get(a.id)! - order.get(b.id)!);
  const runnable = slots.filter((c) => r.available.has(c.backend)).length;
  return {
    schemaVersion: RECEIPT_SCHEMA_VERSION,
    kind: 'pdb-env-receipt',
    tool: { name: 'pdb-env', version: toolVersion() },
    provenance: r.provenance,
    runId: r.runId,
    planName: r.plan.name,
    // The digest of the plan as carried: the one the run started with unless the plan named a store.
    planDigest: r.plan.store === undefined ? r.planDigest : planDigest(receiptPlan(r.plan) as Plan),
    // A plan holding a local path (a parameter given as one, not as a placeholder) stays out: validate then says so.
    ...(findPathIssues(receiptPlan(r.plan), r.pathFree).length === 0 ? { plan: receiptPlan(r.plan) } : {}),
    seed: r.seed,
    startedAt: r.startedAt,
    finishedAt: new Date().toISOString(),
    host: r.host,
    backends: r.backends,
    blocks: r.schedule.map((b) => ({ index: b.index, workload: b.workload, warmup: b.warmup, order: b.order })),
    cases,
    summary: summarize(cases, slots.length, slots.length - runnable),
    ...(r.harness ? { harness: r.harness } : {}),
  };
}

/** Throws E_SCHEMA_INVALID or E_RECEIPT_NOT_PATH_FREE with every JSON pointer that failed. */
export function assertValidReceipt(receipt: unknown, pathFree: PathFreeOptions = {}): asserts receipt is Receipt {
  const issues = validateAgainst('receipt', receipt);
  if (issues.length) {
    throw new PdbError(
      'E_SCHEMA_INVALID',
      `the receipt does not match schemas/receipt.schema.json, so it was not written: ${formatIssues(issues)}`,
      {
        hint: 'This is a pdb-env bug: harness/receipt/receipt-types.ts and the schema disagree.',
      },
    );
  }
  const leaks = findPathIssues(receipt, pathFree);
  if (leaks.length) {
    throw new PdbError(
      'E_RECEIPT_NOT_PATH_FREE',
      `the receipt is not path-free, so it was not written: ${leaks
        .slice(0, 8)
        .map((l) => `${l.pointer} ${l.message}`)
        .join('; ')}`,
      {
        hint: 'Receipts must hold no absolute path, user name or host name; scrub the field that leaked.',
      },
    );
  }
}

/**
 * Validate, then write `file` atomically as a DSSE envelope signed by `key` (default: this host's
 * key, or CI's from PDB_ENV_SIGNING_KEY; harness/receipt/envelope.ts).
 */
export async function writeReceipt(
  file: string,
  receipt: Receipt,
  pathFree: PathFreeOptions = {},
  key: SigningKey = loadSigningKey(),
): Promise<void> {
  assertValidReceipt(receipt, pathFree);
  await writeSealedReceipt(file, receipt, key);
}
