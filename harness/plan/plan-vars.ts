// A plan's placeholders: a workload parameter may say `${NAME}` (e.g. a repo workload's
// `"source": "${SOURCE}"`), and the value is given at run time (`--var NAME=DIR`, or `--source DIR`
// for SOURCE). So a plan stays path-free and shareable, and a local path is never recorded: the
// receipt's parameters digest is taken over the placeholder, not its value.
import { PdbError } from '../../model/errors.js';
import type { Plan } from './plan.js';

const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function eachString(value: unknown, fn: (s: string) => void): void {
  if (typeof value === 'string') fn(value);
  else if (Array.isArray(value)) for (const v of value) eachString(v, fn);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) eachString(v, fn);
}

/** The placeholder names a plan's workload parameters use, sorted. */
export function planVarNames(plan: Pick<Plan, 'workloads'>): string[] {
  const names = new Set<string>();
  for (const w of plan.workloads) eachString(w.params ?? {}, (s) => [...s.matchAll(PLACEHOLDER)].forEach((m) => names.add(m[1]!)));
  return [...names].sort();
}

/** Throws E_USAGE naming every placeholder of the plan without a value. */
export function requirePlanVars(plan: Pick<Plan, 'workloads'>, vars: Record<string, string>): void {
  const missing = planVarNames(plan).filter((n) => !Object.hasOwn(vars, n));
  if (missing.length === 0) return;
  throw new PdbError('E_USAGE', `the plan needs a value for ${missing.map((n) => `\${${n}}`).join(', ')}`, {
    hint: `Give ${missing.map((n) => `--var ${n}=DIR`).join(' ')}${missing.includes('SOURCE') ? ' (or --source DIR for SOURCE)' : ''}.`,
  });
}

/** A copy of `value` with every `${NAME}` in its strings replaced by its value (unknown names are left as they are). */
export function resolvePlanVars<T>(value: T, vars: Record<string, string>): T {
  if (typeof value === 'string')
    return value.replace(PLACEHOLDER, (whole, name: string) => (Object.hasOwn(vars, name) ? vars[name]! : whole)) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => resolvePlanVars(v, vars)) as T;
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolvePlanVars(v, vars)])) as T;
  return value;
}

/** `NAME=VALUE` arguments (repeated --var) as a map; a bad name or a missing "=" is a usage error. */
export function parseVarArgs(args: readonly string[]): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const arg of args) {
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg : arg.slice(0, eq);
    if (eq < 0 || !VAR_NAME.test(name))
      throw new PdbError('E_USAGE', `--var takes NAME=VALUE with NAME a letter or "_" then letters, digits or "_", got "${arg}"`, {
        hint: 'pdb-env bench --plan plans/repo-example.json --var SOURCE=~/src/app',
      });
    vars[name] = arg.slice(eq + 1);
  }
  return vars;
}
