// The AgentFS command-line interface as documented, every call bounded. Followed:
// https://github.com/tursodatabase/agentfs/blob/v0.6.4/MANUAL.md ("agentfs init [OPTIONS] [ID]",
// "--base <PATH>" for a copy-on-write overlay; "agentfs mount [OPTIONS] [ID_OR_PATH] [MOUNT_POINT]";
// unmounting on Linux: "fusermount -u <MOUNT_POINT>") and https://docs.turso.tech/agentfs/reference/cli,
// read at tursodatabase/agentfs v0.6.4, commit 3a5ed2b88e5d5a5f9b2c7fe02d012b50fd19e3c0. From that
// commit's source: init writes `.agentfs/<ID>.db` under its working directory (sdk/rust/src/lib.rs,
// agentfs_dir) and stores the canonical base path in it; mount daemonizes (fork + setsid) once the
// mount point is a mount, waiting at most 10 s, and names the FUSE mount `agentfs:<canonical db
// path>` (cli/src/cmd/mount.rs, cli/src/daemon.rs). Nothing here has run against a real binary.
import { existsSync, realpathSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PdbError, isPdbError } from '../../model/errors.js';
import { tempPath } from '../../model/os/temp-name.js';
import { randomHex } from '../../model/os/hash.js';
import { describeEnd, endProcessesMentioning, runBounded, unmountAt, type BoundedResult } from './exec.js';
import { mountAt, mountPointsUnder } from '../../model/os/mounts.js';
import { removeTree } from '../../model/os/remove-tree.js';

export interface AgentfsTimeouts {
  initMs: number;
  /** AgentFS's own mount waits up to 10 s for the daemon; this bound sits above it. */
  mountMs: number;
  unmountMs: number;
  /** A file operation through the mount (run in a child process: a hung FUSE mount cannot block pdb-env). */
  fileMs: number;
  /** How long the mount daemon may take to exit after its unmount before it is killed. */
  exitGraceMs: number;
}

export const DEFAULT_AGENTFS_TIMEOUTS: AgentfsTimeouts = {
  initMs: 30_000,
  mountMs: 30_000,
  unmountMs: 15_000,
  fileMs: 10_000,
  exitGraceMs: 5_000,
};

export interface MountCheck {
  ok: boolean;
  detail: string;
}

/**
 * What runs AgentFS commands. `kind: 'agentfs'` is a binary whose sha256 matched the pin, made only
 * by agentfsTool() from a VerifiedBinary; its mounts must be AgentFS FUSE mounts of the very
 * database (`agentfs:<db>`), which only a FUSE server can make. The 'stand-in' kind is a test's
 * imitation with its own mount check; the backend's probe never builds one.
 */
export interface AgentfsTool {
  kind: 'agentfs' | 'stand-in';
  bin: string;
  env: NodeJS.ProcessEnv;
  timeouts: AgentfsTimeouts;
  ownsMount(mountPoint: string, db: string): MountCheck;
}

/** The production mount check: a FUSE mount at the mount point whose source is `agentfs:<this db>`. */
export function agentfsFuseMount(mountPoint: string, db: string): MountCheck {
  const m = mountAt(mountPoint);
  if (!m) return { ok: false, detail: 'nothing is mounted at the mount point' };
  const want = `agentfs:${existsSync(db) ? realpathSync(db) : db}`;
  const fuse = m.fsType === 'fuse' || m.fsType.startsWith('fuse.');
  if (fuse && m.source === want) return { ok: true, detail: `${m.fsType} mount from ${m.source}` };
  return { ok: false, detail: `the mount point holds a ${m.fsType} mount from "${m.source}", not an AgentFS FUSE mount of this database` };
}

/** One agent filesystem: the working directory AgentFS runs in (its state dir) and the agent id. */
export interface AgentfsPlace {
  stateDir: string;
  id: string;
}

/** Where AgentFS keeps an agent's filesystem: `.agentfs/<id>.db` under the directory it ran in. */
export function agentfsDb(p: AgentfsPlace): string {
  return join(p.stateDir, '.agentfs', `${p.id}.db`);
}

function run(tool: AgentfsTool, args: string[], p: AgentfsPlace, timeoutMs: number): Promise<BoundedResult> {
  return runBounded([tool.bin, ...args], { cwd: p.stateDir, env: tool.env, timeoutMs });
}

function stepError(what: string, r: BoundedResult, timeoutMs: number): PdbError {
  return new PdbError(r.timedOut ? 'E_TIMEOUT' : 'E_MOUNT_FAILED', describeEnd(what, r, timeoutMs));
}

/** `agentfs init <id> --base <base>` in the state dir; the database must then exist where AgentFS documents it. */
export async function initAgentfs(tool: AgentfsTool, p: AgentfsPlace, base: string): Promise<void> {
  await mkdir(p.stateDir, { recursive: true });
  const r = await run(tool, ['init', p.id, '--base', base], p, tool.timeouts.initMs);
  if (r.timedOut || r.exitCode !== 0) {
    await endProcessesMentioning(p.stateDir, 0);
    throw stepError('agentfs init', r, tool.timeouts.initMs);
  }
  if (!existsSync(agentfsDb(p)))
    throw new PdbError(
      'E_MOUNT_FAILED',
      `agentfs init exited 0 but made no .agentfs/${p.id}.db, where AgentFS keeps an agent's filesystem`,
    );
}

/** Undo a mount attempt: detach whatever is at the mount point, end the processes of this state dir. */
async function abandonMount(tool: AgentfsTool, p: AgentfsPlace, mountPoint: string): Promise<void> {
  await unmountAt(mountPoint, { lazy: true, timeoutMs: tool.timeouts.unmountMs });
  await endProcessesMentioning(p.stateDir, 0);
}

/** `agentfs mount <db> <mountPoint>`; it returns once its daemon serves the mount, which must then be this tool's own. */
export async function mountAgentfs(tool: AgentfsTool, p: AgentfsPlace, mountPoint: string): Promise<void> {
  const db = agentfsDb(p);
  const r = await run(tool, ['mount', db, mountPoint], p, tool.timeouts.mountMs);
  if (r.timedOut || r.exitCode !== 0) {
    await abandonMount(tool, p, mountPoint);
    throw stepError('agentfs mount', r, tool.timeouts.mountMs);
  }
  const check = tool.ownsMount(mountPoint, db);
  if (!check.ok) {
    await abandonMount(tool, p, mountPoint);
    throw new PdbError('E_MOUNT_FAILED', `agentfs mount exited 0 but ${check.detail}`);
  }
}

/**
 * Unmount the session root (lazily when a plain unmount fails: busy or hung), let the daemon of
 * this state dir exit (killed after a grace period), and fail when a mount or process is left.
 */
export async function unmountAgentfs(
  p: AgentfsPlace,
  mountPoint: string,
  timeouts: AgentfsTimeouts,
  o: { lazyFallback: boolean },
): Promise<string> {
  const plain = await unmountAt(mountPoint, { lazy: false, timeoutMs: timeouts.unmountMs });
  let how = plain.detail;
  if (!plain.ok && o.lazyFallback) {
    const lazy = await unmountAt(mountPoint, { lazy: true, timeoutMs: timeouts.unmountMs });
    how = lazy.ok ? `detached lazily after: ${plain.detail}` : `${plain.detail}; lazily: ${lazy.detail}`;
  }
  const left = await endProcessesMentioning(p.stateDir, timeouts.exitGraceMs);
  if (mountAt(mountPoint)) throw new PdbError('E_MOUNT_FAILED', `could not unmount the AgentFS mount: ${how}`);
  if (left.length) throw new PdbError('E_CLEANUP_INCOMPLETE', `AgentFS processes ${left.join(', ')} survived SIGKILL`);
  if (!plain.ok && !o.lazyFallback) throw new PdbError('E_MOUNT_FAILED', `unmount failed: ${how}`);
  return how;
}

const FILE_OP = `const fs = require('fs'); const [op, p, data] = process.argv.slice(1);
try { if (op === 'write') fs.writeFileSync(p, data); else if (op === 'read') process.stdout.write(fs.readFileSync(p, 'utf8')); else fs.statSync(p); }
catch (e) { process.stderr.write(e.message + '\\n'); process.exit(1); }`;

/** A file operation in a bounded child process: a hung FUSE mount blocks the child, never this process. */
export async function fileOp(op: 'write' | 'read' | 'stat', path: string, timeoutMs: number, data = ''): Promise<string> {
  const r = await runBounded([process.execPath, '-e', FILE_OP, op, path, data], { timeoutMs });
  if (r.timedOut || r.exitCode !== 0)
    throw new PdbError(r.timedOut ? 'E_TIMEOUT' : 'E_IO', describeEnd(`${op} through the mount`, r, timeoutMs));
  return r.stdout;
}

/** Whether the mount answers at all (a dead daemon leaves a mount that fails with ENOTCONN). */
export async function mountAnswers(mountPoint: string, timeouts: AgentfsTimeouts): Promise<boolean> {
  try {
    await fileOp('stat', mountPoint, timeouts.fileMs);
    return true;
  } catch (err) {
    if (isPdbError(err)) return false;
    throw err;
  }
}

export type TrialStep = 'init' | 'mount' | 'write' | 'read' | 'unmount' | 'cleanup';

export type TrialResult =
  | { passed: true; durationMs: number; unmountedBy: string }
  | { passed: false; step: TrialStep; detail: string; timedOut: boolean; durationMs: number };

/** Remove the trial's directory and check nothing is left: no mount under it, no process naming it, no directory. */
async function cleanTrial(dir: string, mnt: string, timeouts: AgentfsTimeouts): Promise<string | null> {
  const problems: string[] = [];
  if (mountAt(mnt)) {
    const u = await unmountAt(mnt, { lazy: true, timeoutMs: timeouts.unmountMs });
    if (!u.ok) problems.push(`the trial mount stayed: ${u.detail}`);
  }
  // The steps already ended their own processes; whatever still names the trial is killed at once.
  const left = await endProcessesMentioning(dir, 0);
  if (left.length) problems.push(`processes ${left.join(', ')} survived`);
  const mounts = mountPointsUnder(dir);
  // Never remove a tree with a mount inside it: that would delete through the mount.
  if (mounts.length) problems.push(`${mounts.length} mount(s) left under the trial directory`);
  else await removeTree(dir).catch((err: Error) => problems.push(`removing the trial directory failed: ${err.message}`));
  if (existsSync(dir)) problems.push('the trial directory is still there');
  return problems.length ? problems.join('; ') : null;
}

/**
 * The proof behind `available`: in a fresh directory under `probeDir`, init an agent filesystem over
 * a one-file base, mount it, write a file through the mount, read it and the base file back (the
 * write must not reach the base), unmount (the file must be gone from the mount point), clean up.
 * Every step is bounded; whatever happens, the trial's mount, processes and directory are removed.
 */
export async function runTrial(tool: AgentfsTool, probeDir: string): Promise<TrialResult> {
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  // A structured temp name (model/os/temp-name.ts): doctor and gc see its owner is alive and leave it.
  const dir = tempPath(probeDir, 'probe-agentfs');
  await mkdir(dir);
  const base = join(dir, 'base');
  const mnt = join(dir, 'mnt');
  const p: AgentfsPlace = { stateDir: join(dir, 'state'), id: 'trial' };
  const token = `pdb-env agentfs trial ${randomHex(8)}\n`;
  const t = tool.timeouts;
  let step: TrialStep = 'init';
  let failure: { step: TrialStep; detail: string; timedOut: boolean } | null = null;
  let unmountedBy = '';
  try {
    await mkdir(base);
    await writeFile(join(base, 'base.txt'), 'base\n');
    await initAgentfs(tool, p, base);
    step = 'mount';
    await mkdir(mnt);
    await mountAgentfs(tool, p, mnt);
    step = 'write';
    await fileOp('write', join(mnt, 'probe.txt'), t.fileMs, token);
    step = 'read';
    const back = await fileOp('read', join(mnt, 'probe.txt'), t.fileMs);
    if (back !== token) throw new PdbError('E_IO', 'the file written through the mount read back different bytes');
    if ((await fileOp('read', join(mnt, 'base.txt'), t.fileMs)) !== 'base\n')
      throw new PdbError('E_IO', 'the base file did not read back through the mount');
    if (existsSync(join(base, 'probe.txt'))) throw new PdbError('E_IO', 'the write reached the base directory (no copy-on-write)');
    step = 'unmount';
    unmountedBy = await unmountAgentfs(p, mnt, t, { lazyFallback: false });
    if (existsSync(join(mnt, 'probe.txt'))) throw new PdbError('E_IO', 'the written file is still at the mount point after the unmount');
  } catch (err) {
    if (!isPdbError(err)) throw err;
    failure = { step, detail: err.message, timedOut: err.code === 'E_TIMEOUT' };
  } finally {
    const left = await cleanTrial(dir, mnt, t);
    if (left && failure) failure.detail += `; cleanup: ${left}`;
    else if (left) failure = { step: 'cleanup', detail: left, timedOut: false };
  }
  if (failure) return { passed: false, ...failure, durationMs: ms() };
  return { passed: true, durationMs: ms(), unmountedBy };
}
