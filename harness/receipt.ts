// Receipts: summarized, checked against schemas/receipt.schema.json (ajv strict) and the path-free
// rule, and only then written (atomically). A receipt that fails either check is never written.
import { randomBytes } from 'node:crypto';
import { rename, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { median } from 'simple-statistics';
import { PdbError } from '../model/errors.js';
import { findPathIssues, type PathFreeOptions } from './path-free.js';
import type { CaseRecord, Receipt, ReceiptSummary } from './receipt-types.js';
import { formatIssues, validateAgainst } from './schemas.js';

export function summarize(cases: CaseRecord[], planned: number, skippedUnavailable: number): ReceiptSummary {
  const count = (o: CaseRecord['outcome']) => cases.filter((c) => c.outcome === o).length;
  const shares = cases.filter((c) => c.wallMs > 0).map((c) => c.overheadMs / c.wallMs);
  return {
    planned,
    ok: count('ok'),
    failed: count('failed'),
    timeout: count('timeout'),
    unavailable: skippedUnavailable + count('unavailable'),
    oracleMismatches: cases.filter((c) => c.outcome !== 'unavailable' && c.checks.some((k) => k.name === 'oracle' && !k.passed)).length,
    overheadShareMedian: shares.length ? median(shares) : null,
    overheadShareMax: shares.length ? Math.max(...shares) : null,
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
        hint: 'This is a pdb-env bug: harness/receipt-types.ts and the schema disagree.',
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
