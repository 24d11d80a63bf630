// A hand-built StepContext for workload tests (the harness builds the real one in harness/case/runner.ts).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { SessionService } from '../../sessions/service.js';
import { createProcessRunner } from '../../workloads/process-runner.js';
import type { Entry } from '../../model/snapshot.js';
import type { SessionHandle, StepContext } from '../../workloads/types.js';
import { CLI } from './index.js';

export function stepContext(
  svc: SessionService,
  names: string[],
  scratch: string,
  params: Record<string, unknown>,
  baseEntries: Entry[],
): StepContext {
  const proc = createProcessRunner();
  const sessions: SessionHandle[] = names.map((name) => ({ name, root: svc.sessionRoot(name) }));
  mkdirSync(scratch, { recursive: true });
  return {
    session: sessions[0]!,
    sessions,
    scratchDir: scratch,
    sharedDir: join(scratch, 'shared'),
    params,
    proc,
    pdbEnvRun: (s, command, args, options) =>
      proc.run(process.execPath, [CLI, 'run', s.name, '--store', svc.store.paths.root, '--', command, ...args], {
        ...options,
        cwd: scratch,
      }),
    pdbEnv: (args, options) => proc.run(process.execPath, [CLI, ...args, '--store', svc.store.paths.root], { ...options, cwd: scratch }),
    metric() {},
    log() {},
    baseEntries,
  };
}
