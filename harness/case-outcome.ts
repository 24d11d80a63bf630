// A case's outcome class from everything it recorded: every phase failure and every failed check
// stays in `failures`; one of them decides the outcome and becomes `failure`. The rules, in order:
//
//   mismatch     the oracle check was evaluated and failed (the tree differs from full-copy's);
//   timeout      the case or one of its steps ran out of time;
//   environment  a phase failed for a reason outside pdb-env and the filesystem (the registry, a
//   unavailable  tool, an agent's credentials or network; or a lane this host cannot run), unless
//                a base, sibling or cleanup check failed too: then the case is failed;
//   failed       any other phase failure or failed check (pdb-env, the backend, integrity);
//   environment  otherwise, when its oracle could not be evaluated because the block's full-copy
//                case failed: the case cannot be judged, and nothing is blamed on its backend;
//   ok           otherwise.
import type { PdbErrorCode } from '../model/errors.js';
import type { Workload } from '../workloads/types.js';
import type { CaseOutcome, CaseRecord, CheckRecord, FailureRecord } from './receipt-types.js';

/** Failure codes that mean the environment failed, for every workload (workloads may add their own). */
export const ENVIRONMENT_CODES: readonly PdbErrorCode[] = ['E_REGISTRY_UNREACHABLE'];

/** Checks whose failure means the isolation itself broke: they turn an environment or unavailable case into failed. */
export const INTEGRITY_CHECKS: readonly string[] = ['base-unchanged', 'sibling-unchanged', 'cleanup'];

const CHECK_CODES: Record<string, PdbErrorCode> = {
  oracle: 'E_ORACLE_MISMATCH',
  expected: 'E_EXPECTED_MISMATCH',
  'base-unchanged': 'E_BASE_CHANGED',
  'sibling-unchanged': 'E_SIBLING_CHANGED',
  cleanup: 'E_CLEANUP_INCOMPLETE',
};

/** The failure a failed check stands for: its stable code and the phase it belongs to. */
export function checkFailure(c: CheckRecord): FailureRecord {
  return {
    code: CHECK_CODES[c.name] ?? (c.name.endsWith('oracle') ? 'E_EXPECTED_MISMATCH' : 'E_CHECK_FAILED'),
    phase: c.name === 'cleanup' ? 'discard' : 'verify',
    message: `check ${c.name} failed${c.detail ? `: ${c.detail}` : ''}${c.paths.length ? ` (${c.paths.slice(0, 3).join(', ')}${c.paths.length > 3 ? ', ...' : ''})` : ''}`,
  };
}

function failureClass(f: FailureRecord, record: CaseRecord, workload: Workload | null): 'environment' | 'unavailable' | 'failed' {
  const byWorkload = workload?.classifyFailure?.(f, record.metrics);
  if (byWorkload && byWorkload !== 'failed') return byWorkload;
  return (ENVIRONMENT_CODES as readonly string[]).includes(f.code) ? 'environment' : 'failed';
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
  if (oracle?.evaluated && !oracle.passed) return decide('mismatch', checkFailure(oracle));
  const timeout = phaseFailures.find((f) => f.code === 'E_TIMEOUT');
  if (timeout) return decide('timeout', timeout);
  const integrity = failedChecks.find((c) => INTEGRITY_CHECKS.includes(c.name));
  const first = phaseFailures[0];
  if (first) {
    const cls = failureClass(first, record, workload);
    if (cls !== 'failed' && integrity) return decide('failed', checkFailure(integrity));
    return decide(cls, first);
  }
  if (failedChecks[0]) return decide('failed', checkFailure(integrity ?? failedChecks[0]));
  if (oracle && !oracle.evaluated)
    return decide('environment', {
      code: 'E_ORACLE_UNAVAILABLE',
      phase: 'verify',
      message: oracle.detail ?? 'the oracle was not evaluated',
    });
  return decide('ok', null);
}
