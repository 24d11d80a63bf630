// The lane's checks after its steps: installs and build output are not byte-stable, so they are
// checked by what they must contain, and pnpm's shared store by where it lives and that no case
// changed it.
import { existsSync, lstatSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { scrubText } from '../../model/scrub.js';
import type { StepContext, WorkloadCheck } from '../types.js';
import type { LaneKind } from './fixture.js';
import { pnpmBin, pnpmVersionOf } from './install.js';
import { directDependencyMismatches, installedSet, npmLockfileMismatches } from './installed-set.js';
import { laneSteps } from './timeouts.js';
import { outputTail } from './tools.js';

function installedSetCheck(kind: LaneKind, root: string): WorkloadCheck {
  const direct = existsSync(join(root, 'node_modules')) ? directDependencyMismatches(root) : ['node_modules is missing'];
  const lockIssues = kind === 'npm' && direct.length === 0 ? npmLockfileMismatches(root) : [];
  const installIssues = [...direct, ...lockIssues];
  return {
    name: 'installed-set',
    passed: installIssues.length === 0,
    detail:
      installIssues.length === 0
        ? `${installedSet(kind, root).length} packages match the ${kind === 'npm' ? 'package-lock.json' : 'pinned direct dependencies'}`
        : scrubText(installIssues.slice(0, 3).join('; '), { roots: [root] }),
  };
}

function toolOutputsCheck(root: string, steps: readonly string[]): WorkloadCheck | null {
  const outputs: Array<[string, string]> = [
    ...(steps.includes('vite-build') ? [['dist/index.html', 'vite build'] as [string, string]] : []),
    ...(steps.includes('next-build') ? [['.next/BUILD_ID', 'next build'] as [string, string]] : []),
  ];
  if (outputs.length === 0) return null;
  const missing = outputs.filter(([p]) => !existsSync(join(root, p))).map(([p, tool]) => `${tool} output ${p}`);
  let buildIdOk = true;
  if (existsSync(join(root, '.next', 'BUILD_ID')))
    buildIdOk = readFileSync(join(root, '.next', 'BUILD_ID'), 'utf8').trim() === 'pdb-env-fixture';
  return {
    name: 'tool-outputs',
    passed: missing.length === 0 && buildIdOk,
    detail: missing.length
      ? `missing: ${missing.join(', ')}`
      : buildIdOk
        ? `${outputs.map(([p]) => p).join(' and ')} exist`
        : '.next/BUILD_ID is not the fixture build id',
  };
}

/**
 * pnpm's store is shared by every case and hard-linked into sessions: it must live outside every
 * session, and nothing a case did may have changed a byte of it (`pnpm store status` re-hashes
 * the packages this session uses against the store's integrity records).
 */
async function pnpmStoreChecks(ctx: StepContext): Promise<WorkloadCheck[]> {
  const root = ctx.session.root;
  const store = join(ctx.sharedDir, 'pnpm-store');
  let inside = false;
  try {
    inside = lstatSync(store).isDirectory() && realpathSync(store).startsWith(realpathSync(root) + '/');
  } catch {
    inside = false; // no store (or no root): the existence check below reports it
  }
  const outside: WorkloadCheck = {
    name: 'pnpm-store-outside-session',
    passed: existsSync(store) && !inside,
    detail: existsSync(store) ? 'the pnpm store is in the run directory, outside every session' : 'the pnpm store is missing',
  };
  const bin = pnpmBin(ctx.sharedDir, pnpmVersionOf(root));
  if (!existsSync(bin) || !existsSync(join(root, 'node_modules', '.modules.yaml'))) {
    return [
      outside,
      {
        name: 'pnpm-store-untouched',
        passed: false,
        detail: 'pnpm or node_modules/.modules.yaml is missing, so the store could not be checked',
      },
    ];
  }
  const r = await ctx.proc.run(
    'node',
    [
      bin,
      'store',
      'status',
      '--store-dir',
      store,
      `--config.state-dir=${join(ctx.sharedDir, 'pnpm-state')}`,
      '--config.update-notifier=false',
    ],
    { cwd: root, timeoutMs: 120_000 },
  );
  const untouched = r.exitCode === 0 && /untouched/i.test(r.stdout + r.stderr);
  return [
    outside,
    {
      name: 'pnpm-store-untouched',
      passed: untouched,
      detail: untouched
        ? 'pnpm store status: packages in the store are untouched'
        : `pnpm store status exited ${r.exitCode ?? r.signal}: ${outputTail(r, ctx, 4)}`,
    },
  ];
}

/** The checks of what the steps that ran made: the installed set after an install, the outputs of the builds. */
export async function laneChecks(kind: LaneKind, ctx: StepContext): Promise<WorkloadCheck[]> {
  const root = ctx.session.root;
  const steps = laneSteps(ctx.params);
  const checks: WorkloadCheck[] = [];
  if (steps.includes('install')) checks.push(installedSetCheck(kind, root));
  const outputs = toolOutputsCheck(root, steps);
  if (outputs) checks.push(outputs);
  if (kind === 'pnpm' && steps.includes('install')) checks.push(...(await pnpmStoreChecks(ctx)));
  return checks;
}
