// The repo workload's steps. A plain step runs its command line to the end (sh -c, in the session
// root, in its own process group) and must exit with its expected code. A step with a milestone is a
// dev server or a watcher: it is measured from its start to the milestone (a regular expression on
// its output, or an HTTP status on the case's port), then, with an edit, from writing the file to
// the watcher's reaction (new output, or a changed HTTP response); then it is stopped, its whole
// process group with it. A timeout is E_TIMEOUT, an outcome of its own, never a success.
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { PdbError } from '../../model/errors.js';
import { scrubText } from '../../model/scrub.js';
import { deadlineIn } from '../dev-lane/tools.js';
import { withProcess } from '../step-failure.js';
import type { LongRunningProcess, ProcessResult, Step, StepContext, StepOutcome } from '../types.js';
import { freePort, pollHttp, type HttpResponse } from './http.js';
import { DEFAULT_STEP_TIMEOUT_MS, type RepoStep, type StepEdit } from './params.js';

/** What the steps of one case share: the port its session was given (probed once, when the first step starts). */
export interface CaseState {
  port(): Promise<number>;
}

export function createCaseState(probe: () => Promise<number> = freePort): CaseState {
  let port: Promise<number> | null = null;
  return { port: () => (port ??= probe()) };
}

// Install failures that mean the registry could not be reached (npm and pnpm wording), not a broken
// step: the case is then environment, and nothing is blamed on the filesystem.
const REGISTRY_FAILURE =
  /\b(?:ENOTFOUND|EAI_AGAIN)\b|ERR_PNPM_META_FETCH_FAIL|ERR_PNPM_FETCH_\d+|npm (?:ERR!|error) (?:code )?(?:ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH)|npm (?:ERR!|error) network/;

/** The last lines of some output, path-free (the case's directories first, then any other path). */
function tail(text: string, ctx: StepContext, lines = 3): string {
  const last = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(-lines)
    .join(' | ');
  return scrubText(last, { roots: [ctx.session.root, ctx.scratchDir, ctx.sharedDir] }).slice(0, 400);
}

function stepEnv(ctx: StepContext, port: number): Record<string, string> {
  // PORT: the case session's own port; PDB_ENV_SHARED_DIR: a directory every case of the run shares,
  // outside every session (for a package store or cache a step wants apart from the user's).
  return { PORT: String(port), PDB_ENV_SHARED_DIR: ctx.sharedDir };
}

/** A step that runs to its end: its exit code must be the expected one. */
async function runToEnd(s: RepoStep, ctx: StepContext, state: CaseState, timeoutMs: number): Promise<StepOutcome> {
  const r = await ctx.proc.run('sh', ['-c', s.run], { cwd: ctx.session.root, env: stepEnv(ctx, await state.port()), timeoutMs });
  const expected = s.expectExit ?? 0;
  const output = `${r.stdout}\n${r.stderr}`;
  if (r.timedOut)
    throw withProcess(
      new PdbError(
        'E_TIMEOUT',
        `step ${s.name} did not finish within its ${s.timeoutMs ?? DEFAULT_STEP_TIMEOUT_MS} ms timeout: ${tail(output, ctx)}`,
      ),
      r,
    );
  if (r.exitCode !== expected) {
    const got = r.exitCode ?? r.signal;
    if (REGISTRY_FAILURE.test(output))
      throw withProcess(
        new PdbError('E_REGISTRY_UNREACHABLE', `step ${s.name} could not reach the package registry: ${tail(output, ctx, 2)}`, {
          hint: 'Run it where the registry is reachable; the case is recorded as environment.',
        }),
        r,
      );
    throw withProcess(
      new PdbError('E_STEP_FAILED', `step ${s.name} exited ${got}, expected ${expected}: ${tail(output, ctx)}`, {
        hint: 'Run the same command in a session (pdb-env run SESSION -- sh -c "...") to see its full output.',
      }),
      r,
    );
  }
  return { process: r };
}

/** Wait for the step's milestone; returns the HTTP response it saw, if it was an HTTP one. */
async function reachMilestone(s: RepoStep, lr: LongRunningProcess, ctx: StepContext, port: number, left: () => number) {
  const m = s.milestone!;
  if ('output' in m) {
    const re = new RegExp(m.output);
    await lr.waitForOutput((o) => re.test(o), left(), `output matching /${m.output}/ (step ${s.name})`);
    return;
  }
  const want = m.http.status ?? 200;
  const what = `HTTP ${want} from ${m.http.path} (step ${s.name})`;
  await pollHttp(
    { port, path: m.http.path, timeoutMs: left(), what, exited: () => lr.hasExited(), signal: ctx.signal },
    (r) => r?.status === want,
  );
}

async function writeEdit(root: string, e: StepEdit): Promise<void> {
  const file = join(root, e.path);
  await mkdir(dirname(file), { recursive: true });
  if (e.content !== undefined) await writeFile(file, e.content);
  else await appendFile(file, e.append ?? '');
}

/** Make the edit and wait for the process to show it saw it. */
async function observeEdit(s: RepoStep, lr: LongRunningProcess, ctx: StepContext, port: number, left: () => number): Promise<void> {
  const e = s.edit!;
  const then = e.then;
  if ('output' in then) {
    const re = new RegExp(then.output);
    const from = lr.output().length; // only what the process prints after the edit counts
    await writeEdit(ctx.session.root, e);
    await lr.waitForOutput((o) => re.test(o.slice(from)), left(), `output matching /${then.output}/ after the edit (step ${s.name})`);
    return;
  }
  const poll = { port, path: then.httpChange, exited: () => lr.hasExited(), signal: ctx.signal };
  const same = (a: HttpResponse | null, b: HttpResponse | null) => a?.status === b?.status && a?.body === b?.body;
  const before = await pollHttp({ ...poll, timeoutMs: left(), what: `a response from ${then.httpChange}` }, (r) => r !== null);
  await writeEdit(ctx.session.root, e);
  await pollHttp(
    { ...poll, timeoutMs: left(), what: `a changed response from ${then.httpChange} (step ${s.name})` },
    (r) => r !== null && !same(r, before),
  );
}

/** A dev server or watcher: start, milestone, optional edit and its observation, stop. */
async function runLongRunning(s: RepoStep, ctx: StepContext, state: CaseState, timeoutMs: number): Promise<StepOutcome> {
  const port = await state.port();
  const left = deadlineIn(timeoutMs);
  const t0 = performance.now();
  const lr = ctx.proc.start('sh', ['-c', s.run], { cwd: ctx.session.root, env: stepEnv(ctx, port) });
  const milestones: Record<string, number> = {};
  let result: ProcessResult | undefined;
  try {
    await reachMilestone(s, lr, ctx, port, left);
    milestones.readyMs = Math.round(performance.now() - t0);
    if (s.edit) {
      const t1 = performance.now();
      await observeEdit(s, lr, ctx, port, left);
      milestones.editObservedMs = Math.round(performance.now() - t1);
    }
  } catch (err) {
    result = await lr.stop();
    // The process's last words say why it never got there.
    if (err instanceof PdbError)
      throw withProcess(
        new PdbError(err.code, `${err.message}; its last output: ${tail(lr.output(), ctx) || '(none)'}`, { hint: err.hint, cause: err }),
        result,
      );
    throw err;
  }
  result = await lr.stop();
  return { process: result, milestones };
}

/**
 * One step of the plan as the harness runs it, under its own timeout. The step's own limit ends a
 * little before the harness's (5%, at most 250 ms), so a step that runs out of time is stopped by
 * itself and says what its process printed last.
 */
export function repoStep(s: RepoStep, state: CaseState): Step {
  const timeoutMs = s.timeoutMs ?? DEFAULT_STEP_TIMEOUT_MS;
  const own = Math.max(1, Math.round(timeoutMs - Math.min(250, timeoutMs / 20)));
  return {
    name: s.name,
    timeoutMs,
    run: (ctx) => (s.milestone ? runLongRunning(s, ctx, state, own) : runToEnd(s, ctx, state, own)),
  };
}
