// The workload's steps: dependencies into both sessions, then the two servers at once. The servers
// step records what it observed in the case's scratch dir; the checks (dev-servers-checks.ts) judge it, so a
// wrong port, a shared temp dir, a leaked edit or a survivor is a failed check, not a crash.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sha256Digest } from '../../model/canonical-json.js';
import { PdbError } from '../../model/errors.js';
import type { Step, StepContext } from '../types.js';
import { npmCi, requireInstalled } from '../dev-lane/install.js';
import { deadlineIn, requireSuccess } from '../dev-lane/tools.js';
import { observeHmr, type HmrObservation } from './hmr.js';
import {
  listedRuntimes,
  processEnv,
  sessionProcesses,
  startDevServer,
  stopDevServer,
  waitAnswering,
  type DevServer,
  type SeenProcess,
  type ServerTool,
} from './servers.js';

/** What one server showed while it ran. */
export interface ServerRecord {
  session: string;
  root: string;
  tool: ServerTool;
  block: number[];
  /** The session's temp dir as `pdb-env list` shows it. */
  listedTmpDir: string | null;
  /** The session marker the server served (its run's PDB_ENV_SESSION). */
  marker: string | null;
  /** The runtime variables of the process listening on PORT (null: none listened, or unreadable). */
  env: Record<string, string> | null;
  /** Ports the session's processes listened on (from `pdb-env ps`). */
  listening: number[];
  /** Every process `pdb-env ps` showed for the session while it ran. */
  seen: SeenProcess[];
}

export interface DevServersRecord {
  servers: ServerRecord[];
  hmr: HmrObservation | null;
  /** Why stopping through `pdb-env stop` fell short, per server. */
  stopProblems: string[];
}

export const RECORD_FILE = 'dev-servers.json';

export function readRecord(scratchDir: string): DevServersRecord | null {
  const file = join(scratchDir, RECORD_FILE);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as DevServersRecord) : null;
}

/**
 * `npm ci` once per run into the shared dir, then a byte copy of node_modules into each session
 * (`cp -a`: no inode is shared between sessions). Installs are the npm lane's subject; here they
 * only have to exist, and two `npm ci` per case would cost about a minute.
 */
export function installStep(timeoutMs: number): Step {
  return {
    name: 'install',
    timeoutMs,
    async run(ctx) {
      const left = deadlineIn(timeoutMs);
      const lock = readFileSync(join(ctx.session.root, 'package-lock.json'));
      const deps = join(ctx.sharedDir, 'dev-servers', `npm-${sha256Digest(lock).slice(7, 19)}`);
      if (!existsSync(join(deps, '.installed'))) {
        rmSync(deps, { recursive: true, force: true });
        mkdirSync(deps, { recursive: true });
        writeFileSync(join(deps, 'package-lock.json'), lock);
        writeFileSync(join(deps, 'package.json'), readFileSync(join(ctx.session.root, 'package.json')));
        requireInstalled(await npmCi(ctx, left(), deps), ctx, 'npm ci', timeoutMs);
        writeFileSync(join(deps, '.installed'), '');
      }
      for (const s of ctx.sessions) {
        if (existsSync(join(s.root, 'node_modules')))
          throw new PdbError('E_STEP_FAILED', `session ${s.name} already has node_modules; it did not start from the fixture base`);
        const r = await ctx.proc.run('cp', ['-a', join(deps, 'node_modules'), join(s.root, 'node_modules')], {
          cwd: s.root,
          timeoutMs: left(),
        });
        requireSuccess(r, ctx, `copying node_modules into ${s.name}`, timeoutMs);
      }
    },
  };
}

/** Identify a running server: its marker, its processes and ports (`pdb-env ps`), and the environment of the one on PORT. */
async function identify(ctx: StepContext, server: DevServer, rec: ServerRecord, left: () => number): Promise<void> {
  rec.marker = await waitAnswering(server, left());
  await remember(ctx, rec);
  const onPort = rec.seen.find((p) => p.ports.includes(server.block[0]!));
  rec.env = onPort ? processEnv(onPort.pid) : null;
}

/** Add what `pdb-env ps` shows now to what was seen (a server may start workers late). */
async function remember(ctx: StepContext, rec: ServerRecord): Promise<void> {
  for (const p of await sessionProcesses(ctx, rec.session)) {
    if (!rec.seen.some((s) => s.pid === p.pid && s.start === p.start)) rec.seen.push(p);
    for (const port of p.ports) if (!rec.listening.includes(port)) rec.listening.push(port);
  }
}

export function serversStep(timeoutMs: number, quietMs: number): Step {
  return {
    name: 'dev-servers',
    timeoutMs,
    async run(ctx) {
      if (ctx.sessions.length < 2) throw new PdbError('E_INTERNAL', 'dev-servers needs two sessions');
      const left = deadlineIn(timeoutMs);
      const runtimes = await listedRuntimes(ctx);
      const plan: Array<[number, ServerTool]> = [
        [0, 'vite'],
        [1, 'next'],
      ];
      const record: DevServersRecord = { servers: [], hmr: null, stopProblems: [] };
      const servers: DevServer[] = [];
      const t0 = performance.now();
      try {
        // Both start before either edit; each on the PORT its run is given.
        for (const [i, tool] of plan) {
          const s = ctx.sessions[i]!;
          const rt = runtimes.get(s.name) ?? { ports: [], tmpDir: null };
          servers.push(startDevServer(ctx, s, tool, rt, timeoutMs));
          record.servers.push({
            session: s.name,
            root: s.root,
            tool,
            block: rt.ports,
            listedTmpDir: rt.tmpDir,
            marker: null,
            env: null,
            listening: [],
            seen: [],
          });
        }
        await Promise.all(servers.map((srv, i) => identify(ctx, srv, record.servers[i]!, left)));
        const readyMs = performance.now() - t0;
        record.hmr = await observeHmr(servers[0]!, servers[1]!, quietMs, left);
        for (const rec of record.servers) await remember(ctx, rec);
        return { milestones: { bothAnsweringMs: Math.round(readyMs), ...record.hmr.milestones } };
      } finally {
        for (const srv of servers) {
          const problem = await stopDevServer(ctx, srv);
          if (problem) record.stopProblems.push(problem);
        }
        writeFileSync(join(ctx.scratchDir, RECORD_FILE), JSON.stringify(record, null, 2));
      }
    },
  };
}
