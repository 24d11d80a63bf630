// The one-line bench: `pdb-env bench --source DIR --step 'test=npm test' ...` builds a plan of one
// repo workload over the backends this host can run (full-copy, the oracle, always among them),
// checked by the same function as any other plan. The source is the plan's ${SOURCE}, so the plan
// (saved with --plan-out) stays path-free and runs again on another checkout.
import { randomInt } from 'node:crypto';
import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { assertBackendName, getBackend, probeBackend } from '../../backends/registry.js';
import { BACKEND_NAMES } from '../../backends/table.js';
import { PdbError } from '../../model/errors.js';
import { SessionService } from '../../sessions/service.js';
import { sourceLabel } from '../../workloads/repo/repo.js';
import { DEFAULT_VOLATILE } from '../../workloads/repo/params.js';
import { STEP_NAME } from '../../workloads/repo/params.js';
import type { Workload } from '../../workloads/types.js';
import { ORACLE_BACKEND, checkPlan, type Plan } from './plan.js';
import { removeRunStore } from '../run-store.js';

/** The placeholder the one-line bench gives the source: `--source DIR` is `--var SOURCE=DIR`. */
export const SOURCE_VAR = 'SOURCE';

/** The fewest paired blocks in which a 2x difference can be told (the quick plan's count too). */
export const DEFAULT_REPO_BLOCKS = 6;

export interface RepoPlanOptions {
  /** The source directory (only its name is used here, as the default label). */
  sourceDir: string;
  label?: string;
  /** `name=command` pairs, in order. */
  steps: string[];
  backends: string[];
  blocks?: number;
  warmupBlocks?: number;
  seed?: number;
  stepTimeoutMs?: number;
  /** The whole case's limit (default: every step's timeout plus 30 minutes for create, checkpoint and checks). */
  caseTimeoutMs?: number;
  /** Volatile globs added to the defaults. */
  volatile?: string[];
}

/** `name=command` arguments as steps; a bad name or a missing command is a usage error. */
export function parseStepArgs(args: readonly string[], timeoutMs?: number): Array<{ name: string; run: string; timeoutMs?: number }> {
  if (args.length === 0)
    throw new PdbError('E_USAGE', 'the one-line bench needs at least one --step NAME=COMMAND', {
      hint: "pdb-env bench --source . --step 'test=npm test'",
    });
  return args.map((arg) => {
    const eq = arg.indexOf('=');
    const name = eq < 0 ? '' : arg.slice(0, eq);
    const run = eq < 0 ? '' : arg.slice(eq + 1);
    if (!STEP_NAME.test(name) || run.trim() === '')
      throw new PdbError('E_USAGE', `--step takes NAME=COMMAND (NAME: letters, digits, ".", "_", "-"), got "${arg}"`, {
        hint: "pdb-env bench --source . --step 'build=npm run build' --step 'test=npm test'",
      });
    return timeoutMs === undefined ? { name, run } : { name, run, timeoutMs };
  });
}

/** The plan of a one-line bench, checked as bench checks every plan. */
export function buildRepoPlan(o: RepoPlanOptions, workloads: Record<string, Workload>): Plan {
  const label = sourceLabel(resolve(o.sourceDir), o.label ?? '');
  const steps = parseStepArgs(o.steps, o.stepTimeoutMs);
  const stepsMs = steps.reduce((sum, s) => sum + (s.timeoutMs ?? 600_000), 0);
  const backends = [ORACLE_BACKEND, ...o.backends.filter((b) => b !== ORACLE_BACKEND)];
  const doc = {
    kind: 'pdb-env-plan',
    name: `repo-${label}`.slice(0, 64),
    description: `the repo workload on ${label}: ${steps.map((s) => s.name).join(', ')}`,
    backends,
    workloads: [
      {
        name: 'repo',
        params: { source: `\${${SOURCE_VAR}}`, label, steps, volatile: [...DEFAULT_VOLATILE, ...(o.volatile ?? [])] },
      },
    ],
    blocks: o.blocks ?? DEFAULT_REPO_BLOCKS,
    warmupBlocks: o.warmupBlocks ?? 0,
    seed: o.seed ?? randomInt(0, 0xffffffff),
    caseTimeoutMs: o.caseTimeoutMs ?? stepsMs + 30 * 60_000,
  };
  return checkPlan(doc, workloads);
}

/** `--backends a,b,c` as a list: known user backends only (full-copy is added when missing). */
export function parseBackendList(text: string): string[] {
  const names = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 0) throw new PdbError('E_USAGE', '--backends needs at least one backend name');
  for (const n of names) assertBackendName(n); // E_BACKEND_UNKNOWN with the known names
  return [...new Set(names)];
}

/** Where a run's store goes when --store is not given: PDB_ENV_BENCH_STORE, else the system temp dir. */
export function defaultStoreParent(storeParent?: string): string {
  return storeParent ?? (process.env.PDB_ENV_BENCH_STORE || undefined) ?? tmpdir();
}

/**
 * Every backend this host can run for `sourceDir` with a store under `parent`: each probed on a
 * temporary store there (removed after), as the run will probe them again and record the rest.
 */
export async function runnableBackends(
  parent: string,
  sourceDir: string,
): Promise<{ available: string[]; unavailable: Array<{ name: string; reason: string | null }> }> {
  const dir = realpathSync(mkdtempSync(join(resolve(parent), 'pdb-probe-')));
  const available: string[] = [];
  const unavailable: Array<{ name: string; reason: string | null }> = [];
  try {
    const svc = await SessionService.open(dir, { create: true });
    for (const name of BACKEND_NAMES) {
      const r = await probeBackend(await getBackend(name), svc.backendContext(resolve(sourceDir)));
      if (r.available) available.push(name);
      else unavailable.push({ name, reason: r.reason });
    }
  } finally {
    await removeRunStore(dir);
  }
  return { available, unavailable };
}
