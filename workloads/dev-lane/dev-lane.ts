// The npm and pnpm developer lanes: a pinned fixture (TypeScript library, Vite app, Next.js app
// router, Jest and Vitest tests) installed privately in each session, then driven through the
// tools developers run. Every milestone comes from the tool's own signal: exit codes, tsserver
// protocol events, HTTP status and HMR messages, and reporter event files. The steps live in
// dev-lane/, one module per tool.
import type { Entry } from '../../model/snapshot.js';
import { laneChecks } from './checks.js';
import { expectedLaneSources } from './edits.js';
import { isGenerated, prepareLaneFixture, type LaneKind } from './fixture.js';
import { installStep } from './install.js';
import { nextBuildStep } from './next.js';
import { LANE_DEFAULT_PARAMS, laneTimeouts } from './timeouts.js';
import { tscStep, tsserverStep } from './typescript.js';
import { viteBuildStep, viteDevHmrStep } from './vite.js';
import { jestWatchStep, vitestWatchStep } from './watchers.js';
import type { Workload } from '../types.js';

export function createDevLane(kind: LaneKind): Workload {
  return {
    name: `${kind}-lane`,
    description:
      kind === 'npm'
        ? 'npm ci, tsc --noEmit, tsserver diagnostics, vite build, vite dev HMR, next build, Jest and Vitest watch reruns on a pinned fixture'
        : 'pnpm install --frozen-lockfile (shared store outside the session), tsc, tsserver, vite build and HMR, next build, Jest and Vitest watch reruns on a pinned fixture',
    deterministic: false,
    sessions: 1,
    defaultParams: LANE_DEFAULT_PARAMS,
    prepareFixture: (workDir, _params, proc) => prepareLaneFixture(kind, workDir, proc),
    steps(params) {
      const t = laneTimeouts(params);
      return [
        installStep(kind, t.install),
        tscStep(t.tsc),
        tsserverStep(t.tsserver),
        viteBuildStep(t['vite-build']),
        viteDevHmrStep(t['vite-dev-hmr']),
        nextBuildStep(t['next-build']),
        jestWatchStep(t['jest-watch']),
        vitestWatchStep(t['vitest-watch']),
      ];
    },
    project(entries: Entry[]) {
      return entries.filter((e) => !isGenerated(e.path));
    },
    projectionNote:
      'Source files (everything but node_modules, dist, .next, .vite, coverage and *.tsbuildinfo) must equal the oracle byte for byte, including the deterministic edits the Vite, Jest and Vitest steps make. ' +
      'Installs and build output are not byte-stable across runs (timestamps, absolute paths, hashes in caches), so they are compared by what they must contain: the installed package set matches the lockfile (npm: node_modules/.package-lock.json against package-lock.json; pnpm: every pinned direct dependency at its exact version), its name@version digest is recorded as a metric, and dist/index.html and .next/BUILD_ID exist.',
    expected: async (base) => expectedLaneSources(kind, base),
    check: (ctx) => laneChecks(kind, ctx),
  };
}

export const npmLane = createDevLane('npm');
export const pnpmLane = createDevLane('pnpm');
