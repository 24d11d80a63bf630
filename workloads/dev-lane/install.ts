// The install step: `npm ci`, or `pnpm install --frozen-lockfile` with a pnpm installed once per
// run and a store shared by every case, both outside every session.
import { existsSync, mkdirSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { sha256Digest } from '../../model/canonical-json.js';
import { PdbError } from '../../model/errors.js';
import type { ProcessResult, Step, StepContext } from '../types.js';
import type { LaneKind } from './fixture.js';
import { installedSet } from './installed-set.js';
import { outputTail, readJson, requireSuccess } from './tools.js';

const PNPM_VERSION_FALLBACK = '10.34.8';

/** Which import method pnpm used, from its own `pnpm:progress` "imported" log records (ndjson reporter). */
export function pnpmImportMethods(ndjson: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const line of ndjson.split('\n')) {
    if (!line.includes('"pnpm:progress"') || !line.includes('"imported"')) continue;
    try {
      const rec = JSON.parse(line) as { name?: string; status?: string; method?: string };
      if (rec.name === 'pnpm:progress' && rec.status === 'imported' && rec.method) counts[rec.method] = (counts[rec.method] ?? 0) + 1;
    } catch {
      /* not a log record */
    }
  }
  return counts;
}

/** The pnpm version the fixture pins in its packageManager field. */
export function pnpmVersionOf(root: string): string {
  const pm = (readJson(join(root, 'package.json')) as { packageManager?: string }).packageManager ?? '';
  const m = /^pnpm@(\d+\.\d+\.\d+)/.exec(pm);
  return m ? m[1]! : PNPM_VERSION_FALLBACK;
}

/** Where the run's own pnpm lives: installed once per run into the shared directory, never globally or into the home directory. */
export function pnpmBin(sharedDir: string, version: string): string {
  return join(sharedDir, 'tools', `pnpm-${version}`, 'node_modules', 'pnpm', 'bin', 'pnpm.cjs');
}

async function ensurePnpm(ctx: StepContext, version: string, timeoutMs: number): Promise<{ bin: string; installedMs: number | null }> {
  const prefix = join(ctx.sharedDir, 'tools', `pnpm-${version}`);
  const bin = pnpmBin(ctx.sharedDir, version);
  if (existsSync(bin)) return { bin, installedMs: null };
  mkdirSync(prefix, { recursive: true });
  const cache = join(ctx.sharedDir, 'npm-cache');
  const r = await ctx.proc.run(
    'npm',
    ['install', '--prefix', prefix, '--no-save', '--no-audit', '--no-fund', '--cache', cache, '--prefer-offline', `pnpm@${version}`],
    { cwd: prefix, timeoutMs, env: { npm_config_update_notifier: 'false' } },
  );
  requireInstalled(r, ctx, `installing pnpm ${version}`, timeoutMs);
  if (!existsSync(bin)) throw new PdbError('E_TOOL_MISSING', `pnpm ${version} installed without its bin/pnpm.cjs`);
  return { bin, installedMs: Math.round(r.durationMs) };
}

export function isRegistryFailure(result: ProcessResult): boolean {
  return /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ERR_PNPM_META_FETCH_FAIL|network/i.test(
    `${result.stdout}\n${result.stderr}`,
  );
}

/**
 * An install that failed because the registry could not be reached is E_REGISTRY_UNREACHABLE (the
 * harness classes the case as environment: nothing is blamed on the filesystem); any other
 * failure is the step's.
 */
export function requireInstalled(result: ProcessResult, ctx: StepContext, what: string, timeoutMs: number): void {
  if (result.exitCode !== 0 && !result.timedOut && isRegistryFailure(result)) {
    throw new PdbError('E_REGISTRY_UNREACHABLE', `${what} could not reach the package registry: ${outputTail(result, ctx, 2)}`, {
      hint: 'The lanes install from the npm registry; run them where it is reachable.',
    });
  }
  requireSuccess(result, ctx, what, timeoutMs);
}

/** `npm ci` in `cwd` (the session root by default) with the run's shared npm cache. */
export function npmCi(ctx: StepContext, timeoutMs: number, cwd = ctx.session.root): Promise<ProcessResult> {
  return ctx.proc.run(
    'npm',
    ['ci', '--cache', join(ctx.sharedDir, 'npm-cache'), '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=warn'],
    { cwd, timeoutMs, env: { npm_config_update_notifier: 'false' } },
  );
}

/** pnpm install into the session, recording the version, the import method pnpm reports and whether hard links were observed. */
async function pnpmInstall(ctx: StepContext, timeoutMs: number, milestones: Record<string, number>): Promise<ProcessResult> {
  const root = ctx.session.root;
  const version = pnpmVersionOf(root);
  const t0 = performance.now();
  const { bin, installedMs } = await ensurePnpm(ctx, version, timeoutMs);
  if (installedMs !== null) milestones.pnpmToolInstallMs = installedMs;
  const left = Math.max(1, timeoutMs - Math.round(performance.now() - t0));
  const result = await ctx.proc.run(
    'node',
    [
      bin,
      'install',
      '--frozen-lockfile',
      '--reporter',
      'ndjson',
      '--store-dir',
      join(ctx.sharedDir, 'pnpm-store'),
      '--cache-dir',
      join(ctx.sharedDir, 'pnpm-cache'),
      `--config.state-dir=${join(ctx.sharedDir, 'pnpm-state')}`,
      '--config.update-notifier=false',
      '--config.manage-package-manager-versions=false',
      '--config.package-import-method=auto',
    ],
    { cwd: root, timeoutMs: left, env: { npm_config_update_notifier: 'false' } },
  );
  ctx.metric('pnpmVersion', version);
  const ranked = Object.entries(pnpmImportMethods(result.stdout)).sort((a, b) => b[1] - a[1]);
  ctx.metric('pnpmImportMethod', ranked[0]?.[0] ?? 'none');
  ctx.metric('pnpmImportCounts', ranked.map(([m, n]) => `${m}:${n}`).join(',') || 'none');
  // Cross-check the log with the filesystem: a hardlinked package file shares its inode with the store.
  if (result.exitCode === 0) {
    const probe = join(root, 'node_modules', 'typescript', 'package.json');
    if (existsSync(probe)) ctx.metric('pnpmHardlinkObserved', statSync(realpathSync(probe)).nlink > 1);
  }
  return result;
}

export function installStep(kind: LaneKind, timeoutMs: number): Step {
  return {
    name: 'install',
    timeoutMs,
    async run(ctx) {
      const milestones: Record<string, number> = {};
      const result = kind === 'npm' ? await npmCi(ctx, timeoutMs) : await pnpmInstall(ctx, timeoutMs, milestones);
      requireInstalled(result, ctx, kind === 'npm' ? 'npm ci' : 'pnpm install --frozen-lockfile', timeoutMs);
      const set = installedSet(kind, ctx.session.root);
      if (set.length === 0) throw new PdbError('E_STEP_FAILED', `${kind} install exited 0 but recorded no installed packages`);
      ctx.metric('installedPackages', set.length);
      ctx.metric('installedSetDigest', sha256Digest(set.join('\n')));
      return { process: result, milestones };
    },
  };
}
