// The workload's checks, from what the servers step recorded and what runs now: each server
// answered as its own session on its own PORT with a private TMPDIR outside both roots, each HMR
// channel saw only its own session's edit, the peer's tree is its own edit on the base, and nothing
// of either session survived the case.
import { realpathSync } from 'node:fs';
import { sep } from 'node:path';
import { countMismatches, totalMismatches, type Entry } from '../../model/snapshot.js';
import type { StepContext, WorkloadCheck } from '../types.js';
import { expectedSources, isServerOutput } from './edits.js';
import { hmrFindings } from './hmr.js';
import { isGone, sessionProcesses } from './servers.js';
import { readRecord, type DevServersRecord, type ServerRecord } from './dev-servers-steps.js';

const real = (p: string) => {
  try {
    return realpathSync(p);
  } catch {
    return p; // gone already (discarded): compare the path as recorded
  }
};
const inside = (p: string, dir: string) => p === dir || p.startsWith(dir.endsWith(sep) ? dir : dir + sep);

const check = (name: string, problems: string[], ok: string): WorkloadCheck => ({
  name,
  passed: problems.length === 0,
  detail: problems.length ? problems.slice(0, 4).join('; ') : ok,
});

function answersCheck(servers: ServerRecord[]): WorkloadCheck {
  const problems = servers
    .filter((s) => s.marker !== s.session)
    .map((s) => `${s.tool} in ${s.session} answered as ${s.marker ?? 'nobody'}`);
  return check('servers-answer-as-themselves', problems, 'each server served its own session marker on its own PORT');
}

function portsCheck(servers: ServerRecord[]): WorkloadCheck {
  const problems: string[] = [];
  for (const s of servers) {
    const port = Number(s.env?.PORT);
    if (!s.env) problems.push(`no process of ${s.session} listened on its PORT ${s.block[0] ?? '?'}`);
    else if (port !== s.block[0]) problems.push(`${s.tool} in ${s.session} has PORT ${s.env.PORT}, not the first port of its block`);
    else if (!s.listening.includes(port)) problems.push(`${s.tool} in ${s.session} does not listen on its PORT`);
    for (const o of servers.filter((x) => x !== s)) {
      const foreign = s.listening.filter((p) => o.block.includes(p));
      if (foreign.length) problems.push(`${s.session} listens on ${o.session}'s ports ${foreign.join(',')}`);
    }
  }
  if (new Set(servers.map((s) => s.block[0])).size !== servers.length) problems.push('two sessions share a PORT');
  return check('ports-own-blocks', problems, 'each server listens on its own PORT, inside its own block');
}

function tmpCheck(servers: ServerRecord[]): WorkloadCheck {
  const problems: string[] = [];
  const roots = servers.map((s) => real(s.root));
  for (const s of servers) {
    const tmp = s.env?.TMPDIR;
    if (!tmp) {
      problems.push(`${s.tool} in ${s.session} has no TMPDIR (or its environment could not be read)`);
      continue;
    }
    if (tmp !== s.listedTmpDir || s.env!.TMP !== tmp || s.env!.TEMP !== tmp)
      problems.push(`${s.session}: TMPDIR, TMP, TEMP and the listed temp dir differ`);
    if (roots.some((r) => inside(real(tmp), r))) problems.push(`${s.session}'s TMPDIR is inside a session root`);
  }
  const tmps = servers.map((s) => s.env?.TMPDIR).filter(Boolean);
  if (new Set(tmps).size !== tmps.length) problems.push('two sessions share a TMPDIR');
  return check('private-tmpdirs', problems, 'each server has its own TMPDIR, outside both roots');
}

async function survivorsCheck(ctx: StepContext, rec: DevServersRecord): Promise<WorkloadCheck> {
  const problems = [...rec.stopProblems];
  for (const s of rec.servers) {
    const live = await sessionProcesses(ctx, s.session).catch((err: Error) => {
      problems.push(`pdb-env ps ${s.session} failed: ${err.message}`);
      return [];
    });
    if (live.length) problems.push(`pdb-env ps ${s.session} still lists ${live.map((p) => p.pid).join(', ')}`);
    const alive = s.seen.filter((p) => !isGone(p));
    if (alive.length) problems.push(`${s.session}: pids ${alive.map((p) => p.pid).join(', ')} survived pdb-env stop`);
  }
  const seen = rec.servers.reduce((n, s) => n + s.seen.length, 0);
  return check('no-survivors', problems, `pdb-env stop ended both servers; ps is empty and all ${seen} processes seen are gone`);
}

function peerTreeCheck(ctx: StepContext, peer: Entry[] | undefined): WorkloadCheck {
  if (!ctx.baseEntries || !peer) return { name: 'peer-tree', passed: false, detail: 'the peer session has no result to compare' };
  const mismatches = countMismatches(
    expectedSources(ctx.baseEntries, 'b'),
    peer.filter((e) => !isServerOutput(e.path)),
  );
  const bad = totalMismatches(mismatches);
  return {
    name: 'peer-tree',
    passed: bad === 0,
    mismatches,
    detail: bad
      ? `the peer session differs from its own edit on the base in ${bad} entries`
      : "the peer session holds exactly B's edit on the base",
  };
}

export async function devServersChecks(ctx: StepContext, results: Entry[][]): Promise<WorkloadCheck[]> {
  const rec = readRecord(ctx.scratchDir);
  if (!rec || rec.servers.length < 2)
    return [
      { name: 'servers-started', passed: false, detail: 'the servers step left no record of two servers' },
      peerTreeCheck(ctx, results[1]),
    ];
  const hmr = rec.hmr ? hmrFindings(rec.hmr) : ['the HMR edits were not made (an earlier part of the step failed)'];
  return [
    answersCheck(rec.servers),
    portsCheck(rec.servers),
    tmpCheck(rec.servers),
    check('hmr-own-edit-only', hmr, "each HMR channel reported its own session's edit and stayed quiet for the other's"),
    peerTreeCheck(ctx, results[1]),
    await survivorsCheck(ctx, rec),
  ];
}
