// A scripted agent for the two-agent workload. It records the tree it starts from, applies its
// role's operations, signals "done" in the barrier directory and waits for its peer, then checks
// that its root holds exactly its own work. Importing this module starts nothing: the process
// entry is two-agent-worker-main.ts, which `pdb-env run` starts in the agent's session root.
import { existsSync, watch } from 'node:fs';
import { chmod, mkdir, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { scanTree } from '../../model/scan/scan.js';
import { countMismatches, diffEntries, totalMismatches } from '../../model/snapshot.js';
import { TreeModel } from '../tree-model.js';
import { agentOps, applyToModel, twoAgentBaseEntries, type AgentOp, type AgentRole, type AgentVerdict } from './two-agent.js';

async function apply(root: string, o: AgentOp): Promise<void> {
  switch (o.op) {
    case 'write':
      await mkdir(dirname(join(root, o.path)), { recursive: true });
      await writeFile(join(root, o.path), o.content);
      break;
    case 'delete':
      await rm(join(root, o.path), { recursive: true });
      break;
    case 'rename':
      await mkdir(dirname(join(root, o.to)), { recursive: true });
      await rename(join(root, o.from), join(root, o.to));
      break;
    case 'symlink':
      await mkdir(dirname(join(root, o.path)), { recursive: true });
      await symlink(o.target, join(root, o.path));
      break;
    case 'chmod': {
      const st = await stat(join(root, o.path));
      await chmod(join(root, o.path), o.exec ? st.mode | 0o111 : st.mode & ~0o111);
      break;
    }
    default: {
      const never: never = o;
      throw new Error(`unknown op ${JSON.stringify(never)}`);
    }
  }
}

/** Wait until `file` exists: event-driven (fs.watch on its directory), with a hard limit. */
function waitForFile(file: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const dir = dirname(file);
    let settled = false;
    const finish = (ok: boolean) => {
      if (settled) return;
      settled = true;
      watcher.close();
      clearTimeout(timer);
      resolve(ok);
    };
    const watcher = watch(dir, () => {
      if (existsSync(file)) finish(true);
    });
    const timer = setTimeout(() => finish(existsSync(file)), timeoutMs);
    if (existsSync(file)) finish(true);
  });
}

/** The process edges a worker uses, injectable for tests. */
export interface WorkerIo {
  /** The agent's root (the session root `pdb-env run` starts it in). */
  root: string;
  /** PDB_ENV_SESSION as the worker sees it. */
  session: string | null;
  /** Written to the barrier's done file, to tell the two agents apart. */
  pid: number;
  stdout(text: string): void;
  stderr(text: string): void;
}

export const WORKER_USAGE = 'usage: two-agent-worker a|b SESSION BARRIER_DIR NESTED_FILES BARRIER_MS';

/**
 * Run one agent: argv is `ROLE SESSION BARRIER_DIR NESTED_FILES BARRIER_MS`. The last stdout line
 * is a JSON verdict; resolves 0 when every check passed, 1 otherwise, 2 on bad usage.
 */
export async function runTwoAgentWorker(argv: string[], io: WorkerIo): Promise<number> {
  const [roleArg, expectedSession, barrier, nestedArg, barrierMsArg] = argv;
  if ((roleArg !== 'a' && roleArg !== 'b') || !expectedSession || !barrier) {
    io.stderr(`${WORKER_USAGE}\n`);
    return 2;
  }
  const role: AgentRole = roleArg;
  const peer: AgentRole = role === 'a' ? 'b' : 'a';

  // The expected tree starts from the known fixture, not from a scan that a leaking peer could taint.
  const before = twoAgentBaseEntries();
  const ops = agentOps(role, Number(nestedArg ?? 40));
  for (const o of ops) await apply(io.root, o);
  await writeFile(join(barrier, `${role}.done`), `${io.pid}\n`);
  const peerDone = await waitForFile(join(barrier, `${peer}.done`), Number(barrierMsArg ?? 60_000));

  const model = new TreeModel(before);
  applyToModel(model, ops);
  // The same scan as a checkpoint: the v1 contract, administrative roots left out.
  const after = (await scanTree(io.root, { excludes: [] })).entries;
  const mismatches = diffEntries(model.result(), after).map((c) => `${c.kind} ${c.path}`);
  const verdict: AgentVerdict = {
    role,
    session: io.session,
    sessionOk: io.session === expectedSession,
    ownWorkOnly: totalMismatches(countMismatches(model.result(), after)) === 0,
    mismatches: peerDone ? mismatches : ['peer never finished writing', ...mismatches],
  };
  if (!peerDone) verdict.ownWorkOnly = false;
  io.stdout(`${JSON.stringify(verdict)}\n`);
  return verdict.sessionOk && verdict.ownWorkOnly ? 0 : 1;
}
