// AgentFS as a backend: an external, checksum-pinned binary behind a bounded adapter, never
// embedded. It is available only when the pinned binary has passed a real trial on this host
// (init, mount, write, read back, unmount), and otherwise says why: E_AGENTFS_MISSING,
// E_AGENTFS_CHECKSUM (no pin, a bad pin, or another binary) or E_AGENTFS_PROBE (the step that
// failed or hung). A session is `agentfs init session --base <base tree>` in <session>/agentfs/,
// mounted at the session root; the root is an ordinary mounted directory, so checkpoint is the
// normal complete scan. The npm package agentfs-sdk is a library over a database, with no mount.
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { PdbError } from '../../model/errors.js';
import {
  DEFAULT_AGENTFS_TIMEOUTS,
  agentfsDb,
  agentfsFuseMount,
  initAgentfs,
  mountAgentfs,
  mountAnswers,
  runTrial,
  unmountAgentfs,
  type AgentfsPlace,
  type AgentfsTimeouts,
  type AgentfsTool,
  type MountCheck,
} from './adapter.js';
import { verifyAgentfsBinary, type VerifiedBinary } from './pin.js';
import { materializeTreeBase } from '../shared/base-tree.js';
import { unmeasuredUsage } from '../shared/disk-usage.js';
import { mountAt } from '../../model/os/mounts.js';
import { removeTree } from '../../model/os/remove-tree.js';
import type { Backend, BackendContext, BackendState, ProbeResult } from '../types.js';

/** The session's AgentFS working directory, inside its session dir: `.agentfs/session.db` lives in it. */
export const AGENTFS_STATE_DIR = 'agentfs';
const SESSION_ID = 'session';

function place(stateDir: string): AgentfsPlace {
  return { stateDir, id: SESSION_ID };
}

/** The tool for a binary that matched its pin; its mounts must be AgentFS FUSE mounts of the session's database. */
export function agentfsTool(binary: VerifiedBinary, env: NodeJS.ProcessEnv, timeouts = DEFAULT_AGENTFS_TIMEOUTS): AgentfsTool {
  return { kind: 'agentfs', bin: binary.path, env, timeouts, ownsMount: agentfsFuseMount };
}

export interface AgentfsProbeOptions {
  /** Where the binary and the pin are read from, and the environment agentfs runs with (default: process.env). */
  env?: NodeJS.ProcessEnv;
  timeouts?: AgentfsTimeouts;
}

/** Locate, hold to the pin, then run the trial. Only a binary that matched its pin and passed the trial is available. */
export async function probeAgentfs(ctx: BackendContext, o: AgentfsProbeOptions = {}): Promise<ProbeResult> {
  const env = o.env ?? process.env;
  const v = await verifyAgentfsBinary(env, ctx.store.paths.root);
  if (!v.ok) return v.probe;
  const pinned = { found: true, via: v.binary.via, sha256: v.binary.sha256, checksum: 'match', pinnedBy: v.binary.pinnedBy };
  if (process.platform !== 'linux') {
    return {
      available: false,
      reason: 'E_AGENTFS_PROBE',
      detail: `the trial was not run: this adapter checks AgentFS's FUSE mount in /proc/self/mountinfo, which ${process.platform} does not have`,
      evidence: { ...pinned, trial: 'not-run', step: 'mount', timedOut: false },
    };
  }
  const trial = await runTrial(agentfsTool(v.binary, env, o.timeouts), ctx.probeDir);
  if (!trial.passed) {
    return {
      available: false,
      reason: 'E_AGENTFS_PROBE',
      detail: `the trial failed at step "${trial.step}": ${trial.detail}`,
      evidence: { ...pinned, trial: 'failed', step: trial.step, timedOut: trial.timedOut, trialMs: trial.durationMs },
    };
  }
  return {
    available: true,
    reason: null,
    detail: `the pinned agentfs passed the trial: init --base, mount, write, read back, unmount (${trial.unmountedBy})`,
    evidence: { ...pinned, trial: 'passed', step: null, timedOut: false, trialMs: trial.durationMs },
  };
}

/** Release: unmount (lazily when it must), end the session's AgentFS processes, remove its state. Safe to repeat. */
export async function releaseAgentfsSession(root: string, stateDir: string, timeouts: AgentfsTimeouts): Promise<void> {
  await unmountAgentfs(place(stateDir), root, timeouts, { lazyFallback: true });
  await removeTree(stateDir);
}

/** Create: init over the base tree in `stateDir`, mount at `root` (which must not exist yet). Leaves nothing when it fails. */
export async function createAgentfsSession(tool: AgentfsTool, base: string, root: string, stateDir: string): Promise<void> {
  try {
    await initAgentfs(tool, place(stateDir), base);
    await mkdir(root);
    await mountAgentfs(tool, place(stateDir), root);
  } catch (err) {
    // Rollback: the create error is the one to report, whatever the undo says.
    await releaseAgentfsSession(root, stateDir, tool.timeouts).catch(() => {});
    throw err;
  }
}

export interface ResumeOptions {
  root: string;
  stateDir: string;
  base: string;
  timeouts: AgentfsTimeouts;
  ownsMount(mountPoint: string, db: string): MountCheck;
  /** The tool, asked for only when a mount is needed (so a live session does not re-hash the binary). */
  tool(): Promise<AgentfsTool>;
}

/** Resume: nothing to do when the session's own mount answers; otherwise detach what is there (a dead daemon's mount) and mount again. */
export async function resumeAgentfsSession(o: ResumeOptions): Promise<void> {
  const p = place(o.stateDir);
  const db = agentfsDb(p);
  if (o.ownsMount(o.root, db).ok && (await mountAnswers(o.root, o.timeouts))) return;
  if (mountAt(o.root)) await unmountAgentfs(p, o.root, o.timeouts, { lazyFallback: true });
  for (const [what, path] of [
    ['AgentFS database', db],
    ['base tree', o.base],
  ] as const) {
    if (!existsSync(path))
      throw new PdbError('E_SESSION_BROKEN', `the session's ${what} is missing, so it cannot be mounted again`, {
        hint: 'Discard the session and create it again.',
      });
  }
  await mkdir(o.root, { recursive: true });
  await mountAgentfs(await o.tool(), p, o.root);
}

async function verifiedTool(ctx: BackendContext): Promise<AgentfsTool> {
  const v = await verifyAgentfsBinary(process.env, ctx.store.paths.root);
  if (!v.ok) throw new PdbError(v.probe.reason ?? 'E_BACKEND_UNAVAILABLE', v.probe.detail, { hint: v.hint });
  return agentfsTool(v.binary, process.env);
}

function recordedBase(ctx: BackendContext, state: BackendState): string {
  if (typeof state.base !== 'string')
    throw new PdbError('E_SESSION_BROKEN', 'the agentfs session has no recorded base tree', {
      hint: 'Discard the session and create it again.',
    });
  return join(ctx.store.paths.root, state.base);
}

export const agentfsBackend: Backend = {
  name: 'agentfs',
  experimental: true,
  testOnly: false,
  summary:
    'external AgentFS CLI, checksum-pinned, every call bounded: a FUSE copy-on-write overlay of the base mounted at the root (candidate)',
  capabilities: { constantTimeCreate: true, sharesExtents: true, needsRemount: true, carriesFullSnapshot: true, securityIsolation: false },
  probe: (ctx) => probeAgentfs(ctx),
  async materializeBase(ctx, snapshot, digest) {
    await materializeTreeBase(ctx, snapshot, digest, 'tree');
  },
  async createSession(ctx, snapshot, digest, root, sessionDir) {
    const tool = await verifiedTool(ctx);
    const base = await materializeTreeBase(ctx, snapshot, digest, 'tree');
    await createAgentfsSession(tool, base, root, join(sessionDir, AGENTFS_STATE_DIR));
    const state: BackendState = { base: relative(ctx.store.paths.root, base), stateDir: AGENTFS_STATE_DIR, id: SESSION_ID };
    return { state, files: snapshot.entries.filter((e) => e.kind === 'file').length, cloneObserved: null };
  },
  async resume(ctx, root, sessionDir, state) {
    await resumeAgentfsSession({
      root,
      stateDir: join(sessionDir, AGENTFS_STATE_DIR),
      base: recordedBase(ctx, state),
      timeouts: DEFAULT_AGENTFS_TIMEOUTS,
      ownsMount: agentfsFuseMount,
      tool: () => verifiedTool(ctx),
    });
  },
  async usage() {
    // Its changes live in AgentFS's own database; no real AgentFS has run where this was built,
    // so where else it keeps bytes was never seen: not measured rather than guessed.
    return unmeasuredUsage(
      'E_USAGE_UNMEASURABLE',
      'AgentFS keeps a session in its own database, whose on-disk layout this build has never observed: not measured',
    );
  },
  async release(_ctx, root, sessionDir) {
    await releaseAgentfsSession(root, join(sessionDir, AGENTFS_STATE_DIR), DEFAULT_AGENTFS_TIMEOUTS);
  },
};
