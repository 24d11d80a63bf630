// Bench every negative control beside full-copy on one workload, with the sibling, base and
// created-tree checks switched off, so that whatever the receipt shows wrong the oracle found alone.
import { join } from 'node:path';
import { runBench } from '../../../harness/bench.js';
import type { Plan, PlanWorkload } from '../../../harness/plan/plan.js';
import type { CaseRecord, CheckRecord, Receipt } from '../../../harness/receipt/receipt-types.js';
import type { CheckSwitches } from '../../../harness/case/runner.js';
import { REPO_ROOT } from '../index.js';

/** The controls by name, and the compiled module each one is loaded from. */
export const CONTROLS = ['wrong-bytes', 'truncated', 'exec-dropped', 'symlink-retargeted', 'empty-dir-lost', 'extra-file'] as const;
export type ControlName = (typeof CONTROLS)[number];
export const controlModule = (c: ControlName): string => join(REPO_ROOT, 'dist', 'test', 'helpers', 'controls', `${c}.js`);
export const controlBackendName = (c: ControlName): string => `control-${c}`;

/** The checks that could catch a control besides the oracle: all off, unless a test turns the oracle's hashing off too. */
export const ORACLE_ALONE: CheckSwitches = { siblingCheck: false, baseCheck: false, createdTreeCheck: false };

export async function benchControls(
  dir: string,
  workload: PlanWorkload,
  options: { controls?: readonly ControlName[]; switches?: CheckSwitches; vars?: Record<string, string>; caseTimeoutMs?: number } = {},
): Promise<Receipt> {
  const controls = options.controls ?? CONTROLS;
  const plan: Plan = {
    kind: 'pdb-env-plan',
    name: `controls-${workload.name}`,
    backends: ['full-copy', ...controls.map(controlBackendName)],
    allowTestOnlyBackends: true,
    workloads: [workload],
    blocks: 1,
    warmupBlocks: 0,
    seed: 11,
    caseTimeoutMs: options.caseTimeoutMs ?? 300_000,
  };
  const { receipt } = await runBench({
    plan,
    outDir: join(dir, 'out'),
    storeParent: dir,
    backendModules: controls.map(controlModule),
    checkSwitches: options.switches ?? ORACLE_ALONE,
    vars: options.vars,
  });
  return receipt;
}

export function caseOf(receipt: Receipt, backend: string): CaseRecord {
  const c = receipt.cases.find((x) => x.backend === backend);
  if (!c) throw new Error(`no ${backend} case in the receipt`);
  return c;
}

export function oracleOf(c: CaseRecord): CheckRecord {
  const k = c.checks.find((x) => x.name === 'oracle');
  if (!k) throw new Error(`case ${c.id} (${c.backend}) has no oracle check: ${c.checks.map((x) => x.name).join(', ')}`);
  return k;
}

/** What a failing assertion should show about a case. */
export function describeCase(c: CaseRecord): string {
  return JSON.stringify({
    outcome: c.outcome,
    failures: c.failures,
    checks: c.checks.map((k) => [k.name, k.passed, k.evaluated, k.paths, k.detail]),
  });
}
