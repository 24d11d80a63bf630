// The npm and pnpm developer lanes: a pinned fixture (TypeScript library, Vite app, Next.js app
// router, Jest and Vitest tests) installed privately in each session, then driven through the
// tools developers run. Every milestone comes from the tool's own signal: exit codes, tsserver
// protocol events, HTTP status and HMR messages, and reporter event files.
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sha256Digest } from '../model/canonical-json.js';
import { PdbError } from '../model/errors.js';
import type { Entry } from '../model/snapshot.js';
import { lastSemanticDiag, startTsserver } from './tsserver-client.js';
import type { Fixture, ProcessResult, ProcessRunner, Step, StepContext, Workload, WorkloadCheck } from './types.js';
import { connectHmr, freePort, httpGet, type HmrSocket } from './vite-hmr.js';
import { readEvents, waitForEvents } from './watch-events.js';

export type LaneKind = 'npm' | 'pnpm';

/** Fixture sources live next to the compiled module's source tree: dist/workloads -> workloads/fixtures. */
const FIXTURES_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'workloads', 'fixtures');

/** Tool outputs and installs: never part of the compared source (see projectionNote). */
const GENERATED_ROOTS = ['node_modules', 'dist', '.next', '.vite', 'coverage'];
const GENERATED_NAMES = new Set(['tsconfig.tsbuildinfo']);

/** Deterministic edits, so every backend's result can equal the oracle's byte for byte. */
export const LANE_EDITS = {
  viteMessage: { path: 'src/vite/message.ts', content: "export const message = 'Vite says hello after an edit';\n" },
  jestTest: {
    path: 'tests/jest/math.test.ts',
    append: "\ntest('an edit adds this case', () => {\n  expect(sum([4, 5])).toBe(9);\n});\n",
  },
  vitestTest: {
    path: 'tests/vitest/greeting.test.ts',
    append: "\ntest('an edit adds this case', () => {\n  expect(initials('Ada Lovelace')).toBe('AL');\n});\n",
  },
  /** In tsserver's memory only; never written to disk. */
  tsserverTypeError: { path: 'src/lib/math.ts', insert: "export const broken: number = 'not a number';\n" },
} as const;

/** Expected test counts before and after the watcher edits (the fixture's own tests). */
const JEST_TESTS = { initial: 3, afterEdit: 4 };
const VITEST_TESTS = { initial: 2, afterEdit: 3 };

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
type StepName = keyof typeof DEFAULT_TIMEOUTS_MS;

const PNPM_VERSION_FALLBACK = '10.34.8';

/** Replace absolute paths, the user and the host name in tool output, so it can go into a receipt. */
export function scrubToolOutput(text: string, roots: string[] = []): string {
  let s = text;
  for (const r of roots.filter(Boolean).sort((a, b) => b.length - a.length)) s = s.split(r).join('<dir>');
  s = s.replace(/file:\/\/\S*/gi, '<path>');
  s = s.replace(/(^|[\s"'`(=:,;[{<])\/[^\s"'`),;\]}>]*/g, '$1<path>');
  const names = [hostname(), hostname().split('.')[0] ?? ''];
  try {
    names.push(userInfo().username);
  } catch {
    /* no user entry */
  }
  for (const n of names.filter((x) => x.length >= 2 && x !== 'root')) {
    s = s.replace(new RegExp(`(^|[^A-Za-z0-9_-])${n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![A-Za-z0-9_-])`, 'gi'), '$1<name>');
  }
  return s;
}

function tail(result: ProcessResult, ctx: StepContext, lines = 3): string {
  const text = `${result.stdout}\n${result.stderr}`
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(-lines)
    .join(' | ');
  return scrubToolOutput(text, [ctx.session.root, ctx.scratchDir, ctx.sharedDir]).slice(0, 400);
}

/** Throw a path-free typed error unless the process exited 0. */
function requireSuccess(result: ProcessResult, ctx: StepContext, what: string, timeoutMs: number): void {
  if (result.timedOut) throw new PdbError('E_TIMEOUT', `${what} did not finish within its ${timeoutMs} ms timeout`);
  if (result.exitCode !== 0) {
    throw new PdbError('E_STEP_FAILED', `${what} exited ${result.exitCode ?? result.signal}: ${tail(result, ctx)}`, {
      hint: 'Run the same command in a session (pdb-env run SESSION -- ...) to see its full output.',
    });
  }
}

function toolPath(root: string, rel: string, tool: string): string {
  const p = join(root, 'node_modules', rel);
  if (!existsSync(p))
    throw new PdbError('E_TOOL_MISSING', `${tool} is not installed in the session's node_modules; the install step must run first`);
  return p;
}

function readJson(file: string): any {
  return JSON.parse(readFileSync(file, 'utf8'));
}

function sha256(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

/** The installed package set (name@version per install location), from the package manager's own records. */
export function installedSet(kind: LaneKind, root: string): string[] {
  if (kind === 'npm') {
    const hidden = join(root, 'node_modules', '.package-lock.json');
    if (!existsSync(hidden)) return [];
    const doc = readJson(hidden) as { packages?: Record<string, { version?: string }> };
    return Object.entries(doc.packages ?? {})
      .filter(([k]) => k.startsWith('node_modules/'))
      .map(([k, v]) => `${k.slice('node_modules/'.length)}@${v.version ?? '?'}`)
      .sort();
  }
  // pnpm: one directory per resolved package (name@version plus peer suffix) in the virtual store.
  const store = join(root, 'node_modules', '.pnpm');
  if (!existsSync(store)) return [];
  return readdirSync(store, { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name !== 'node_modules')
    .map((d) => d.name)
    .sort();
}

/** Direct dependencies whose installed version differs from the exact pin in package.json. */
function directDependencyMismatches(root: string): string[] {
  const pkg = readJson(join(root, 'package.json')) as { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
  const wanted = { ...pkg.dependencies, ...pkg.devDependencies };
  const bad: string[] = [];
  for (const [name, version] of Object.entries(wanted)) {
    const manifest = join(root, 'node_modules', name, 'package.json');
    const got = existsSync(manifest) ? (readJson(manifest) as { version?: string }).version : undefined;
    if (got !== version) bad.push(`${name} wanted ${version}, found ${got ?? 'nothing'}`);
  }
  return bad;
}

/** npm: every package the hidden lockfile records has the lockfile's version, and no non-optional lockfile package is missing. */
function npmLockfileMismatches(root: string): string[] {
  const lock = readJson(join(root, 'package-lock.json')) as {
    packages: Record<string, { version?: string; optional?: boolean; dev?: boolean }>;
  };
  const hiddenPath = join(root, 'node_modules', '.package-lock.json');
  if (!existsSync(hiddenPath)) return ['node_modules/.package-lock.json is missing'];
  const hidden = readJson(hiddenPath) as { packages: Record<string, { version?: string }> };
  const bad: string[] = [];
  for (const [k, v] of Object.entries(hidden.packages)) {
    const want = lock.packages[k];
    if (!want) bad.push(`${k} is installed but not in the lockfile`);
    else if (want.version !== v.version) bad.push(`${k} is ${v.version}, lockfile says ${want.version}`);
  }
  for (const [k, v] of Object.entries(lock.packages)) {
    if (k === '' || v.optional) continue;
    if (!hidden.packages[k]) bad.push(`${k} is in the lockfile but not installed`);
  }
  return bad;
}

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

async function ensurePnpm(ctx: StepContext, version: string, timeoutMs: number): Promise<{ bin: string; installedMs: number | null }> {
  // Installed once per run into the run's shared directory, never globally or into the home directory.
  const prefix = join(ctx.sharedDir, 'tools', `pnpm-${version}`);
  const bin = join(prefix, 'node_modules', 'pnpm', 'bin', 'pnpm.cjs');
  if (existsSync(bin)) return { bin, installedMs: null };
  mkdirSync(prefix, { recursive: true });
  const r = await ctx.proc.run(
    'npm',
    [
      'install',
      '--prefix',
      prefix,
      '--no-save',
      '--no-audit',
      '--no-fund',
      '--cache',
      join(ctx.sharedDir, 'npm-cache'),
      '--prefer-offline',
      `pnpm@${version}`,
    ],
    {
      cwd: prefix,
      timeoutMs,
      env: { npm_config_update_notifier: 'false' },
    },
  );
  requireSuccess(r, ctx, `installing pnpm ${version}`, timeoutMs);
  if (!existsSync(bin)) throw new PdbError('E_TOOL_MISSING', `pnpm ${version} installed without its bin/pnpm.cjs`);
  return { bin, installedMs: Math.round(r.durationMs) };
}

function pnpmVersionOf(root: string): string {
  const pm = (readJson(join(root, 'package.json')) as { packageManager?: string }).packageManager ?? '';
  const m = /^pnpm@(\d+\.\d+\.\d+)/.exec(pm);
  return m ? m[1]! : PNPM_VERSION_FALLBACK;
}

function isRegistryFailure(result: ProcessResult): boolean {
  return /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ERR_PNPM_META_FETCH_FAIL|network/i.test(
    `${result.stdout}\n${result.stderr}`,
  );
}

function installStep(kind: LaneKind, timeoutMs: number): Step {
  return {
    name: 'install',
    timeoutMs,
    async run(ctx) {
      const root = ctx.session.root;
      const milestones: Record<string, number> = {};
      let result: ProcessResult;
      if (kind === 'npm') {
        result = await ctx.proc.run(
          'npm',
          ['ci', '--cache', join(ctx.sharedDir, 'npm-cache'), '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=warn'],
          {
            cwd: root,
            timeoutMs,
            env: { npm_config_update_notifier: 'false' },
          },
        );
      } else {
        const version = pnpmVersionOf(root);
        const t0 = performance.now();
        const { bin, installedMs } = await ensurePnpm(ctx, version, timeoutMs);
        if (installedMs !== null) milestones.pnpmToolInstallMs = installedMs;
        const left = Math.max(1, timeoutMs - Math.round(performance.now() - t0));
        result = await ctx.proc.run(
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
        const methods = pnpmImportMethods(result.stdout);
        const ranked = Object.entries(methods).sort((a, b) => b[1] - a[1]);
        ctx.metric('pnpmImportMethod', ranked[0]?.[0] ?? 'none');
        ctx.metric('pnpmImportCounts', ranked.map(([m, n]) => `${m}:${n}`).join(',') || 'none');
        // Cross-check the log with the filesystem: a hardlinked package file shares its inode with the store.
        if (result.exitCode === 0) {
          const probe = join(root, 'node_modules', 'typescript', 'package.json');
          if (existsSync(probe)) ctx.metric('pnpmHardlinkObserved', statSync(realpathSync(probe)).nlink > 1);
        }
      }
      if (result.exitCode !== 0 && !result.timedOut && isRegistryFailure(result)) {
        throw new PdbError('E_REGISTRY_UNREACHABLE', `${kind} install could not reach the package registry: ${tail(result, ctx, 2)}`, {
          hint: 'The lanes install from the npm registry; run them where it is reachable.',
        });
      }
      requireSuccess(result, ctx, kind === 'npm' ? 'npm ci' : 'pnpm install --frozen-lockfile', timeoutMs);
      const set = installedSet(kind, root);
      if (set.length === 0) throw new PdbError('E_STEP_FAILED', `${kind} install exited 0 but recorded no installed packages`);
      ctx.metric('installedPackages', set.length);
      ctx.metric('installedSetDigest', sha256(set.join('\n')));
      return { process: result, milestones };
    },
  };
}

function tscStep(timeoutMs: number): Step {
  return {
    name: 'tsc',
    timeoutMs,
    async run(ctx) {
      const tsc = toolPath(ctx.session.root, 'typescript/lib/tsc.js', 'typescript');
      const r = await ctx.proc.run('node', [tsc, '--noEmit'], { cwd: ctx.session.root, timeoutMs });
      requireSuccess(r, ctx, 'tsc --noEmit', timeoutMs);
      return { process: r };
    },
  };
}

function tsserverStep(timeoutMs: number): Step {
  return {
    name: 'tsserver',
    timeoutMs,
    async run(ctx) {
      const root = ctx.session.root;
      const deadline = performance.now() + timeoutMs;
      const left = () => Math.max(1, Math.round(deadline - performance.now()));
      const tsserverJs = toolPath(root, 'typescript/lib/tsserver.js', 'typescript');
      const file = join(root, LANE_EDITS.tsserverTypeError.path);
      const t0 = performance.now();
      const server = await startTsserver(ctx.proc, { root, scratchDir: ctx.scratchDir, tsserverJs, timeoutMs: left() });
      let milestones: Record<string, number>;
      let stopped: ProcessResult;
      try {
        server.request('open', { file, projectRootPath: root });
        const first = server.request('geterr', { files: [file], delay: 0 });
        const firstMsgs = await server.waitForCompleted(first, left(), 'first tsserver semantic diagnostics');
        const firstDiagnosticsMs = performance.now() - t0;
        const firstDiags = lastSemanticDiag(firstMsgs, file);
        if (firstDiags === null)
          throw new PdbError('E_STEP_FAILED', 'tsserver completed geterr without a semanticDiag event for the opened file');
        if (firstDiags.length !== 0)
          throw new PdbError(
            'E_STEP_FAILED',
            `tsserver reported ${firstDiags.length} diagnostics on the clean fixture file (first code ${firstDiags[0]!.code})`,
          );

        const t1 = performance.now();
        server.request('change', { file, line: 1, offset: 1, endLine: 1, endOffset: 1, insertString: LANE_EDITS.tsserverTypeError.insert });
        const second = server.request('geterr', { files: [file], delay: 0 });
        const secondMsgs = await server.waitForCompleted(second, left(), 'tsserver diagnostics after the edit');
        const editDiagnosticsMs = performance.now() - t1;
        const afterFirst = secondMsgs.slice(firstMsgs.length);
        const editDiags = lastSemanticDiag(afterFirst, file);
        if (!editDiags || !editDiags.some((d) => d.code === 2322)) {
          throw new PdbError(
            'E_STEP_FAILED',
            `tsserver did not report the introduced type error (TS2322) after the edit; saw codes [${(editDiags ?? []).map((d) => d.code).join(', ')}]`,
          );
        }
        milestones = { firstDiagnosticsMs: Math.round(firstDiagnosticsMs), editDiagnosticsMs: Math.round(editDiagnosticsMs) };
      } finally {
        stopped = await server.close();
        rmSync(join(ctx.scratchDir, 'tsserver.stdin'), { force: true });
      }
      return { process: stopped, milestones };
    },
  };
}

function viteBuildStep(timeoutMs: number): Step {
  return {
    name: 'vite-build',
    timeoutMs,
    async run(ctx) {
      const vite = toolPath(ctx.session.root, 'vite/bin/vite.js', 'vite');
      const r = await ctx.proc.run('node', [vite, 'build'], { cwd: ctx.session.root, timeoutMs });
      requireSuccess(r, ctx, 'vite build', timeoutMs);
      if (!existsSync(join(ctx.session.root, 'dist', 'index.html')))
        throw new PdbError('E_STEP_FAILED', 'vite build exited 0 but wrote no dist/index.html');
      return { process: r };
    },
  };
}

function viteDevHmrStep(timeoutMs: number): Step {
  return {
    name: 'vite-dev-hmr',
    timeoutMs,
    async run(ctx) {
      const root = ctx.session.root;
      const deadline = performance.now() + timeoutMs;
      const left = () => Math.max(1, Math.round(deadline - performance.now()));
      const vite = toolPath(root, 'vite/bin/vite.js', 'vite');
      const port = await freePort();
      const t0 = performance.now();
      const server = ctx.proc.start(
        'node',
        [vite, '--port', String(port), '--strictPort', '--host', '127.0.0.1', '--clearScreen', 'false'],
        { cwd: root },
      );
      let ws: HmrSocket | null = null;
      let milestones: Record<string, number>;
      let stopped: ProcessResult;
      try {
        // Vite prints its local URL once it listens; the milestone is the first 200 on GET /.
        await server.waitForOutput((out) => out.includes(`:${port}/`), left(), 'vite dev server listening');
        const page = await httpGet(port, '/', left());
        if (page.status !== 200) throw new PdbError('E_STEP_FAILED', `vite dev server answered GET / with HTTP ${page.status}`);
        const readyMs = performance.now() - t0;
        // Load the modules as a browser would: edits to modules nobody requested are silent.
        for (const mod of ['/src/vite/main.ts', '/src/vite/message.ts']) {
          const r = await httpGet(port, mod, left());
          if (r.status !== 200) throw new PdbError('E_STEP_FAILED', `vite dev server answered GET ${mod} with HTTP ${r.status}`);
        }
        ws = await connectHmr(port, 'vite-hmr', left());
        await ws.waitFor((m) => m?.type === 'connected', left(), 'HMR connected message');
        const t1 = performance.now();
        writeFileSync(join(root, LANE_EDITS.viteMessage.path), LANE_EDITS.viteMessage.content);
        const update = await ws.waitFor((m) => m?.type === 'update' || m?.type === 'full-reload', left(), 'HMR update after the edit');
        const hmrUpdateMs = performance.now() - t1;
        if (update.type !== 'update')
          throw new PdbError('E_STEP_FAILED', `vite sent "${update.type}" instead of an HMR update for the edited module`);
        const paths = ((update.updates ?? []) as Array<{ path?: string; acceptedPath?: string }>).map((u) => u.acceptedPath ?? u.path);
        if (!paths.includes('/src/vite/message.ts'))
          throw new PdbError('E_STEP_FAILED', `the HMR update did not name the edited module (got ${paths.join(', ') || 'nothing'})`);
        milestones = { readyMs: Math.round(readyMs), hmrUpdateMs: Math.round(hmrUpdateMs) };
      } finally {
        ws?.close();
        stopped = await server.stop();
      }
      return { process: stopped, milestones };
    },
  };
}

function nextBuildStep(timeoutMs: number): Step {
  return {
    name: 'next-build',
    timeoutMs,
    async run(ctx) {
      const next = toolPath(ctx.session.root, 'next/dist/bin/next', 'next');
      const r = await ctx.proc.run('node', [next, 'build'], { cwd: ctx.session.root, timeoutMs, env: { NEXT_TELEMETRY_DISABLED: '1' } });
      requireSuccess(r, ctx, 'next build', timeoutMs);
      const buildId = join(ctx.session.root, '.next', 'BUILD_ID');
      if (!existsSync(buildId)) throw new PdbError('E_STEP_FAILED', 'next build exited 0 but wrote no .next/BUILD_ID');
      return { process: r };
    },
  };
}

function appendEdit(root: string, edit: { path: string; append: string }): void {
  const file = join(root, edit.path);
  const text = readFileSync(file, 'utf8');
  if (text.endsWith(edit.append))
    throw new PdbError('E_STEP_FAILED', `${edit.path} already carries the lane's edit; the session did not start from the fixture base`, {
      path: edit.path,
    });
  writeFileSync(file, text + edit.append);
}

interface WatcherSpec {
  name: 'jest-watch' | 'vitest-watch';
  tool: string;
  envVar: string;
  eventsFile: string;
  expected: { initial: number; afterEdit: number };
  edit: { path: string; append: string };
  command(root: string, ctx: StepContext): string[];
}

function watcherStep(spec: WatcherSpec, timeoutMs: number): Step {
  return {
    name: spec.name,
    timeoutMs,
    async run(ctx) {
      const root = ctx.session.root;
      const deadline = performance.now() + timeoutMs;
      const left = () => Math.max(1, Math.round(deadline - performance.now()));
      const events = join(ctx.scratchDir, spec.eventsFile);
      rmSync(events, { force: true });
      const argv = spec.command(root, ctx);
      const t0 = performance.now();
      const watcher = ctx.proc.start('node', argv, { cwd: root, env: { [spec.envVar]: events } });
      const completes = (evs: ReturnType<typeof readEvents>) => evs.filter((e) => e.event === 'runComplete');
      let milestones: Record<string, number>;
      let stopped: ProcessResult;
      try {
        const first = await waitForEvents(events, watcher, (evs) => completes(evs).length >= 1, left(), `${spec.tool} initial run`);
        const initialRunMs = performance.now() - t0;
        const initial = completes(first)[0]!;
        if (!initial.success || initial.total !== spec.expected.initial) {
          throw new PdbError(
            'E_STEP_FAILED',
            `${spec.tool} initial run: ${initial.passed}/${initial.total} passed, expected ${spec.expected.initial}/${spec.expected.initial}`,
          );
        }
        const t1 = performance.now();
        appendEdit(root, spec.edit);
        // The rerun that counts is the first one that sees the edit's extra test.
        const after = await waitForEvents(
          events,
          watcher,
          (evs) =>
            completes(evs)
              .slice(1)
              .some((e) => e.total === spec.expected.afterEdit),
          left(),
          `${spec.tool} rerun after the edit`,
        );
        const rerunMs = performance.now() - t1;
        const rerun = completes(after)
          .slice(1)
          .find((e) => e.total === spec.expected.afterEdit)!;
        if (!rerun.success || rerun.passed !== spec.expected.afterEdit) {
          throw new PdbError(
            'E_STEP_FAILED',
            `${spec.tool} rerun after the edit: ${rerun.passed}/${rerun.total} passed, expected ${spec.expected.afterEdit}/${spec.expected.afterEdit}`,
          );
        }
        milestones = { initialRunMs: Math.round(initialRunMs), rerunMs: Math.round(rerunMs), runs: completes(after).length };
      } finally {
        stopped = await watcher.stop();
      }
      return { process: stopped, milestones };
    },
  };
}

function jestWatchStep(timeoutMs: number): Step {
  return watcherStep(
    {
      name: 'jest-watch',
      tool: 'Jest',
      envVar: 'PDB_JEST_EVENTS',
      eventsFile: 'jest-events.jsonl',
      expected: JEST_TESTS,
      edit: LANE_EDITS.jestTest,
      // --watchAll works without a TTY or git; the cache stays in the case's scratch dir, not /tmp.
      command: (root, ctx) => [
        toolPath(root, 'jest/bin/jest.js', 'jest'),
        '--watchAll',
        '--no-watchman',
        '--cacheDirectory',
        join(ctx.scratchDir, 'jest-cache'),
      ],
    },
    timeoutMs,
  );
}

function vitestWatchStep(timeoutMs: number): Step {
  return watcherStep(
    {
      name: 'vitest-watch',
      tool: 'Vitest',
      envVar: 'PDB_VITEST_EVENTS',
      eventsFile: 'vitest-events.jsonl',
      expected: VITEST_TESTS,
      edit: LANE_EDITS.vitestTest,
      // Without --watch a non-TTY vitest runs once and exits.
      command: (root) => [toolPath(root, 'vitest/vitest.mjs', 'vitest'), '--watch'],
    },
    timeoutMs,
  );
}

/** Plan parameter name of each step's timeout (flat numbers, as plans allow). */
const TIMEOUT_PARAMS: Record<StepName, string> = {
  install: 'installTimeoutMs',
  tsc: 'tscTimeoutMs',
  tsserver: 'tsserverTimeoutMs',
  'vite-build': 'viteBuildTimeoutMs',
  'vite-dev-hmr': 'viteDevHmrTimeoutMs',
  'next-build': 'nextBuildTimeoutMs',
  'jest-watch': 'jestWatchTimeoutMs',
  'vitest-watch': 'vitestWatchTimeoutMs',
};

const LANE_DEFAULT_PARAMS: Record<string, number> = Object.fromEntries(
  (Object.keys(TIMEOUT_PARAMS) as StepName[]).map((step) => [TIMEOUT_PARAMS[step], DEFAULT_TIMEOUTS_MS[step]]),
);

function timeoutsFrom(params: Record<string, unknown>): Record<StepName, number> {
  const known = new Set(Object.values(TIMEOUT_PARAMS));
  for (const key of Object.keys(params)) {
    if (!known.has(key))
      throw new PdbError('E_PLAN_INVALID', `the dev lanes have no parameter "${key}"; they take ${[...known].join(', ')}`);
  }
  const out = { ...DEFAULT_TIMEOUTS_MS } as Record<StepName, number>;
  for (const step of Object.keys(TIMEOUT_PARAMS) as StepName[]) {
    const v = params[TIMEOUT_PARAMS[step]];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0)
      throw new PdbError('E_PLAN_INVALID', `lane parameter ${TIMEOUT_PARAMS[step]} must be a positive integer of milliseconds`);
    out[step] = v;
  }
  return out;
}

/** Copy the fixture's own files (no installs or build output) into a fresh directory under `workDir`, committed as a git repository so git-worktree can use it. */
async function prepareLaneFixture(kind: LaneKind, workDir: string, proc: ProcessRunner): Promise<Fixture> {
  const name = `${kind}-app`;
  const src = join(FIXTURES_DIR, name);
  if (!existsSync(join(src, 'package.json')))
    throw new PdbError('E_SOURCE_MISSING', `the ${name} fixture is missing from workloads/fixtures`);
  const dest = join(workDir, name);
  rmSync(dest, { recursive: true, force: true });
  mkdirSync(dest, { recursive: true });
  cpSync(src, dest, {
    recursive: true,
    filter: (p) => {
      const rel = p.slice(src.length + 1);
      const top = rel.split('/')[0] ?? '';
      return !GENERATED_ROOTS.includes(top) && !GENERATED_NAMES.has(top);
    },
  });
  const git = (args: string[]) =>
    proc.run('git', args, {
      cwd: dest,
      timeoutMs: 30_000,
      env: {
        GIT_AUTHOR_NAME: 'pdb-env',
        GIT_AUTHOR_EMAIL: 'fixture@pdb-env.invalid',
        GIT_COMMITTER_NAME: 'pdb-env',
        GIT_COMMITTER_EMAIL: 'fixture@pdb-env.invalid',
        GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z',
        GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z',
      },
    });
  try {
    const init = await git(['init', '-q', '-b', 'main']);
    if (init.exitCode === 0) {
      await git(['add', '-A']);
      await git(['-c', 'commit.gpgsign=false', 'commit', '-q', '-m', `${name} fixture`]);
    }
  } catch {
    /* git is optional: without it only the git-worktree backend is unavailable */
  }
  const lockName = kind === 'npm' ? 'package-lock.json' : 'pnpm-lock.yaml';
  const lockDigest = sha256(readFileSync(join(dest, lockName), 'utf8')).slice('sha256:'.length, 'sha256:'.length + 8);
  return { name: `${name}@1+${lockDigest}`, sourceDir: dest };
}

function isGenerated(path: string): boolean {
  const top = path.split('/')[0] ?? '';
  const last = path.slice(path.lastIndexOf('/') + 1);
  return GENERATED_ROOTS.includes(top) || path.split('/').includes('node_modules') || GENERATED_NAMES.has(last);
}

async function laneChecks(kind: LaneKind, ctx: StepContext): Promise<WorkloadCheck[]> {
  const root = ctx.session.root;
  const checks: WorkloadCheck[] = [];
  const direct = existsSync(join(root, 'node_modules')) ? directDependencyMismatches(root) : ['node_modules is missing'];
  const lockIssues = kind === 'npm' && direct.length === 0 ? npmLockfileMismatches(root) : [];
  const installIssues = [...direct, ...lockIssues];
  checks.push({
    name: 'installed-set',
    passed: installIssues.length === 0,
    detail:
      installIssues.length === 0
        ? `${installedSet(kind, root).length} packages match the ${kind === 'npm' ? 'package-lock.json' : 'pinned direct dependencies'}`
        : scrubToolOutput(installIssues.slice(0, 3).join('; '), [root]),
  });
  const outputs: Array<[string, string]> = [
    ['dist/index.html', 'vite build'],
    ['.next/BUILD_ID', 'next build'],
  ];
  const missing = outputs.filter(([p]) => !existsSync(join(root, p))).map(([p, tool]) => `${tool} output ${p}`);
  let buildIdOk = true;
  if (existsSync(join(root, '.next', 'BUILD_ID')))
    buildIdOk = readFileSync(join(root, '.next', 'BUILD_ID'), 'utf8').trim() === 'pdb-env-fixture';
  checks.push({
    name: 'tool-outputs',
    passed: missing.length === 0 && buildIdOk,
    detail: missing.length
      ? `missing: ${missing.join(', ')}`
      : buildIdOk
        ? 'dist/index.html and .next/BUILD_ID exist'
        : '.next/BUILD_ID is not the fixture build id',
  });
  // pnpm's store is shared by every case and hard-linked into sessions: it must live outside every
  // session, and nothing a case did may have changed a byte of it (`pnpm store status` re-hashes
  // the packages this session uses against the store's integrity records).
  if (kind === 'pnpm') {
    const store = join(ctx.sharedDir, 'pnpm-store');
    let inside = false;
    try {
      inside = lstatSync(store).isDirectory() && realpathSync(store).startsWith(realpathSync(root) + '/');
    } catch {
      inside = false;
    }
    checks.push({
      name: 'pnpm-store-outside-session',
      passed: existsSync(store) && !inside,
      detail: existsSync(store) ? 'the pnpm store is in the run directory, outside every session' : 'the pnpm store is missing',
    });
    const bin = join(ctx.sharedDir, 'tools', `pnpm-${pnpmVersionOf(root)}`, 'node_modules', 'pnpm', 'bin', 'pnpm.cjs');
    if (existsSync(bin) && existsSync(join(root, 'node_modules', '.modules.yaml'))) {
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
        {
          cwd: root,
          timeoutMs: 120_000,
        },
      );
      const untouched = r.exitCode === 0 && /untouched/i.test(r.stdout + r.stderr);
      checks.push({
        name: 'pnpm-store-untouched',
        passed: untouched,
        detail: untouched
          ? 'pnpm store status: packages in the store are untouched'
          : `pnpm store status exited ${r.exitCode ?? r.signal}: ${tail(r, ctx, 4)}`,
      });
    } else {
      checks.push({
        name: 'pnpm-store-untouched',
        passed: false,
        detail: 'pnpm or node_modules/.modules.yaml is missing, so the store could not be checked',
      });
    }
  }
  return checks;
}

/**
 * The oracle's source tree, computed in advance: the base with the lane's three deterministic
 * file edits applied (the tsserver edit lives only in tsserver's memory).
 */
export function expectedLaneSources(kind: LaneKind, base: Entry[]): Entry[] {
  const byPath = new Map(base.map((e) => [e.path, e]));
  const replace = (path: string, bytes: Buffer) => {
    const e = byPath.get(path);
    if (!e || e.kind !== 'file')
      throw new PdbError('E_SOURCE_CHANGED', `the base has no file ${path}; it is not the ${kind}-app fixture`, { path });
    byPath.set(path, { ...e, digest: sha256Digest(bytes), size: bytes.length });
  };
  replace(LANE_EDITS.viteMessage.path, Buffer.from(LANE_EDITS.viteMessage.content));
  for (const edit of [LANE_EDITS.jestTest, LANE_EDITS.vitestTest]) {
    const original = readFileSync(join(FIXTURES_DIR, `${kind}-app`, edit.path));
    const e = byPath.get(edit.path);
    if (!e || e.kind !== 'file' || e.digest !== sha256Digest(original)) {
      throw new PdbError(
        'E_SOURCE_CHANGED',
        `${edit.path} in the base differs from the committed ${kind}-app fixture, so the expected result cannot be computed`,
        { path: edit.path },
      );
    }
    replace(edit.path, Buffer.concat([original, Buffer.from(edit.append)]));
  }
  return [...byPath.values()].filter((e) => !isGenerated(e.path));
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
    prepareFixture: (workDir, _params, proc) => prepareLaneFixture(kind, workDir, proc),
    steps(params) {
      const t = timeoutsFrom(params);
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
