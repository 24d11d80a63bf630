// The npm and pnpm developer lanes: a pinned fixture (TypeScript library, Vite app, Next.js app
// router, Jest and Vitest tests) installed privately in each session, then driven through the
// tools developers run. Every milestone comes from the tool's own signal: exit codes, tsserver
// protocol events, HTTP status and HMR messages, and reporter event files. The steps live in
// dev-lane/, one module per tool. The oracle compares what the lane produced: the sources, the
// installed tree (every file under node_modules, by its bytes) and the build output (dist, .next),
// less the nondeterminism LANE_VOLATILE names.
import type { Entry } from '../../model/snapshot.js';
import { laneChecks } from './lane-checks.js';
import { expectedLaneSources } from './edits.js';
import { prepareLaneFixture, type LaneKind } from './fixture.js';
import { LANE_DEFAULT_PARAMS, LANE_STEPS, laneSteps, laneTimeouts } from './timeouts.js';
import type { Step, Workload } from '../types.js';
import { installStep } from './install.js';
import { nextBuildStep } from './next.js';
import { tscStep, tsserverStep } from './typescript.js';
import { viteBuildStep, viteDevHmrStep } from './vite.js';
import { jestWatchStep, vitestWatchStep } from './watchers.js';

/**
 * What differs between two correct runs of the lane, each with its reason (measured: two sessions
 * of each lane from one fixture, every step run, every file compared by its bytes).
 */
export const LANE_VOLATILE: ReadonlyArray<{ pattern: string; why: string }> = [
  {
    pattern: 'node_modules/.vite/**',
    why: "Vite's dependency pre-bundling metadata and Vitest's results cache: hashes and timings of the run",
  },
  { pattern: 'node_modules/.modules.yaml', why: "pnpm's install state: the time it pruned (prunedAt)" },
  { pattern: 'node_modules/.pnpm-workspace-state-v1.json', why: "pnpm's workspace state: the time it was validated" },
  { pattern: '.next/cache/**', why: "Next.js's build caches (Turbopack's)" },
  { pattern: '.next/trace', why: 'timings of the Next.js build' },
  { pattern: '.next/trace-build', why: 'timings of the Next.js build' },
  { pattern: '.next/prerender-manifest.json', why: 'a random preview-mode id and signing keys, made anew by every next build' },
  { pattern: '.next/server/preview-props.json', why: 'the same random preview-mode id and keys' },
  { pattern: '.next/server/server-reference-manifest.json', why: 'a random server-actions encryption key, made anew by every next build' },
  { pattern: '.next/server/server-reference-manifest.js', why: 'the same key, as a script' },
  { pattern: '**/*.tsbuildinfo', why: "tsc's incremental state" },
];

/** Files that hold the session's own absolute path: compared with it replaced by a placeholder. */
export const LANE_ROOT_PATH_FILES = [
  // pnpm writes its .bin entries as shell scripts whose NODE_PATH names the project's directory.
  '**/node_modules/.bin/*',
  // Next.js records the project's directory as outputFileTracingRoot and repoRoot.
  '.next/required-server-files.json',
  '.next/required-server-files.js',
];

function stepsOf(kind: LaneKind, params: Record<string, unknown>): Step[] {
  const t = laneTimeouts(params);
  const all: Record<(typeof LANE_STEPS)[number], Step> = {
    install: installStep(kind, t.install),
    tsc: tscStep(t.tsc),
    tsserver: tsserverStep(t.tsserver),
    'vite-build': viteBuildStep(t['vite-build']),
    'vite-dev-hmr': viteDevHmrStep(t['vite-dev-hmr']),
    'next-build': nextBuildStep(t['next-build']),
    'jest-watch': jestWatchStep(t['jest-watch']),
    'vitest-watch': vitestWatchStep(t['vitest-watch']),
  };
  return laneSteps(params).map((name) => all[name]);
}

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
    paramIssues(params) {
      try {
        laneTimeouts(params);
        laneSteps(params);
        return [];
      } catch (err) {
        return [{ pointer: '', message: (err as Error).message }];
      }
    },
    prepareFixture: (workDir, _params, proc) => prepareLaneFixture(kind, workDir, proc),
    steps: (params) => stepsOf(kind, params),
    project: (entries: Entry[]) => entries,
    volatilePaths: () => LANE_VOLATILE.map((v) => v.pattern),
    oracleScope: () => ({
      scope: ['source', 'installed', 'build'],
      include: ['node_modules', 'dist', '.next'],
      rootPathFiles: LANE_ROOT_PATH_FILES,
    }),
    projectionNote:
      'Compared byte for byte with the oracle: the sources (with the deterministic edits the Vite, Jest and Vitest steps make), the installed tree (every file and link under node_modules) and the build output (dist, .next). ' +
      'Left out, as they differ between two correct runs: ' +
      LANE_VOLATILE.map((v) => `${v.pattern} (${v.why})`).join('; ') +
      '. Compared with the session directory replaced by a placeholder: pnpm .bin shims and .next/required-server-files.*, which embed it. ' +
      'The lane checks also hold the installed set to the lockfile and require dist/index.html and .next/BUILD_ID.',
    expected: async (base, params) => expectedLaneSources(kind, base, laneSteps(params)),
    check: (ctx) => laneChecks(kind, ctx),
  };
}

export const npmLane = createDevLane('npm');
export const pnpmLane = createDevLane('pnpm');
