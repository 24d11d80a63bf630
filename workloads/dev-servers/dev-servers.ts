// Two dev servers at once: session A (the case session, on the backend under test) runs `vite`,
// session B (its peer, same backend and base) runs `next dev`, both through `pdb-env run` on the
// PORT the session service gives each. Each answers as its own session, with a private TMPDIR
// outside both roots; A's edit reaches only A's HMR channel and B's only B's; `pdb-env stop` ends
// both and nothing survives. The modules live in dev-servers/.
import type { Entry } from '../../model/snapshot.js';
import { PdbError } from '../../model/errors.js';
import { prepareLaneFixture } from '../dev-lane/fixture.js';
import { devServersChecks } from './dev-servers-checks.js';
import { DEV_SERVER_VOLATILE, expectedSources, isServerOutput } from './edits.js';
import { installStep, serversStep } from './dev-servers-steps.js';
import type { ParamIssue, Workload } from '../types.js';

export const DEV_SERVERS_DEFAULTS = {
  /** `npm ci` once per run (into the shared dir) and the copies into both sessions. */
  installTimeoutMs: 300_000,
  /** Both servers: start, answer, both edits, stop. A server that never answers in it is a timeout. */
  serversTimeoutMs: 240_000,
  /** How long a channel is watched for the other session's edit (Vite reports an edit in 20-40 ms, Next.js in about 70 ms). */
  quietMs: 1500,
};

function paramIssues(params: Record<string, unknown>): ParamIssue[] {
  const issues: ParamIssue[] = [];
  for (const [key, value] of Object.entries(params)) {
    if (!Object.hasOwn(DEV_SERVERS_DEFAULTS, key))
      issues.push({
        pointer: `/${key}`,
        message: `dev-servers has no parameter "${key}"; it takes ${Object.keys(DEV_SERVERS_DEFAULTS).join(', ')}`,
      });
    else if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0)
      issues.push({ pointer: `/${key}`, message: `${key} must be a positive integer of milliseconds` });
  }
  return issues;
}

function readParams(params: Record<string, unknown>): typeof DEV_SERVERS_DEFAULTS {
  const issues = paramIssues(params);
  if (issues.length) throw new PdbError('E_PLAN_INVALID', issues.map((i) => i.message).join('; '));
  return { ...DEV_SERVERS_DEFAULTS, ...(params as Partial<typeof DEV_SERVERS_DEFAULTS>) };
}

export const devServersWorkload: Workload = {
  name: 'dev-servers',
  description:
    'vite dev and next dev at the same time in two sessions via pdb-env run, each on its own PORT; each HMR channel sees only its own edit',
  deterministic: false,
  sessions: 2,
  defaultParams: { ...DEV_SERVERS_DEFAULTS },
  paramIssues,
  prepareFixture: (workDir, _params, proc) => prepareLaneFixture('npm', workDir, proc),
  steps(params) {
    const p = readParams(params);
    return [installStep(p.installTimeoutMs), serversStep(p.serversTimeoutMs, p.quietMs)];
  },
  volatilePaths: () => [...DEV_SERVER_VOLATILE],
  project: (entries: Entry[]) => entries.filter((e) => !isServerOutput(e.path)),
  projectionNote:
    "Sources (everything but node_modules, dist, .next, .vite, coverage, *.tsbuildinfo) must equal the oracle byte for byte, with session A's edit. " +
    'The session marker each server serves (public/) and next-env.d.ts, which next dev rewrites, are server output and volatile.',
  expected: async (base) => expectedSources(base, 'a'),
  check: devServersChecks,
};
