#!/usr/bin/env node
// A scripted agent for the two-agent workload: a plain node process started by `pdb-env run` in
// its session root. Usage: two-agent-worker ROLE SESSION BARRIER_DIR NESTED_FILES BARRIER_MS
// It records the tree it starts from, applies its role's operations, signals "done" in the barrier
// directory and waits for its peer, then checks that its root holds exactly its own work. The last
// stdout line is a JSON verdict; exit 0 when every check passed, 1 otherwise, 2 on bad usage.
import { createHash } from 'node:crypto';
import { existsSync, watch } from 'node:fs';
import { chmod, lstat, mkdir, readdir, readFile, readlink, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Digest } from '../model/canonical-json.js';
import { countMismatches, diffEntries, sortEntries, totalMismatches, type Entry } from '../model/snapshot.js';
import { TreeModel } from './fileops.js';
import { agentOps, applyToModel, twoAgentBaseEntries, type AgentOp, type AgentRole, type AgentVerdict } from './two-agent.js';

const ADMIN = new Set(['.git', '.pdb', '.pdb-host']);

async function scan(root: string): Promise<Entry[]> {
  const out: Entry[] = [];
  const visit = async (abs: string, rel: string): Promise<void> => {
    for (const name of await readdir(abs)) {
      if (rel === '' && ADMIN.has(name)) continue;
      const a = join(abs, name);
      const r = rel ? `${rel}/${name}` : name;
      const st = await lstat(a);
      if (st.isSymbolicLink()) out.push({ path: r, kind: 'symlink', target: await readlink(a) });
      else if (st.isDirectory()) {
        out.push({ path: r, kind: 'dir' });
        await visit(a, r);
      } else if (st.isFile()) {
        const bytes = await readFile(a);
        out.push({
          path: r,
          kind: 'file',
          digest: `sha256:${createHash('sha256').update(bytes).digest('hex')}` as Digest,
          size: bytes.length,
          exec: (st.mode & 0o111) !== 0,
        });
      }
    }
  };
  await visit(root, '');
  return sortEntries(out);
}

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

async function main(argv: string[]): Promise<number> {
  const [roleArg, expectedSession, barrier, nestedArg, barrierMsArg] = argv;
  if ((roleArg !== 'a' && roleArg !== 'b') || !expectedSession || !barrier) {
    console.error('usage: two-agent-worker a|b SESSION BARRIER_DIR NESTED_FILES BARRIER_MS');
    return 2;
  }
  const role: AgentRole = roleArg;
  const peer: AgentRole = role === 'a' ? 'b' : 'a';
  const root = process.cwd();
  const session = process.env.PDB_ENV_SESSION ?? null;

  // The expected tree starts from the known fixture, not from a scan that a leaking peer could taint.
  const before = twoAgentBaseEntries();
  const ops = agentOps(role, Number(nestedArg ?? 40));
  for (const o of ops) await apply(root, o);
  await writeFile(join(barrier, `${role}.done`), `${process.pid}\n`);
  const peerDone = await waitForFile(join(barrier, `${peer}.done`), Number(barrierMsArg ?? 60_000));

  const model = new TreeModel(before);
  applyToModel(model, ops);
  const after = await scan(root);
  const mismatches = diffEntries(model.result(), after).map((c) => `${c.kind} ${c.path}`);
  const verdict: AgentVerdict = {
    role,
    session,
    sessionOk: session === expectedSession,
    ownWorkOnly: totalMismatches(countMismatches(model.result(), after)) === 0,
    mismatches: peerDone ? mismatches : ['peer never finished writing', ...mismatches],
  };
  if (!peerDone) verdict.ownWorkOnly = false;
  process.stdout.write(`${JSON.stringify(verdict)}\n`);
  return verdict.sessionOk && verdict.ownWorkOnly ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(`two-agent-worker: ${(err as Error).stack ?? String(err)}`);
    process.exitCode = 1;
  },
);
