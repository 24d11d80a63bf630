// The Next.js step: `next build` (app router), with the fixture's fixed build id as its output.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PdbError } from '../../model/errors.js';
import type { Step } from '../types.js';
import { requireSuccess, toolPath } from './tools.js';

export function nextBuildStep(timeoutMs: number): Step {
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
