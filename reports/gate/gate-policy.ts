// Policy documents: validated against schemas/policy.schema.json (the one strict ajv setup of
// model/schema-validator.ts) before any receipt is read, so a typo in a policy fails at once with
// the field it is about.
import { PdbError } from '../../model/errors.js';
import { assertSchema, loadSchema } from '../../model/schemas.js';

export interface Policy {
  $schema?: string;
  kind: 'pdb-env-policy';
  policyVersion: 2;
  name: string;
  description: string;
  candidate: string;
  baseline: string;
  workloads: string[];
  hosts: { os?: string[]; storeFs?: string[]; minHosts: number; minDistinctPlatforms: number };
  minBlocksPerWorkloadAndHost: number;
  minFixtures: number;
  excludeSyntheticReceipts?: boolean;
  alpha?: number;
  /** Keyids (sha256 of the public key's DER, hex) whose signatures a receipt needs to be read under this policy; absent: any signer, or none. */
  signers?: string[];
  /** Count only receipts signed by a key of the trusted signers document, not revoked, for a host it may sign for. */
  requireSigned?: boolean;
  /** The trusted signers document, relative to the policy file (default signers.json). */
  trustedSigners?: string;
  /** Judged per testbed and per fixture over measured cases; `pool` names fixtures judged as one. */
  correctness: { maxMismatches: number; maxMismatchUpper95: number; maxFailureUpper95: number; pool?: string[] };
  clone: { requireObserved: boolean; requireTypedFailures: boolean; requireFallbackEvidence: boolean };
  /** Which fixtures each speed rule judges (names, or prefixes ending in *): ratios for sizeable ones, an absolute slack for tiny ones. */
  fixtures: { ratio: string[]; slack: string[] };
  speedup: { phases: string[]; maxRatioUpper95: number; noSlowdownPhases: string[] };
  /** Tiny fixtures: in each phase, the median paired difference may be at most maxSlowerMs above the baseline's. */
  slack: { phases: string[]; maxSlowerMs: number };
}

export type Verdict = 'PROMOTE' | 'HOLD' | 'REJECT';
export type FindingStatus = 'met' | 'hold' | 'reject';

export interface Finding {
  /** Which criterion: hosts, blocks, fixtures, mismatch, failure, clone-observed, typed-failure, fallback-evidence, speedup, slowdown, slack, evidence. */
  criterion: string;
  status: FindingStatus;
  /** Testbed label when the finding is about one testbed. */
  testbed: string | null;
  message: string;
}

export interface GateResult {
  policy: string;
  candidate: string;
  baseline: string;
  verdict: Verdict;
  /** Testbeds whose evidence counted (match the host filter and ran the candidate). */
  countedTestbeds: string[];
  /** Receipts left out of the decision, with the reason. */
  ignoredReceipts: { runId: string; reason: string }[];
  findings: Finding[];
}

/** Whether a fixture name matches a policy's selector: the exact name, or a prefix ending in "*". */
export function matchesFixture(selector: string, name: string): boolean {
  return selector.endsWith('*') ? name.startsWith(selector.slice(0, -1)) : selector === name;
}

export function policySchema(): Record<string, unknown> {
  const schema = loadSchema('policy');
  if (!schema)
    throw new PdbError('E_SCHEMA_INVALID', 'schemas/policy.schema.json is not installed', {
      hint: 'Reinstall pdb-env; the schemas ship in its package.',
    });
  return schema;
}

/** Check a parsed policy document; throws E_POLICY_INVALID naming every offending field. */
export function validatePolicy(doc: unknown, source = 'policy'): Policy {
  return assertSchema<Policy>('policy', doc, {
    code: 'E_POLICY_INVALID',
    what: source,
    hint: 'Fix the listed fields; policies/*.json are valid examples.',
    limit: Infinity,
  });
}
