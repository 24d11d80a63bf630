// The benchmark scripts' receipts: what ran (the command, path-free), on which host, at which commit
// (read at the start, checked at the end), and every sample, validated against
// schemas/bench-receipt.schema.json and the path-free rule before it is written (signed: harness/receipt/envelope.ts), so any figure quoted
// from a benchmark can cite a committed file. Default place: receipts/local/ (ignored by git).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { writeSealedReceipt } from '../../harness/receipt/envelope.js';
import { hostFingerprint } from '../../harness/receipt/host.js';
import { findPathIssues } from '../../harness/receipt/path-free.js';
import { provenanceOf, readCheckoutState, type CheckoutState } from '../../harness/receipt/provenance.js';
import type { HostFingerprint, Provenance } from '../../harness/receipt/receipt-types.js';
import { newRunId } from '../../harness/run-journal.js';
import { formatIssues, validateAgainst } from '../../model/schemas.js';
import { PdbError } from '../../model/errors.js';
import { packageRoot, packageVersion } from '../../model/paths.js';
import { loadSigningKey, type SigningKey } from '../../model/signing/key-store.js';
import { median } from '../lib.js';

export interface BenchRow {
  name: string;
  group: string;
  n: number;
  medianMs: number | null;
  samplesMs: number[];
  ratios: Record<string, number>;
  metrics: Record<string, string | number | null>;
}

/** One goal of issue 26 as a run measured it: a ratio to a baseline of the same rounds. */
export interface BenchGoal {
  goal: string;
  group: string;
  /** The measured row and its baseline row (by name, in `group`). */
  measured: string;
  baseline: string;
  /** at-most: measured / baseline must not exceed `limit`; faster: baseline / measured must reach it. */
  direction: 'at-most' | 'faster';
  limit: number;
  /** The median of per-round ratios, in the goal's direction. */
  ratio: number;
  met: boolean;
  /** For goals with a stretch limit: whether it was met too. */
  stretchMet?: boolean;
}

export interface BenchReceipt {
  kind: 'pdb-env-bench-receipt';
  schemaVersion: 1;
  benchmark: 'full-copy' | 'cow' | 'scale' | 'lstat' | 'startup' | 'rhythm';
  tool: { name: 'pdb-env'; version: string };
  provenance: Provenance;
  command: string;
  startedAt: string;
  finishedAt: string;
  host: HostFingerprint;
  params: Record<string, string | number | boolean | null>;
  results: BenchRow[];
  /** The goals the rows answer, evaluated (absent in receipts written before issue 26). */
  goals?: BenchGoal[];
}

/** A row from samples, with the median of per-round ratios to the named rows' samples. */
export function benchRow(
  name: string,
  group: string,
  samplesMs: number[],
  against: Record<string, number[]> = {},
  metrics: BenchRow['metrics'] = {},
): BenchRow {
  const ratios: Record<string, number> = {};
  for (const [other, xs] of Object.entries(against)) {
    const r = median(samplesMs.map((x, i) => x / xs[i]!).filter(Number.isFinite));
    if (r !== null) ratios[other] = r;
  }
  return {
    name,
    group,
    n: samplesMs.length,
    medianMs: median(samplesMs),
    samplesMs: samplesMs.map((x) => Math.round(x * 1000) / 1000),
    ratios,
    metrics,
  };
}

/** The start of a benchmark: when, where (the host, measured on `dir`'s filesystem), at which commit. */
export interface BenchStart {
  startedAt: string;
  checkout: CheckoutState;
  host: HostFingerprint;
  outDir: string;
  /** The key the receipt is signed with, read at the start: a benchmark without one fails before it measures. */
  key: SigningKey;
}

export async function startBenchReceipt(dir: string, outDir: string): Promise<BenchStart> {
  return {
    startedAt: new Date().toISOString(),
    checkout: await readCheckoutState(packageRoot(), [outDir]),
    host: await hostFingerprint(dir),
    outDir,
    key: loadSigningKey(),
  };
}

/** Validate (schema and path-free) and write the receipt; returns its path. */
export async function writeBenchReceipt(
  start: BenchStart,
  r: Pick<BenchReceipt, 'benchmark' | 'command' | 'params' | 'results' | 'goals'>,
): Promise<string> {
  const receipt: BenchReceipt = {
    kind: 'pdb-env-bench-receipt',
    schemaVersion: 1,
    benchmark: r.benchmark,
    tool: { name: 'pdb-env', version: packageVersion() },
    provenance: provenanceOf(start.checkout, await readCheckoutState(packageRoot(), [start.outDir])),
    command: r.command,
    startedAt: start.startedAt,
    finishedAt: new Date().toISOString(),
    host: start.host,
    params: r.params,
    results: r.results,
    ...(r.goals ? { goals: r.goals } : {}),
  };
  const issues = validateAgainst('bench-receipt', receipt);
  if (issues.length) throw new PdbError('E_SCHEMA_INVALID', `the benchmark receipt does not match its schema: ${formatIssues(issues)}`);
  const leaks = findPathIssues(receipt);
  if (leaks.length)
    throw new PdbError(
      'E_RECEIPT_NOT_PATH_FREE',
      `the benchmark receipt is not path-free: ${leaks.map((l) => `${l.pointer} ${l.message}`).join('; ')}`,
    );
  mkdirSync(start.outDir, { recursive: true });
  const file = join(start.outDir, `bench-${r.benchmark}-${newRunId()}.json`);
  await writeSealedReceipt(file, receipt, start.key);
  return file;
}
