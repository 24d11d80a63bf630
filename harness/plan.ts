// Plans: JSON documents validated against schemas/plan.schema.json before any filesystem work.
import { readFileSync } from 'node:fs';
import { BACKEND_NAMES, type AnyBackendName } from '../backends/types.js';
import { canonicalBytes, type Digest } from '../model/canonical-json.js';
import { PdbError, osErrorCode } from '../model/errors.js';
import { assertSchema } from '../model/schema-validator.js';
import type { Workload } from '../workloads/types.js';

export type ParamValue = string | number | boolean;

export interface PlanWorkload {
  name: string;
  params?: Record<string, ParamValue>;
}

export interface Plan {
  $schema?: string;
  kind: 'pdb-env-plan';
  name: string;
  description?: string;
  backends: AnyBackendName[];
  allowTestOnlyBackends?: boolean;
  workloads: PlanWorkload[];
  blocks: number;
  warmupBlocks: number;
  seed: number;
  caseTimeoutMs: number;
  store?: { dir?: string; keep?: boolean };
}

export function planDigest(plan: Plan): Digest {
  return canonicalBytes(plan).digest;
}

/** The oracle's backend: every block runs it, and the block's other cases are compared with it. */
export const ORACLE_BACKEND = 'full-copy';

function requireOracle(doc: unknown): void {
  const backends = (doc as { backends?: unknown } | null)?.backends;
  if (Array.isArray(backends) && !backends.includes(ORACLE_BACKEND)) {
    throw new PdbError('E_PLAN_INVALID', `/backends: the plan has no "${ORACLE_BACKEND}", so its blocks would have no oracle`, {
      hint: `Add "${ORACLE_BACKEND}" to "backends": every other case is compared entry by entry with its block's full-copy case.`,
    });
  }
}

/** Validate a parsed plan: full-copy present, schema, test-only backends, known workloads and their parameter names. */
export function checkPlan(doc: unknown, workloads: Record<string, Workload>): Plan {
  requireOracle(doc);
  const plan = assertSchema<Plan>('plan', doc, {
    code: 'E_PLAN_INVALID',
    what: 'the plan',
    hint: 'pdb-env validate PLAN shows every problem with its JSON pointer.',
  });
  const userNames = new Set<string>(BACKEND_NAMES);
  for (const [i, b] of plan.backends.entries()) {
    if (!userNames.has(b) && !plan.allowTestOnlyBackends) {
      throw new PdbError('E_PLAN_INVALID', `/backends/${i}: "${b}" is a test-only backend`, {
        hint: 'Test-only negative controls need "allowTestOnlyBackends": true and never belong in evidence plans.',
      });
    }
  }
  const seen = new Set<string>();
  for (const [i, w] of plan.workloads.entries()) {
    const workload = workloads[w.name];
    if (!workload)
      throw new PdbError('E_WORKLOAD_UNKNOWN', `/workloads/${i}/name: unknown workload "${w.name}"`, {
        hint: `Known workloads: ${Object.keys(workloads).join(', ')}.`,
      });
    if (seen.has(w.name))
      throw new PdbError('E_PLAN_INVALID', `/workloads/${i}/name: workload "${w.name}" is listed twice`, {
        hint: 'List each workload once; blocks repeat it.',
      });
    seen.add(w.name);
    for (const key of Object.keys(w.params ?? {})) {
      if (!(key in workload.defaultParams)) {
        throw new PdbError('E_PLAN_INVALID', `/workloads/${i}/params/${key}: ${w.name} has no parameter "${key}"`, {
          hint: `Its parameters: ${Object.keys(workload.defaultParams).join(', ') || '(none)'}.`,
        });
      }
      const want = typeof workload.defaultParams[key];
      const got = typeof w.params![key];
      if (want !== got) throw new PdbError('E_PLAN_INVALID', `/workloads/${i}/params/${key}: must be a ${want}, got a ${got}`);
    }
  }
  return plan;
}

export function loadPlan(file: string, workloads: Record<string, Workload>): { plan: Plan; digest: Digest } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT')
      throw new PdbError('E_PLAN_INVALID', `plan file ${file} does not exist`, { hint: 'plans/default.json is the quick default plan.' });
    throw err;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new PdbError('E_PLAN_INVALID', `plan file ${file} is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  const plan = checkPlan(doc, workloads);
  return { plan, digest: planDigest(plan) };
}

/** Effective parameters of a workload in a plan: its defaults overridden by the plan's. */
export function workloadParams(workload: Workload, entry: PlanWorkload): Record<string, unknown> {
  return { ...workload.defaultParams, ...(entry.params ?? {}) };
}
