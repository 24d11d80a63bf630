// The oracle: at the end of every block, each case of another backend is compared entry by entry,
// under the workload's projection, with the block's full-copy case. Both trees were read from their
// bytes after each case's checkpoint (case/oracle-tree.ts), never from what a checkpoint trusted, and
// the check says how many files each side holds, how many were hashed, and what the comparison
// covers (source, installed tree, build output). A full-copy case that did not
// end ok is no reference: the other cases of its block are recorded as not evaluated (with the
// reason), which classifies them as environment unless they failed on their own. A case the
// environment stopped, or one without a result, is not evaluated either.
import type { Workload } from '../workloads/types.js';
import { notEvaluated, treeCheck } from './case/case-checks.js';
import { classifyCase } from './case/outcome.js';
import type { KeptOracleTree } from './case/oracle-tree.js';
import type { CaseResult } from './case/runner.js';
import { ORACLE_BACKEND } from './plan/plan.js';
import type { CheckRecord } from './receipt/receipt-types.js';

/**
 * The oracle check of one case against the block's full-copy case (null: there was none in the block).
 * `refTree` is the reference's kept result; both kept trees are read in step, a piece at a time.
 */
export function oracleCheck(
  r: CaseResult,
  reference: CaseResult | null,
  refTree: KeptOracleTree | null = reference?.oracleTree() ?? null,
): CheckRecord {
  if (!reference) return notEvaluated('oracle', 'no full-copy case ran in this block');
  const ref = { backend: ORACLE_BACKEND, caseId: reference.record.id };
  const refRecord = reference.record;
  if (refRecord.outcome !== 'ok' || !refTree) {
    const why = refRecord.failure ? `${refRecord.outcome} (${refRecord.failure.code})` : refRecord.outcome;
    return notEvaluated('oracle', `not judged: the block's full-copy case ${refRecord.id} ended ${why}, so there is no oracle`, ref);
  }
  if (r.notJudged !== null) return notEvaluated('oracle', r.notJudged, ref);
  const tree = r.oracleTree();
  if (!tree) return notEvaluated('oracle', 'not judged: the case made no result to compare (it stopped before its checkpoint)', ref);
  return {
    ...treeCheck('oracle', refTree.entries(), tree.entries(), "the projected result (vs the block's full-copy case)", ref),
    files: { case: tree.files, reference: refTree.files },
    filesHashed: { case: tree.filesHashed, reference: refTree.filesHashed },
    scope: [...new Set([...refTree.scope, ...tree.scope])],
  };
}

/**
 * Add the oracle check to every case of the block but the full-copy one (first among its checks),
 * record the digest it compared with, and classify the case again. The reference's result is read
 * as a stream beside each other case's, both from their kept files, so neither is held whole.
 */
export function applyBlockOracle(results: CaseResult[], workload: Workload): void {
  const reference = results.find((r) => r.record.backend === ORACLE_BACKEND) ?? null;
  const refTree = reference?.record.outcome === 'ok' ? reference.oracleTree() : null;
  // Recorded when its tree was kept (runner.ts), which every case with a tree to read back has.
  const refDigest = refTree ? reference!.record.projectedSnapshot : null;
  for (const r of results) {
    if (r === reference) continue;
    const check = oracleCheck(r, reference, refTree);
    r.record.checks.unshift(check);
    if (check.evaluated && refDigest) r.record.oracleSnapshot = refDigest;
    Object.assign(r.record, classifyCase(r.record, r.phaseFailures, workload));
  }
}
