// Validate replays what ran. consistency.ts holds a receipt to itself; this holds it to its plan:
// the schedule is built again from the plan and the seed (plan/scheduler.ts, as bench built it), and
// every case, warm-up flag, oracle check, projected digest, file count, scope, fixture and outcome
// is held to what that schedule and the workload registry say it must be. A coordinated edit (cases
// deleted with the summary adjusted, a mismatch rewritten as ok) then disagrees with something the
// editor did not write. The plan is the receipt's own (version 4 on), or a committed plan under
// plans/ whose digest is the receipt's planDigest; without either the schedule is not replayed.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalBytes, type Digest } from '../../model/canonical-json.js';
import { packageRoot } from '../../model/paths.js';
import { WORKLOADS } from '../../workloads/registry.js';
import type { Workload } from '../../workloads/types.js';
import { classifyCase, notJudgedReason } from '../case/outcome.js';
import { oracleScopeOf } from '../case/oracle-tree.js';
import { ORACLE_BACKEND, planDigest, workloadParams, type Plan } from '../plan/plan.js';
import { buildSchedule, type ScheduledCase } from '../plan/scheduler.js';
import type { CaseRecord, CheckRecord, FailureRecord, Receipt } from './receipt-types.js';

export interface Inconsistency {
  /** JSON pointer of the recorded field. */
  pointer: string;
  recorded: unknown;
  recomputed: unknown;
  /** The rule the field breaks, in words. */
  rule: string;
}

/** Where the replayed plan came from: the receipt itself, a committed plan with the same digest, or nowhere. */
export type PlanSource = { from: 'receipt'; plan: Plan } | { from: 'committed'; plan: Plan; file: string } | { from: 'none' };

const committedPlans = new Map<string, Map<Digest, { plan: Plan; file: string }>>();

/** Every plan under `dir` by its digest (read once per directory). */
function plansByDigest(dir: string): Map<Digest, { plan: Plan; file: string }> {
  let known = committedPlans.get(dir);
  if (known) return known;
  known = new Map();
  let names: string[] = [];
  try {
    names = readdirSync(dir).filter((f) => f.endsWith('.json'));
  } catch {
    names = []; // no plans/ here (an installed package): nothing to look up
  }
  for (const name of names) {
    try {
      const plan = JSON.parse(readFileSync(join(dir, name), 'utf8')) as Plan;
      known.set(planDigest(plan), { plan, file: `plans/${name}` });
    } catch {
      // Not a JSON plan: it cannot be the plan a receipt names.
    }
  }
  committedPlans.set(dir, known);
  return known;
}

/** The plan to replay `r` from: its own, else the committed plan its planDigest names. */
export function planSourceOf(r: Receipt, plansDir = join(packageRoot(), 'plans')): PlanSource {
  if (r.plan) return { from: 'receipt', plan: r.plan as Plan };
  const found = plansByDigest(plansDir).get(r.planDigest);
  return found ? { from: 'committed', ...found } : { from: 'none' };
}

const SLACK_MS = 1000;

/** The failures a case recorded before its failed checks were added (classifyCase appends one per failed check). */
function phaseFailuresOf(c: CaseRecord): FailureRecord[] {
  const failedChecks = c.checks.filter((k) => k.evaluated && !k.passed).length;
  return c.failures.slice(0, Math.max(0, c.failures.length - failedChecks));
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

interface Ctx {
  r: Receipt;
  plan: Plan;
  workloads: Record<string, Workload>;
  /** Whether the receipt's recorded load may widen the phase gap limit (it came signed). */
  trustLoad: boolean;
  out: Inconsistency[];
}

function push(ctx: Ctx, pointer: string, recorded: unknown, recomputed: unknown, rule: string): void {
  ctx.out.push({ pointer, recorded, recomputed, rule });
}

/** Every way `r` disagrees with its plan and seed (empty: it is what the plan ran). */
export function replayInconsistencies(
  r: Receipt,
  plan: Plan,
  workloads: Record<string, Workload> = WORKLOADS as Record<string, Workload>,
  trustLoad = false,
): Inconsistency[] {
  const ctx: Ctx = { r, plan, workloads, trustLoad, out: [] };
  if (r.plan && planDigest(r.plan as Plan) !== r.planDigest)
    push(ctx, '/planDigest', r.planDigest, planDigest(r.plan as Plan), 'the plan the receipt carries hashes to its planDigest');
  if (r.planName !== plan.name) push(ctx, '/planName', r.planName, plan.name, "the plan's name");
  const names = r.backends.map((b) => b.name);
  if (!same(names, plan.backends))
    push(ctx, '/backends', names, plan.backends, "every backend of the plan, probed once, in the plan's order");
  r.backends.forEach((b, i) => {
    if (b.available !== (b.reason === null))
      push(
        ctx,
        `/backends/${i}/reason`,
        b.reason,
        b.available ? null : 'an error code',
        'an available backend has no reason; an unavailable one names its code',
      );
    if (!b.available && b.capabilities)
      push(ctx, `/backends/${i}/capabilities`, b.capabilities, 'absent', 'an unavailable backend records no capabilities');
  });
  const schedule = buildSchedule({
    backends: plan.backends,
    workloads: plan.workloads.map((w) => w.name),
    blocks: plan.blocks,
    warmupBlocks: plan.warmupBlocks,
    seed: r.seed,
  });
  const rule = 'the schedule rebuilt from the plan and the seed (harness/plan/scheduler.ts)';
  if (r.blocks.length !== schedule.length) push(ctx, '/blocks', r.blocks.length, schedule.length, rule);
  schedule.forEach((b, i) => {
    const got = r.blocks[i];
    if (!got) return;
    for (const key of ['index', 'workload', 'warmup', 'order'] as const)
      if (!same(got[key], b[key])) push(ctx, `/blocks/${i}/${key}`, got[key], b[key], rule);
  });
  const available = new Set(r.backends.filter((b) => b.available).map((b) => b.name));
  const byId = new Map<string, number[]>();
  r.cases.forEach((c, i) => byId.set(c.id, [...(byId.get(c.id) ?? []), i]));
  const scheduled = new Map<string, ScheduledCase>(schedule.flatMap((b) => b.cases).map((c) => [c.id, c]));
  for (const sc of scheduled.values()) {
    const at = byId.get(sc.id) ?? [];
    if (available.has(sc.backend) && at.length === 0)
      push(
        ctx,
        '/cases',
        `no case ${sc.id}`,
        `case ${sc.id} (${sc.backend}, ${sc.workload})`,
        'every scheduled case of an available backend is in the receipt',
      );
  }
  for (const [id, at] of byId) {
    if (at.length > 1)
      push(ctx, `/cases/${at[1]}/id`, `${at.length} cases ${id}`, `one case ${id}`, 'every scheduled case is in the receipt exactly once');
    const sc = scheduled.get(id);
    const i = at[0]!;
    const c = r.cases[i]!;
    if (!sc) {
      push(ctx, `/cases/${i}/id`, id, 'an id of the schedule', 'every case is one the schedule holds');
      continue;
    }
    if (!available.has(sc.backend))
      push(ctx, `/cases/${i}/backend`, c.backend, `no case (${sc.backend} was unavailable)`, 'an unavailable backend runs no case');
    for (const key of ['block', 'position', 'backend', 'workload', 'warmup'] as const)
      if (c[key] !== sc[key]) push(ctx, `/cases/${i}/${key}`, c[key], sc[key], key === 'warmup' ? 'warm-up flags as planned' : rule);
  }
  timeOrder(ctx);
  r.cases.forEach((c, i) => caseReplay(ctx, c, i));
  return ctx.out;
}

/** Cases ran one after another in schedule order, inside the run's span (a resumed run repeats unfinished blocks only). */
function timeOrder(ctx: Ctx): void {
  const { r } = ctx;
  let prev = Date.parse(r.startedAt) - SLACK_MS;
  r.cases.forEach((c, i) => {
    const t = Date.parse(c.startedAt);
    if (t + SLACK_MS < prev)
      push(
        ctx,
        `/cases/${i}/startedAt`,
        c.startedAt,
        `after ${new Date(prev).toISOString()}`,
        'cases ran one after another in schedule order, within the run',
      );
    prev = Math.max(prev, t);
  });
  const last = r.cases.at(-1);
  if (last && Date.parse(last.finishedAt) > Date.parse(r.finishedAt) + SLACK_MS)
    push(ctx, '/finishedAt', r.finishedAt, `after ${last.finishedAt}`, 'the receipt is written after its last case');
}

function caseReplay(ctx: Ctx, c: CaseRecord, i: number): void {
  const { r, plan } = ctx;
  const at = `/cases/${i}`;
  const entry = plan.workloads.find((w) => w.name === c.workload);
  const workload = Object.hasOwn(ctx.workloads, c.workload) ? ctx.workloads[c.workload]! : null;
  const params = workload && entry ? workloadParams(workload, entry) : null;
  if (params) {
    const digest = canonicalBytes(params).digest;
    if (c.fixture.paramsDigest !== digest)
      push(ctx, `${at}/fixture/paramsDigest`, c.fixture.paramsDigest, digest, "the workload's parameters as the plan sets them");
  }
  const first = r.cases.find((x) => x.workload === c.workload)!;
  for (const key of ['name', 'baseSnapshot', 'paramsDigest'] as const)
    if (c.fixture[key] !== first.fixture[key])
      push(ctx, `${at}/fixture/${key}`, c.fixture[key], first.fixture[key], 'every case of a workload starts from its one fixture');
  if (workload) {
    const phaseFailures = phaseFailuresOf(c);
    const want = classifyCase(c, phaseFailures, workload);
    if (c.outcome !== want.outcome || !same(c.failure, want.failure) || !same(c.failures, want.failures))
      push(ctx, `${at}/outcome`, c.outcome, want.outcome, 'the outcome follows from the failures and checks (harness/case/outcome.ts)');
  }
  oracleReplay(ctx, c, i, workload, params);
  phaseTimes(ctx, c, i);
}

/** Whether the oracle's projected tree can differ from the checkpoint's Snapshot: something was dropped, added or rewritten. */
function projectionApplies(
  c: CaseRecord,
  ref: CaseRecord,
  k: CheckRecord,
  workload: Workload | null,
  params: Record<string, unknown> | null,
): boolean {
  if (!workload || !params) return true;
  const declared = oracleScopeOf(workload, params);
  return (
    (c.projection?.dropped.length ?? 1) > 0 ||
    (ref.projection?.dropped.length ?? 1) > 0 ||
    !same(k.scope ?? ['source'], ['source']) ||
    (declared.rootPathFiles?.length ?? 0) > 0 ||
    declared.include.length > 0
  );
}

function oracleReplay(ctx: Ctx, c: CaseRecord, i: number, workload: Workload | null, params: Record<string, unknown> | null): void {
  const { r } = ctx;
  const at = `/cases/${i}`;
  const oracles = c.checks.map((k, j) => [k, j] as const).filter(([k]) => k.name === 'oracle');
  if (c.backend === ORACLE_BACKEND) {
    if (oracles.length)
      push(
        ctx,
        `${at}/checks/${oracles[0]![1]}`,
        'oracle',
        'no oracle check',
        "the full-copy case is its block's oracle, not judged by one",
      );
    return;
  }
  if (oracles.length !== 1) {
    push(
      ctx,
      `${at}/checks`,
      `${oracles.length} oracle checks`,
      'one oracle check',
      "every other case is compared with its block's full-copy case once",
    );
    return;
  }
  const [k, j] = oracles[0]!;
  const kAt = `${at}/checks/${j}`;
  const ref = r.cases.find((x) => x.block === c.block && x.backend === ORACLE_BACKEND) ?? null;
  const wantRef = ref ? { backend: ORACLE_BACKEND, caseId: ref.id } : null;
  if (!same(k.reference, wantRef))
    push(ctx, `${kAt}/reference`, k.reference, wantRef, 'the oracle check references the full-copy case of its own block');
  const judged = notJudgedReason(phaseFailuresOf(c), c.metrics, workload) === null;
  const made = c.projection !== null && c.projection !== undefined;
  const evaluable = ref !== null && ref.outcome === 'ok' && judged && made;
  // Without the workload its own failure classes are unknown: a case with a phase failure is then left as recorded.
  const knowable = workload !== null || phaseFailuresOf(c).length === 0;
  if (knowable && k.evaluated !== evaluable)
    push(
      ctx,
      `${kAt}/evaluated`,
      k.evaluated,
      evaluable,
      "the oracle is evaluated exactly when the block's full-copy case ended ok and the case made a result the environment did not stop",
    );
  if (k.evaluated !== (c.oracleSnapshot !== null))
    push(
      ctx,
      `${at}/oracleSnapshot`,
      c.oracleSnapshot,
      k.evaluated ? 'a digest' : null,
      'the oracle digest is recorded exactly when the oracle was evaluated',
    );
  if (k.evaluated && ref) evaluatedOracle(ctx, c, i, { k, j, ref, workload, params });
}

/** An evaluated oracle check against what both trees must then have in common. */
function evaluatedOracle(
  ctx: Ctx,
  c: CaseRecord,
  i: number,
  o: { k: CheckRecord; j: number; ref: CaseRecord; workload: Workload | null; params: Record<string, unknown> | null },
): void {
  const { r } = ctx;
  const { k, ref, workload, params } = o;
  const at = `/cases/${i}`;
  const kAt = `${at}/checks/${o.j}`;
  // The reference's side is the same tree for every case of the block.
  const peers = r.cases.filter((x) => x.block === c.block && x.oracleSnapshot !== null);
  const firstPeer = peers[0];
  if (firstPeer && firstPeer !== c) {
    if (c.oracleSnapshot !== firstPeer.oracleSnapshot)
      push(
        ctx,
        `${at}/oracleSnapshot`,
        c.oracleSnapshot,
        firstPeer.oracleSnapshot,
        'every case of a block is compared with the same full-copy result',
      );
    const pk = firstPeer.checks.find((x) => x.name === 'oracle');
    for (const side of ['files', 'filesHashed'] as const)
      if (pk && pk[side]?.reference !== k[side]?.reference)
        push(
          ctx,
          `${kAt}/${side}/reference`,
          k[side]?.reference,
          pk[side]?.reference,
          'every case of a block is compared with the same full-copy result',
        );
  }
  // Where nothing projects the tree (no entry dropped, the source scope), the projected digest a
  // version 4 receipt records is the result itself: an edit of one alone shows here.
  if (c.projectedSnapshot != null && c.projectedSnapshot !== c.resultSnapshot && !projectionApplies(c, ref, k, workload, params))
    push(
      ctx,
      `${at}/projectedSnapshot`,
      c.projectedSnapshot,
      c.resultSnapshot,
      'with nothing projected, the projected digest is the result Snapshot',
    );
  // An ok comparison means equal projected trees: the case's projected digest is its reference's.
  const own =
    c.projectedSnapshot !== undefined ? c.projectedSnapshot : projectionApplies(c, ref, k, workload, params) ? undefined : c.resultSnapshot;
  const refOwn = ref.projectedSnapshot !== undefined ? ref.projectedSnapshot : own === undefined ? undefined : ref.resultSnapshot;
  if (refOwn !== undefined && c.oracleSnapshot !== refOwn)
    push(ctx, `${at}/oracleSnapshot`, c.oracleSnapshot, refOwn, "the oracle digest is the projected result of the block's full-copy case");
  if (own !== undefined && k.passed !== (own === c.oracleSnapshot))
    push(
      ctx,
      `${kAt}/passed`,
      k.passed,
      own === c.oracleSnapshot,
      `a passed oracle check means the case's projected result (${own}) equals its reference's (${c.oracleSnapshot})`,
    );
  for (const side of ['case', 'reference'] as const) {
    const files = k.files?.[side];
    const hashed = k.filesHashed?.[side];
    if (typeof files === 'number' && hashed !== files)
      push(
        ctx,
        `${kAt}/filesHashed/${side}`,
        hashed,
        files,
        'the oracle hashes every file it compares, counted by its reader (at most files, at least files)',
      );
  }
  if (k.passed && k.files && k.files.case !== k.files.reference)
    push(ctx, `${kAt}/files/case`, k.files.case, k.files.reference, 'equal trees hold as many files');
  if (workload && params) {
    const declared = oracleScopeOf(workload, params).scope;
    if (!same([...(k.scope ?? [])].sort(), [...declared].sort()))
      push(ctx, `${kAt}/scope`, k.scope ?? null, declared, 'the oracle covers the scope the workload declares for its parameters');
  }
}

/**
 * Version 4 on, phases record their start: they follow one another without overlap inside the case's
 * wall time, and every harness step of a case is timed, so what lies between two phases is only
 * the harness's bookkeeping. Time moved out of a phase into the overhead leaves a gap that long.
 */
// Measured on this project's VM with every harness step timed: the widest gap was 33 ms (fileops
// and two-agent cases of 2-8 s), against 1,530 ms untimed around a full-copy create before; over
// the 4,250 gaps of the committed version 4 receipts (load below 1.0): median 0.1 ms, p99 2.2 ms,
// largest 9.9 ms. The limit was 100 ms + 1 % until issue 52, which let half of a 100 ms create be
// moved into overhead unseen.
export const PHASE_GAP_MS = 40;
export const PHASE_GAP_SHARE = 0.005;

/**
 * The widest gap a case of `r` may show between two phases: PHASE_GAP_MS + PHASE_GAP_SHARE of its
 * wall, times how oversubscribed the host was when the run started (its 1-minute load per core, at
 * least 1) when that load is trusted. Bookkeeping waits for a core like everything else: under a
 * load of 13-16 on 2 cores an honest proof receipt showed a gap about 130 ms past the quiet limit.
 * Only a signed payload's load is trusted (raising it to hide a gap shows as another signer); an
 * unsigned receipt is held to the quiet limit whatever load it records (issue 52: an unsigned
 * receipt holds no weaker than a signed one).
 */
export function phaseGapLimit(r: Pick<Receipt, 'host'>, wallMs: number, trustLoad = true): number {
  const load = trustLoad ? (r.host.loadAverage?.[0] ?? 0) : 0;
  const busy = Math.max(1, load / Math.max(1, r.host.cores));
  return (PHASE_GAP_MS + PHASE_GAP_SHARE * wallMs) * busy;
}

function phaseTimes(ctx: Ctx, c: CaseRecord, i: number): void {
  // A stopped case waits (untimed, up to its grace) for its in-process work before cleanup.
  if (c.outcome === 'timeout' || c.failures.some((f) => f.code === 'E_INTERRUPTED')) return;
  if (!c.phases.every((p) => typeof p.startMs === 'number')) return;
  const limit = phaseGapLimit(ctx.r, c.wallMs, ctx.trustLoad);
  let end = 0;
  c.phases.forEach((p, j) => {
    const start = p.startMs!;
    if (start + 1 < end)
      push(ctx, `/cases/${i}/phases/${j}/startMs`, start, `at least ${end}`, 'phases follow one another without overlap');
    else if (start - end > limit)
      push(
        ctx,
        `/cases/${i}/phases/${j}/startMs`,
        start,
        `at most ${Math.round(end + limit)}`,
        `at most ${PHASE_GAP_MS} ms + ${PHASE_GAP_SHARE * 100} % of the wall time (times the host's load per core above 1) between two phases (every harness step is timed)`,
      );
    end = Math.max(end, start + p.durationMs);
  });
  if (end > c.wallMs + 1) push(ctx, `/cases/${i}/wallMs`, c.wallMs, `at least ${end}`, 'the wall time holds every phase');
  else if (c.wallMs - end > limit)
    push(
      ctx,
      `/cases/${i}/wallMs`,
      c.wallMs,
      `at most ${Math.round(end + limit)}`,
      'the case ends soon after its last phase (every harness step is timed)',
    );
}
