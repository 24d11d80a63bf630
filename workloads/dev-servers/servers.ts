// A dev server in a session, started the way a user starts one: `pdb-env run NAME -- ...`, so its
// PORT, TMPDIR and process tracking are the session service's own. A tiny sh wrapper writes the
// session marker from PDB_ENV_SESSION and execs the server on "$PORT" (the workload never picks a
// port). What the workload knows of it comes from the user's commands (`list`, `ps`, `stop`) and
// from /proc (Linux: the environment of the listening process).
import { setTimeout as sleep } from 'node:timers/promises';
import { PdbError } from '../../model/errors.js';
import { processStartTime, readProcEnviron } from '../../model/os/proc.js';
import { scrubText } from '../../model/scrub.js';
import type { ProcessResult, SessionHandle, StepContext } from '../types.js';
import { httpGet } from '../tools/vite-hmr.js';
import { toolPath } from '../dev-lane/tools.js';
import { SESSION_MARKER } from './edits.js';

export type ServerTool = 'vite' | 'next';

export interface DevServer {
  session: SessionHandle;
  tool: ServerTool;
  /** The session's port block as `pdb-env list` shows it; the first is PORT. */
  block: number[];
  tmpDir: string | null;
  /** The `pdb-env run` that serves; settles when the server has ended. */
  run: Promise<ProcessResult>;
  ended: ProcessResult | null;
}

// "$@" is node, the tool and its arguments; exec keeps the pid that run tracks.
const WRAPPER = `mkdir -p public && printf '%s\\n' "$PDB_ENV_SESSION" > ${SESSION_MARKER} && exec "$@" --port "$PORT"`;

/** The pdb-env CLI's JSON answer, or a typed failure naming the command. */
export async function pdbEnvJson(ctx: StepContext, args: string[], timeoutMs = 60_000): Promise<any> {
  const r = await ctx.pdbEnv([...args, '--json'], { timeoutMs });
  if (r.exitCode !== 0)
    throw new PdbError(
      'E_STEP_FAILED',
      `pdb-env ${args[0]} exited ${r.exitCode ?? r.signal}: ${scrubText(r.stderr.trim().split('\n').pop() ?? '')}`,
    );
  return JSON.parse(r.stdout);
}

/** Each session's port block and temp dir, from `pdb-env list --json`. */
export async function listedRuntimes(ctx: StepContext): Promise<Map<string, { ports: number[]; tmpDir: string | null }>> {
  const list = (await pdbEnvJson(ctx, ['list'])) as { sessions: Array<{ name: string; ports: number[] | null; tmpDir: string | null }> };
  return new Map(list.sessions.map((s) => [s.name, { ports: s.ports ?? [], tmpDir: s.tmpDir }]));
}

/** Start `vite` (session A) or `next dev` (session B) through `pdb-env run`; it runs until stopped. */
export function startDevServer(
  ctx: StepContext,
  session: SessionHandle,
  tool: ServerTool,
  runtime: { ports: number[]; tmpDir: string | null },
  timeoutMs: number,
): DevServer {
  const argv =
    tool === 'vite'
      ? [toolPath(session.root, 'vite/bin/vite.js', 'vite'), '--strictPort', '--host', '127.0.0.1', '--clearScreen', 'false']
      : [toolPath(session.root, 'next/dist/bin/next', 'next'), 'dev', '--hostname', '127.0.0.1'];
  const server: DevServer = {
    session,
    tool,
    block: runtime.ports,
    tmpDir: runtime.tmpDir,
    run: Promise.resolve(null as never),
    ended: null,
  };
  server.run = ctx
    .pdbEnvRun(session, 'sh', ['-c', WRAPPER, 'dev-server', process.execPath, ...argv], {
      timeoutMs,
      env: { NEXT_TELEMETRY_DISABLED: '1' },
    })
    .then((r) => (server.ended = r));
  return server;
}

export function serverPort(server: DevServer): number {
  const port = server.block[0];
  if (port === undefined) throw new PdbError('E_STEP_FAILED', `session ${server.session.name} has no port block`);
  return port;
}

/**
 * Wait until the server answers on its PORT with its session marker. Its output is only seen when
 * its run ends, so readiness is polled over HTTP (a refused connection means not yet listening).
 */
export async function waitAnswering(server: DevServer, timeoutMs: number): Promise<string> {
  const port = serverPort(server);
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (server.ended) {
      const r = server.ended;
      const tail = scrubText(`${r.stdout}\n${r.stderr}`.trim().split('\n').slice(-3).join(' | '), { roots: [server.session.root] });
      throw new PdbError(
        'E_STEP_FAILED',
        `${server.tool} in session ${server.session.name} exited ${r.exitCode ?? r.signal} before it answered: ${tail}`,
      );
    }
    const got = await httpGet(port, `/${SESSION_MARKER.slice('public/'.length)}`, 5000).catch(() => null);
    if (got?.status === 200) return got.body.trim();
    await sleep(250);
  }
  throw new PdbError(
    'E_TIMEOUT',
    `${server.tool} in session ${server.session.name} did not answer on its PORT ${port} within ${timeoutMs} ms`,
  );
}

export interface SeenProcess {
  pid: number;
  /** Start time (field 22 of /proc/PID/stat), so a reused pid is not taken for ours. */
  start: string | null;
  ports: number[];
}

/** The session's live processes from `pdb-env ps NAME --json`. */
export async function sessionProcesses(ctx: StepContext, name: string): Promise<SeenProcess[]> {
  const ps = (await pdbEnvJson(ctx, ['ps', name])) as { processes: Array<{ pid: number; ports: number[] }> };
  return ps.processes.map((p) => ({ pid: p.pid, start: processStartTime(p.pid), ports: p.ports }));
}

/** The runtime variables of a live process (Linux /proc); null when they cannot be read. */
export function processEnv(pid: number): Record<string, string> | null {
  const all = readProcEnviron(pid);
  if (!all) return null;
  return Object.fromEntries(Object.entries(all).filter(([k]) => /^(PORT|PDB_ENV_\w+|TMPDIR|TMP|TEMP)$/.test(k)));
}

/** Is a process seen earlier gone: no such pid (ESRCH), or the pid now belongs to a later process? */
export function isGone(p: SeenProcess): boolean {
  try {
    process.kill(p.pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
  const now = processStartTime(p.pid); // null: gone, or no /proc
  return p.start !== null && now !== null && now !== p.start;
}

/** Stop a server through the session service (`pdb-env stop`) and wait for its run to end; the failure, if any. */
export async function stopDevServer(ctx: StepContext, server: DevServer, timeoutMs = 60_000): Promise<string | null> {
  const r = await ctx.pdbEnv(['stop', server.session.name, '--grace', '5000'], { timeoutMs });
  const ended = await Promise.race([
    server.run.then(
      () => true,
      () => true,
    ),
    sleep(timeoutMs, false, { ref: false }),
  ]);
  if (r.exitCode !== 0) return `pdb-env stop ${server.session.name} exited ${r.exitCode ?? r.signal}`;
  return ended ? null : `the run of ${server.tool} in ${server.session.name} did not end after pdb-env stop`;
}
