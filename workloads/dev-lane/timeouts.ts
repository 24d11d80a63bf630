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

export const LANE_DEFAULT_PARAMS: Record<string, number> = Object.fromEntries(
  (Object.keys(TIMEOUT_PARAMS) as LaneStepName[]).map((step) => [TIMEOUT_PARAMS[step], DEFAULT_TIMEOUTS_MS[step]]),
);

/** Every step's timeout from a plan's parameters; an unknown parameter or a bad value is a plan error. */
export function laneTimeouts(params: Record<string, unknown>): Record<LaneStepName, number> {
  const known = new Set(Object.values(TIMEOUT_PARAMS));
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
