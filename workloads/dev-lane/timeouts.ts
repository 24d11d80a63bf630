// Each lane step's timeout, as flat plan parameters with defaults.
import { PdbError } from '../../model/errors.js';

const DEFAULT_TIMEOUTS_MS = {
  install: 300_000,
  tsc: 90_000,
  tsserver: 90_000,
  'vite-build': 90_000,
  'vite-dev-hmr': 90_000,
  'next-build': 240_000,
  'jest-watch': 120_000,
  'vitest-watch': 120_000,
} as const;
export type LaneStepName = keyof typeof DEFAULT_TIMEOUTS_MS;

/** Plan parameter name of each step's timeout (flat numbers, as plans allow). */
const TIMEOUT_PARAMS: Record<LaneStepName, string> = {
  install: 'installTimeoutMs',
  tsc: 'tscTimeoutMs',
  tsserver: 'tsserverTimeoutMs',
  'vite-build': 'viteBuildTimeoutMs',
  'vite-dev-hmr': 'viteDevHmrTimeoutMs',
  'next-build': 'nextBuildTimeoutMs',
  'jest-watch': 'jestWatchTimeoutMs',
  'vitest-watch': 'vitestWatchTimeoutMs',
};

/** Every step of a lane, in the order they run. */
export const LANE_STEPS = Object.keys(DEFAULT_TIMEOUTS_MS) as LaneStepName[];

export const LANE_DEFAULT_PARAMS: Record<string, number | string[]> = {
  ...Object.fromEntries(LANE_STEPS.map((step) => [TIMEOUT_PARAMS[step], DEFAULT_TIMEOUTS_MS[step]])),
  // Which steps run (in the lane's order, whatever order they are listed in): all by default.
  steps: [...LANE_STEPS],
};

/** The steps a plan's parameters ask for, in the lane's order; an unknown name is a plan error. */
export function laneSteps(params: Record<string, unknown>): LaneStepName[] {
  const asked = params.steps ?? LANE_STEPS;
  if (!Array.isArray(asked) || asked.some((s) => typeof s !== 'string' || !(LANE_STEPS as string[]).includes(s)))
    throw new PdbError('E_PLAN_INVALID', `lane parameter steps must list some of: ${LANE_STEPS.join(', ')}`);
  return LANE_STEPS.filter((s) => asked.includes(s));
}

/** Every step's timeout from a plan's parameters; an unknown parameter or a bad value is a plan error. */
export function laneTimeouts(params: Record<string, unknown>): Record<LaneStepName, number> {
  const known = new Set([...Object.values(TIMEOUT_PARAMS), 'steps']);
  for (const key of Object.keys(params)) {
    if (!known.has(key))
      throw new PdbError('E_PLAN_INVALID', `the dev lanes have no parameter "${key}"; they take ${[...known].join(', ')}`);
  }
  const out = { ...DEFAULT_TIMEOUTS_MS } as Record<LaneStepName, number>;
  for (const step of Object.keys(TIMEOUT_PARAMS) as LaneStepName[]) {
    const v = params[TIMEOUT_PARAMS[step]];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0)
      throw new PdbError('E_PLAN_INVALID', `lane parameter ${TIMEOUT_PARAMS[step]} must be a positive integer of milliseconds`);
    out[step] = v;
  }
  return out;
}
