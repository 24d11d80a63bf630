// Plans: JSON documents validated against schemas/plan.schema.json before any filesystem work.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadBackendModule, moduleBackend } from '../../backends/module.js';
import { BACKEND_NAMES, TEST_BACKEND_NAMES, type AnyBackendName } from '../../backends/table.js';
import { canonicalBytes, type Digest } from '../../model/canonical-json.js';
import { PdbError, osErrorCode } from '../../model/errors.js';
import { assertSchema } from '../../model/schemas.js';
import type { Workload } from '../../workloads/types.js';

/** A workload parameter: any JSON value (each workload checks its own, see `planIssues`). */
export type ParamValue = string | number | boolean | null | ParamValue[] | { [key: string]: ParamValue };

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
  /** Module files of the user's own backends, relative to the plan file. */
  backendModules?: string[];
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

/** A problem a schema-valid plan has with the registries: its pointer, what is wrong, and its code. */
export interface PlanIssue {
  code: 'E_PLAN_INVALID' | 'E_WORKLOAD_UNKNOWN';
  pointer: string;
  message: string;
  hint?: string;
}

/** Every parameter problem of one workload entry: unknown names, then the workload's own checks (or the defaults' types). */
function paramIssues(workload: Workload, entry: PlanWorkload, at: string): PlanIssue[] {
  const issues: PlanIssue[] = [];
  const given = entry.params ?? {};
  for (const key of Object.keys(given)) {
    if (!(key in workload.defaultParams))
      issues.push({
        code: 'E_PLAN_INVALID',
        pointer: `${at}/params/${key}`,
        message: `${entry.name} has no parameter "${key}"`,
        hint: `Its parameters: ${Object.keys(workload.defaultParams).join(', ') || '(none)'}.`,
      });
  }
  if (issues.length) return issues;
  if (workload.paramIssues) {
    const own = workload.paramIssues(workloadParams(workload, entry));
    return own.map((i) => ({ code: 'E_PLAN_INVALID', pointer: `${at}/params${i.pointer}`, message: i.message }));
  }
  for (const [key, value] of Object.entries(given)) {
    const want = typeof workload.defaultParams[key];
    const got = Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;
    if (want !== got) issues.push({ code: 'E_PLAN_INVALID', pointer: `${at}/params/${key}`, message: `must be a ${want}, got a ${got}` });
  }
  return issues;
}

/**
 * Every problem a schema-valid plan has with the backend and workload registries: test-only backends,
 * unknown or repeated workloads, and each workload's parameters. Bench (through checkPlan) and
 * validate both use it, so a plan validate calls ok is a plan bench runs.
 */
export function planIssues(plan: Plan, workloads: Record<string, Workload>): PlanIssue[] {
  const issues: PlanIssue[] = [];
  const userNames = new Set<string>(BACKEND_NAMES);
  for (const [i, b] of plan.backends.entries()) {
    const fromModule = moduleBackend(b)?.backend;
    if (!userNames.has(b) && !(TEST_BACKEND_NAMES as readonly string[]).includes(b) && !fromModule)
      issues.push({
        code: 'E_PLAN_INVALID',
        pointer: `/backends/${i}`,
        message: `unknown backend "${b}": not built in, and no backend module declares it`,
        hint: `Built in: ${BACKEND_NAMES.join(', ')}; your own backend comes from "backendModules" or --backend-module FILE.`,
      });
    else if ((fromModule ? fromModule.testOnly : !userNames.has(b)) && !plan.allowTestOnlyBackends)
      issues.push({
        code: 'E_PLAN_INVALID',
        pointer: `/backends/${i}`,
        message: `"${b}" is a test-only backend`,
        hint: 'Test-only negative controls need "allowTestOnlyBackends": true and never belong in evidence plans.',
      });
  }
  const seen = new Set<string>();
  for (const [i, w] of plan.workloads.entries()) {
    const workload = Object.hasOwn(workloads, w.name) ? workloads[w.name] : undefined;
    if (!workload) {
      issues.push({
        code: 'E_WORKLOAD_UNKNOWN',
        pointer: `/workloads/${i}/name`,
        message: `unknown workload "${w.name}"`,
        hint: `Known workloads: ${Object.keys(workloads).join(', ')}.`,
      });
      continue;
    }
    if (seen.has(w.name))
      issues.push({
        code: 'E_PLAN_INVALID',
        pointer: `/workloads/${i}/name`,
        message: `workload "${w.name}" is listed twice`,
        hint: 'List each workload once; blocks repeat it.',
      });
    seen.add(w.name);
    issues.push(...paramIssues(workload, w, `/workloads/${i}`));
  }
  return issues;
}

/** Validate a parsed plan: full-copy present, schema, then the registries (planIssues); the first problem is thrown. */
export function checkPlan(doc: unknown, workloads: Record<string, Workload>): Plan {
  requireOracle(doc);
  const plan = assertSchema<Plan>('plan', doc, {
    code: 'E_PLAN_INVALID',
    what: 'the plan',
    hint: 'pdb-env validate PLAN shows every problem with its JSON pointer.',
  });
  const [first, ...more] = planIssues(plan, workloads);
  if (first) {
    const also = more.length ? ` (and ${more.length} more problem(s): pdb-env validate PLAN lists them)` : '';
    throw new PdbError(first.code, `${first.pointer}: ${first.message}${also}`, { hint: first.hint });
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

/**
 * Load the backend modules a plan document names (relative to its file's directory), before its
 * backend names are checked; their real paths. A module that cannot be loaded or misses the
 * contract is E_BACKEND_MODULE_INVALID naming it.
 */
export async function loadPlanModules(doc: unknown, planDir: string): Promise<string[]> {
  const names = (doc as { backendModules?: unknown } | null)?.backendModules;
  if (!Array.isArray(names)) return [];
  const out: string[] = [];
  for (const f of names) if (typeof f === 'string') out.push((await loadBackendModule(resolve(planDir, f))).file);
  return out;
}

/** The parsed plan file, or null when it cannot be read as JSON (loadPlan then says why). */
export function readPlanDocument(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}
