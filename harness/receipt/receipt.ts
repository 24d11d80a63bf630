// Receipts: built from a run's finished cases, summarized, checked against
// schemas/receipt.schema.json (ajv strict) and the path-free rule, and only then written
// (atomically). A receipt that fails either check is never written.
import { randomBytes } from 'node:crypto';
import { rename, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { median } from 'simple-statistics';
import type { Digest } from '../../model/canonical-json.js';
import { PdbError } from '../../model/errors.js';
import { packageVersion } from '../../model/paths.js';
import { findPathIssues, type PathFreeOptions } from './path-free.js';
import type { Plan } from '../plan/plan.js';
import {
  RECEIPT_SCHEMA_VERSION,
  type BackendAvailability,
  type CaseRecord,
  type HarnessMemory,
  type HostFingerprint,
  type Provenance,
  type Receipt,
  type ReceiptSummary,
} from './receipt-types.js';
import type { ScheduledBlock } from '../plan/scheduler.js';
import { formatIssues, validateAgainst } from '../../model/schemas.js';

export function summarize(cases: CaseRecord[], planned: number, skippedUnavailable: number): ReceiptSummary {
  const count = (o: CaseRecord['outcome']) => cases.filter((c) => c.outcome === o).length;
  const shares = cases.filter((c) => c.wallMs > 0).map((c) => c.overheadMs / c.wallMs);
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
    planDigest: r.planDigest,
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

/** Validate, then write `file` atomically (temp file in the same directory, then rename). */
export async function writeReceipt(file: string, receipt: Receipt, pathFree: PathFreeOptions = {}): Promise<void> {
  assertValidReceipt(receipt, pathFree);
  const tmp = join(dirname(file), `.${randomBytes(6).toString('hex')}.tmp`);
  await writeFile(tmp, `${JSON.stringify(receipt, null, 2)}\n`, { flag: 'wx' });
  try {
    await rename(tmp, file);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw err;
  }
}
