// The AgentFS STAND-IN (test/fixtures/agentfs-stand-in/agentfs) and what the tests check after it:
// it imitates the documented commands, misbehaves on request, and is never AgentFS. A stand-in tool
// is built here, in the tests, with kind 'stand-in' and a mount check that accepts its bind mount;
// production code only builds tools from a pinned binary, with the AgentFS FUSE mount check.
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_AGENTFS_TIMEOUTS, type AgentfsTimeouts, type AgentfsTool } from '../../backends/agentfs/adapter.js';
import { processesMentioning } from '../../backends/agentfs/exec.js';
import { mountAt, mountPointsUnder } from '../../model/os/mounts.js';
import { REPO_ROOT } from './index.js';

export const STAND_IN = join(REPO_ROOT, 'test', 'fixtures', 'agentfs-stand-in', 'agentfs');

export type StandInMode =
  | 'ok'
  | 'init-fail'
  | 'init-hang'
  | 'init-garbage'
  | 'mount-fail'
  | 'mount-hang'
  | 'mount-noop'
  | 'mount-ro'
  | 'mount-leaky'
  | 'mount-busy';

/** Short bounds, so a hang costs the test about a second. */
export const QUICK: AgentfsTimeouts = {
  ...DEFAULT_AGENTFS_TIMEOUTS,
  initMs: 1_500,
  mountMs: 1_500,
  unmountMs: 3_000,
  fileMs: 3_000,
  exitGraceMs: 1_000,
};

export function sha256Of(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/** The environment the stand-in runs with: its misbehaviour, and this node. */
export function standInEnv(mode: StandInMode, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { ...process.env, AGENTFS_STAND_IN_MODE: mode, AGENTFS_STAND_IN_NODE: process.execPath, ...extra };
}

/** A tool around the stand-in for the adapter's functions; named a stand-in, never made by production code. */
export function standInTool(mode: StandInMode, timeouts: AgentfsTimeouts = QUICK): AgentfsTool {
  return {
    kind: 'stand-in',
    bin: STAND_IN,
    env: standInEnv(mode),
    timeouts,
    ownsMount: (mountPoint) =>
      mountAt(mountPoint)
        ? { ok: true, detail: 'the stand-in bind mount' }
        : { ok: false, detail: 'nothing is mounted at the mount point' },
  };
}

/** A copy of the stand-in under `dir` (named agentfs); with `extraLine`, other bytes, so its sha256 differs. */
export function copyStandIn(dir: string, extraLine = ''): string {
  const p = join(dir, 'agentfs');
  const text = readFileSync(STAND_IN, 'utf8');
  writeFileSync(p, extraLine ? text.replace('exec ', `# ${extraLine}\nexec `) : text);
  chmodSync(p, 0o755);
  copyFileSync(join(STAND_IN, '..', 'stand-in.mjs'), join(dir, 'stand-in.mjs'));
  return p;
}

/** What a bounded call left behind under `dir`: trial directories, mounts, processes naming it. Empty when clean. */
export function leftovers(dir: string): string[] {
  const out: string[] = [];
  const trials = existsSync(dir) ? readdirSync(dir).filter((n) => n.startsWith('probe-agentfs.')) : [];
  if (trials.length) out.push(`trial directories: ${trials.join(', ')}`);
  const mounts = mountPointsUnder(dir);
  if (mounts.length) out.push(`mounts: ${mounts.join(', ')}`);
  const procs = processesMentioning(dir);
  if (procs.length) out.push(`processes: ${procs.join(', ')}`);
  return out;
}
