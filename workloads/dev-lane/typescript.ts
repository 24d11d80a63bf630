// The TypeScript steps: `tsc --noEmit`, and tsserver's first semantic diagnostics before and
// after an in-memory edit (the protocol's own events are the milestones).
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { PdbError } from '../../model/errors.js';
import { lastSemanticDiag, startTsserver } from '../tools/tsserver-client.js';
import type { ProcessResult, Step } from '../types.js';
import { LANE_EDITS } from './edits.js';
import { deadlineIn, requireSuccess, toolPath } from './tools.js';

export function tscStep(timeoutMs: number): Step {
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

export function tsserverStep(timeoutMs: number): Step {
  return {
    name: 'tsserver',
    timeoutMs,
    async run(ctx) {
      const root = ctx.session.root;
      const left = deadlineIn(timeoutMs);
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
