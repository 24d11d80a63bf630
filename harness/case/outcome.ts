// A case's outcome class from everything it recorded: every phase failure and every failed check
// stays in `failures`; one of them decides the outcome and becomes `failure`. The rules, in order:
//
//   timeout      the case or one of its steps ran out of time;
//   mismatch     the new session already differed from its base before any step ran (the
//                created-tree check): the backend did not reproduce the tree, and a step that
//                then failed for want of the files it dropped is a consequence, not the cause;
//   environment  the first phase failure has a cause outside pdb-env and the filesystem (the
//   unavailable  registry, an agent's credentials or network; or a lane this host cannot run),
//                unless a base, sibling or cleanup check failed too: then the case is failed;
//   failed       any other phase failure (pdb-env or the backend broke);
//   mismatch     no phase failed, and the oracle check was evaluated and failed: the tree differs
//                from the block's full-copy case;
//   failed       any other failed check (the expectation, a workload check, integrity);
//   environment  its oracle could not be evaluated because the block's full-copy case failed: the
//                case cannot be judged, and nothing is blamed on its backend;
//   ok           otherwise.
//
// The trees of a case stopped by the environment are recorded but not judged (an install that could
// not reach the registry leaves its edits unmade, which says nothing about the filesystem); the trees
// of any other failed case are judged, so a backend that breaks a step is still seen by the oracle.
import type { PdbErrorCode } from '../../model/errors.js';
import type { Workload } from '../../workloads/types.js';
import type { CaseOutcome, CaseRecord, CheckRecord, FailureRecord } from '../receipt/receipt-types.js';

/** Failure codes that mean the environment failed, for every workload (workloads may add their own). */
export const ENVIRONMENT_CODES: readonly PdbErrorCode[] = ['E_REGISTRY_UNREACHABLE'];

/** Checks whose failure means the isolation itself broke: they turn an environment or unavailable case into failed. */
export const INTEGRITY_CHECKS: readonly string[] = ['base-unchanged', 'sibling-unchanged', 'cleanup'];

const CHECK_CODES: Record<string, PdbErrorCode> = {
  oracle: 'E_ORACLE_MISMATCH',
  expected: 'E_EXPECTED_MISMATCH',
  'created-tree': 'E_TREE_NOT_REPRODUCED',
  'base-unchanged': 'E_BASE_CHANGED',
  'sibling-unchanged': 'E_SIBLING_CHANGED',
  cleanup: 'E_CLEANUP_INCOMPLETE',
};

/** The failure a failed check stands for: its stable code and the phase it belongs to. */
export function checkFailure(c: CheckRecord): FailureRecord {
  return {
    code: CHECK_CODES[c.name] ?? (c.name.endsWith('oracle') ? 'E_EXPECTED_MISMATCH' : 'E_CHECK_FAILED'),
    phase: c.name === 'cleanup' ? 'discard' : c.name === 'created-tree' ? 'create' : 'verify',
    message: `check ${c.name} failed${c.detail ? `: ${c.detail}` : ''}${c.paths.length ? ` (${c.paths.slice(0, 3).join(', ')}${c.paths.length > 3 ? ', ...' : ''})` : ''}`,
  };
}

/** Whether a failure's cause is outside pdb-env and the filesystem: the workload's word first, then the harness's codes. */
export function failureClass(
  f: FailureRecord,
  metrics: CaseRecord['metrics'],
  workload: Workload | null,
): 'environment' | 'unavailable' | 'failed' {
  const byWorkload = workload?.classifyFailure?.(f, metrics);
  if (byWorkload && byWorkload !== 'failed') return byWorkload;
  return (ENVIRONMENT_CODES as readonly string[]).includes(f.code) ? 'environment' : 'failed';
}

/** Why a case's trees are not judged: the environment stopped it (its first failure); null when they are judged. */
export function notJudgedReason(phaseFailures: FailureRecord[], metrics: CaseRecord['metrics'], workload: Workload | null): string | null {
  const first = phaseFailures[0];
  if (!first) return null;
  const cls = failureClass(first, metrics, workload);
  return cls === 'failed'
    ? null
    : `not judged: the case was stopped by the ${cls === 'environment' ? 'environment' : 'host'} (${first.code})`;
}

export interface Classified {
  outcome: CaseOutcome;
  failure: FailureRecord | null;
  failures: FailureRecord[];
}

/**
 * Classify a case from its phase failures (in the order they happened) and its checks. Pure: the
 * harness calls it when the case ends and again once the block's oracle check is added.
 */
export function classifyCase(record: CaseRecord, phaseFailures: FailureRecord[], workload: Workload | null): Classified {
  const failedChecks = record.checks.filter((c) => c.evaluated && !c.passed);
  const failures = [...phaseFailures, ...failedChecks.map(checkFailure)];
  const decide = (outcome: CaseOutcome, failure: FailureRecord | null): Classified => ({ outcome, failure, failures });
  const oracle = record.checks.find((c) => c.name === 'oracle');
  const timeout = phaseFailures.find((f) => f.code === 'E_TIMEOUT');
  if (timeout) return decide('timeout', timeout);
  const created = failedChecks.find((c) => c.name === 'created-tree');
  if (created) return decide('mismatch', checkFailure(created));
  const integrity = failedChecks.find((c) => INTEGRITY_CHECKS.includes(c.name));
  const first = phaseFailures[0];
  if (first) {
    const cls = failureClass(first, record.metrics, workload);
    if (cls !== 'failed' && integrity) return decide('failed', checkFailure(integrity));
    return decide(cls, first);
  }
  if (oracle?.evaluated && !oracle.passed) return decide('mismatch', checkFailure(oracle));
  if (failedChecks[0]) return decide('failed', checkFailure(integrity ?? failedChecks[0]));
  if (oracle && !oracle.evaluated)
    return decide('environment', {
      code: 'E_ORACLE_UNAVAILABLE',
      phase: 'verify',
      message: oracle.detail ?? 'the oracle was not evaluated',
    });
  return decide('ok', null);
}
