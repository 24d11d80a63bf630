// The test-watcher steps: Jest and Vitest in watch mode, an initial run and the rerun after an
// edit that adds one test, both read from the fixture's reporter event files.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PdbError } from '../../model/errors.js';
import type { ProcessResult, Step, StepContext } from '../types.js';
import { waitForEvents, type WatchEvent } from '../tools/watch-events.js';
import { LANE_EDITS } from './edits.js';
import { deadlineIn, toolPath } from './tools.js';

/** Expected test counts before and after the watcher edits (the fixture's own tests). */
const JEST_TESTS = { initial: 3, afterEdit: 4 };
const VITEST_TESTS = { initial: 2, afterEdit: 3 };

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

const completes = (evs: WatchEvent[]) => evs.filter((e) => e.event === 'runComplete');

/** The initial run must see all of the fixture's tests; the rerun must pass all of them, the edit's included. */
function requireRun(spec: WatcherSpec, run: WatchEvent, what: string, want: number, ok: boolean | undefined): void {
  if (!ok) throw new PdbError('E_STEP_FAILED', `${spec.tool} ${what}: ${run.passed}/${run.total} passed, expected ${want}/${want}`);
}

function watcherStep(spec: WatcherSpec, timeoutMs: number): Step {
  return {
    name: spec.name,
    timeoutMs,
    async run(ctx) {
      const root = ctx.session.root;
      const left = deadlineIn(timeoutMs);
      const events = join(ctx.scratchDir, spec.eventsFile);
      rmSync(events, { force: true });
      const argv = spec.command(root, ctx);
      const t0 = performance.now();
      const watcher = ctx.proc.start('node', argv, { cwd: root, env: { [spec.envVar]: events } });
      let milestones: Record<string, number>;
      let stopped: ProcessResult;
      try {
        const first = await waitForEvents(events, watcher, (evs) => completes(evs).length >= 1, left(), `${spec.tool} initial run`);
        const initialRunMs = performance.now() - t0;
        const initial = completes(first)[0]!;
        requireRun(spec, initial, 'initial run', spec.expected.initial, initial.success && initial.total === spec.expected.initial);
        const t1 = performance.now();
        appendEdit(root, spec.edit);
        // The rerun that counts is the first one that sees the edit's extra test.
        const isRerun = (e: WatchEvent) => e.total === spec.expected.afterEdit;
        const after = await waitForEvents(
          events,
          watcher,
          (evs) => completes(evs).slice(1).some(isRerun),
          left(),
          `${spec.tool} rerun after the edit`,
        );
        const rerunMs = performance.now() - t1;
        const rerun = completes(after).slice(1).find(isRerun)!;
        requireRun(spec, rerun, 'rerun after the edit', spec.expected.afterEdit, rerun.success && rerun.passed === spec.expected.afterEdit);
        milestones = { initialRunMs: Math.round(initialRunMs), rerunMs: Math.round(rerunMs), runs: completes(after).length };
      } finally {
        stopped = await watcher.stop();
      }
      return { process: stopped, milestones };
    },
  };
}

export function jestWatchStep(timeoutMs: number): Step {
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

export function vitestWatchStep(timeoutMs: number): Step {
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
