// The Vite steps: `vite build`, and the dev server's readiness (first HTTP 200) and HMR update for
// an edited module (the HMR socket's own messages are the milestones).
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PdbError } from '../../model/errors.js';
import type { ProcessResult, Step } from '../types.js';
import { connectHmr, freePort, httpGet, type HmrSocket } from '../tools/vite-hmr.js';
import { LANE_EDITS } from './edits.js';
import { deadlineIn, requireSuccess, toolPath } from './tools.js';

export function viteBuildStep(timeoutMs: number): Step {
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

export function viteDevHmrStep(timeoutMs: number): Step {
  return {
    name: 'vite-dev-hmr',
    timeoutMs,
    async run(ctx) {
      const root = ctx.session.root;
      const left = deadlineIn(timeoutMs);
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
