// Two scripted agents, each a separate process started through `pdb-env run`, in two sessions from
// one base, at the same time, doing different things to the same paths. Each agent waits until both
// have finished writing, then verifies that its root holds exactly its own work and that
// PDB_ENV_SESSION names its session. The case session's result is the oracle comparison; the peer's
// result is checked against its own expected tree.
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PdbError } from '../../model/errors.js';
import { countMismatches, totalMismatches, type Entry } from '../../model/snapshot.js';
import { commitFixture } from '../commit-fixture.js';
import { addEntryKinds, writeEntryKinds } from '../entry-kinds.js';
import { TreeModel } from '../tree-model.js';
import type { Fixture, ProcessResult, ProcessRunner, Step, Workload, WorkloadCheck } from '../types.js';

export type AgentRole = 'a' | 'b';

/** One operation of a scripted agent; the worker applies it to its root, the model to entries. */
export type AgentOp =
  | { op: 'write'; path: string; content: string }
  | { op: 'delete'; path: string }
  | { op: 'rename'; from: string; to: string }
  | { op: 'symlink'; path: string; target: string }
  | { op: 'chmod'; path: string; exec: boolean };

export const TWO_AGENT_BASE: Record<string, string> = {
  'README.md': '# two-agent fixture\n',
  'shared/notes.md': '# notes\n\nbase text\n',
  'shared/victim.txt': 'deleted by one agent, edited by the other\n',
  'shared/mover.txt': 'renamed by both agents, to different names\n',
  'shared/config.json': '{"mode":"base"}\n',
  'bin/run.sh': '#!/bin/sh\necho base\n',
  'bin/helper.sh': '#!/bin/sh\necho helper\n',
  // Left alone by both agents. Clone backends observe sharing (FIEMAP) only on files of at least
  // 8 KiB; smaller ones may sit inline in btrfs metadata, so without this the clone goes unseen.
  'assets/reference.txt': Array.from({ length: 4096 }, (_, i) => `reference line ${i}\n`).join(''),
};
const BASE_LINK = { path: 'links/current', target: '../shared/notes.md' };

/** The fixture's entries, known in advance: agents judge their root against these, not a scan. */
export function twoAgentBaseEntries(): Entry[] {
  const m = new TreeModel([]);
  for (const [rel, content] of Object.entries(TWO_AGENT_BASE)) m.write(rel, content, false);
  m.symlink(BASE_LINK.path, BASE_LINK.target);
  addEntryKinds(m);
  return m.result();
}

/** The scripted agents' operations: the same paths, different changes. */
export function agentOps(role: AgentRole, nestedFiles: number): AgentOp[] {
  const ops: AgentOp[] = [];
  if (role === 'a') {
    ops.push({ op: 'write', path: 'shared/notes.md', content: '# notes\n\nrewritten by agent a\n' });
    ops.push({ op: 'delete', path: 'shared/victim.txt' });
    ops.push({ op: 'rename', from: 'shared/mover.txt', to: 'shared/moved-by-a.txt' });
    ops.push({ op: 'write', path: 'shared/a-view.txt', content: 'agent a view\n' });
    ops.push({ op: 'delete', path: 'links/current' });
    ops.push({ op: 'symlink', path: 'links/current', target: '../shared/a-view.txt' });
    ops.push({ op: 'chmod', path: 'bin/run.sh', exec: true });
    ops.push({ op: 'write', path: 'shared/config.json', content: '{"mode":"a"}\n' });
  } else {
    ops.push({ op: 'write', path: 'shared/notes.md', content: '# notes\n\nrewritten by agent b, differently\n' });
    ops.push({ op: 'write', path: 'shared/victim.txt', content: 'kept and edited by agent b\n' });
    ops.push({ op: 'rename', from: 'shared/mover.txt', to: 'shared/moved-by-b.txt' });
    ops.push({ op: 'delete', path: 'links/current' });
    ops.push({ op: 'symlink', path: 'links/current', target: '../shared/moved-by-b.txt' });
    ops.push({ op: 'write', path: 'bin/run.sh', content: '#!/bin/sh\necho b\n' });
    ops.push({ op: 'chmod', path: 'bin/helper.sh', exec: true });
    ops.push({ op: 'delete', path: 'shared/config.json' });
  }
  for (let i = 0; i < nestedFiles; i++) {
    ops.push({ op: 'write', path: `out/agent-${role}/n${Math.floor(i / 10)}/deep/f${i}.txt`, content: `agent ${role} output ${i}\n` });
  }
  ops.push({ op: 'write', path: 'out/result.txt', content: `result of agent ${role}\n` });
  return ops;
}

export function applyToModel(m: TreeModel, ops: AgentOp[]): void {
  for (const o of ops) {
    switch (o.op) {
      case 'write':
        m.write(o.path, o.content);
        break;
      case 'delete':
        m.remove(o.path);
        break;
      case 'rename':
        m.rename(o.from, o.to);
        break;
      case 'symlink':
        m.symlink(o.path, o.target);
        break;
      case 'chmod':
        m.chmod(o.path, o.exec);
        break;
      default: {
        const never: never = o;
        throw new Error(`unknown op ${JSON.stringify(never)}`);
      }
    }
  }
}

export const TWO_AGENT_DEFAULTS = {
  /** Nested output files each agent writes. */
  nestedFiles: 40,
  /** How long an agent waits for its peer to finish writing. */
  barrierTimeoutMs: 60_000,
};

function nested(params: Record<string, unknown>): number {
  const n = params.nestedFiles ?? TWO_AGENT_DEFAULTS.nestedFiles;
  if (!Number.isInteger(n) || (n as number) < 0)
    throw new PdbError('E_PLAN_INVALID', `two-agent: nestedFiles must be a non-negative integer, got ${String(n)}`);
  return n as number;
}

async function prepareTwoAgentFixture(workDir: string, _params: Record<string, unknown>, proc: ProcessRunner): Promise<Fixture> {
  const name = 'two-agent@3';
  const dir = join(workDir, name);
  const done = join(workDir, `${name}.ready`);
  if (existsSync(done)) return { name, sourceDir: dir };
  await rm(dir, { recursive: true, force: true });
  for (const [rel, content] of Object.entries(TWO_AGENT_BASE)) {
    await mkdir(join(dir, rel, '..'), { recursive: true });
    await writeFile(join(dir, rel), content);
    await chmod(join(dir, rel), 0o644);
  }
  await mkdir(join(dir, 'links'), { recursive: true });
  await symlink(BASE_LINK.target, join(dir, BASE_LINK.path));
  await writeEntryKinds(dir);
  await commitFixture(dir, proc);
  await writeFile(done, '');
  return { name, sourceDir: dir };
}

export const WORKER_SCRIPT = fileURLToPath(new URL('./worker-main.js', import.meta.url));

/** What a worker prints as its last stdout line. */
export interface AgentVerdict {
  role: AgentRole;
  session: string | null;
  sessionOk: boolean;
  ownWorkOnly: boolean;
  mismatches: string[];
}

/** The most telling line of a crashed process's stderr (the error, not Node's version banner). */
function errorLine(stderr: string): string {
  const lines = stderr
    .trim()
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  return lines.find((l) => /^(pdb-env: E_|[A-Za-z]*Error\b|two-agent-worker:)/.test(l)) ?? lines.pop() ?? '';
}

function parseVerdict(r: ProcessResult): AgentVerdict | null {
  const last = r.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(last) as AgentVerdict;
  } catch {
    return null;
  }
}

function twoAgentSteps(params: Record<string, unknown>): Step[] {
  const n = nested(params);
  const barrierMs = Number(params.barrierTimeoutMs ?? TWO_AGENT_DEFAULTS.barrierTimeoutMs);
  return [
    {
      name: 'agents',
      timeoutMs: barrierMs + 60_000,
      async run(ctx) {
        if (ctx.sessions.length < 2) throw new PdbError('E_INTERNAL', 'two-agent needs two sessions');
        const barrier = join(ctx.scratchDir, 'barrier');
        await mkdir(barrier, { recursive: true });
        const roles: AgentRole[] = ['a', 'b'];
        const t0 = performance.now();
        const runs = await Promise.all(
          roles.map(async (role, i) => {
            const s = ctx.sessions[i]!;
            const r = await ctx.pdbEnvRun(s, process.execPath, [WORKER_SCRIPT, role, s.name, barrier, String(n), String(barrierMs)], {
              timeoutMs: barrierMs + 30_000,
            });
            return { role, r, doneMs: performance.now() - t0 };
          }),
        );
        const milestones: Record<string, number> = {};
        const problems: string[] = [];
        for (const { role, r, doneMs } of runs) {
          milestones[`agent${role.toUpperCase()}Ms`] = doneMs;
          const v = parseVerdict(r);
          await writeFile(
            join(ctx.scratchDir, `verdict-${role}.json`),
            JSON.stringify({ exitCode: r.exitCode, timedOut: r.timedOut, verdict: v }),
          );
          if (r.timedOut) problems.push(`agent ${role} timed out`);
          else if (r.exitCode !== 0)
            problems.push(
              `agent ${role} exited ${r.exitCode}${v ? `: ${v.mismatches.slice(0, 3).join(', ')}` : `: ${errorLine(r.stderr)}`}`,
            );
        }
        if (problems.length) throw new PdbError(runs.some((x) => x.r.timedOut) ? 'E_TIMEOUT' : 'E_STEP_FAILED', problems.join('; '));
        return { process: runs[0]!.r, milestones };
      },
    },
  ];
}

export const twoAgentWorkload: Workload = {
  name: 'two-agent',
  description:
    'two scripted agent processes via pdb-env run in two sessions from one base, at the same time, changing the same paths differently',
  deterministic: true,
  sessions: 2,
  defaultParams: { ...TWO_AGENT_DEFAULTS },
  prepareFixture: prepareTwoAgentFixture,
  steps: twoAgentSteps,
  project: (entries) => entries,
  projectionNote: "identity: the case session must hold exactly agent a's work on the base",
  async expected(base, params) {
    const m = new TreeModel(base);
    applyToModel(m, agentOps('a', nested(params)));
    return m.result();
  },
  async check(ctx, results): Promise<WorkloadCheck[]> {
    const checks: WorkloadCheck[] = [];
    const base = ctx.baseEntries;
    const peer = results[1];
    if (base && peer) {
      const m = new TreeModel(base);
      applyToModel(m, agentOps('b', nested(ctx.params)));
      const mismatches = countMismatches(m.result(), peer);
      const bad = totalMismatches(mismatches);
      checks.push({
        name: 'peer-oracle',
        passed: bad === 0,
        mismatches,
        detail: bad ? `the peer session differs from agent b's expected tree in ${bad} entries` : undefined,
      });
    } else {
      checks.push({ name: 'peer-oracle', passed: false, detail: 'the peer session has no result to compare' });
    }
    for (const role of ['a', 'b'] as const) {
      const text = await readFile(join(ctx.scratchDir, `verdict-${role}.json`), 'utf8').catch(() => null);
      const rec = text ? (JSON.parse(text) as { exitCode: number | null; verdict: AgentVerdict | null }) : null;
      const v = rec?.verdict ?? null;
      const want = ctx.sessions[role === 'a' ? 0 : 1]?.name;
      const passed = !!v && v.sessionOk && v.ownWorkOnly && v.session === want;
      checks.push({
        name: `agent-${role}-sees-own-work`,
        passed,
        detail: passed
          ? undefined
          : v
            ? `session ${v.sessionOk ? 'ok' : 'wrong'}; ${v.mismatches.length} entries differ from its own expected work (${v.mismatches.slice(0, 5).join(', ')})`
            : 'the agent left no verdict',
      });
    }
    return checks;
  },
};
