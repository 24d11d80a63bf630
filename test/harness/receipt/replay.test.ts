// validate replays what ran: each coordinated edit (the summary adjusted to match) applied to a copy
// of a committed receipt is E_RECEIPT_INCONSISTENT naming the field, both values and the rule. The
// committed receipts carry no plan yet: validate replays them from the committed plan their
// planDigest names (and says so), and a copy that carries that plan itself is held to it the same way.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runBench } from '../../../harness/bench.js';
import { checkReceipt, receiptInconsistencies, type Inconsistency } from '../../../harness/receipt/consistency.js';
import { summarize } from '../../../harness/receipt/receipt.js';
import { phaseGapLimit } from '../../../harness/receipt/replay.js';
import { readReceiptFile } from '../../../harness/receipt/envelope.js';
import type { CaseRecord, Receipt } from '../../../harness/receipt/receipt-types.js';
import type { Plan } from '../../../harness/plan/plan.js';
import { cli, REPO_ROOT, tempDir } from '../../helpers/index.js';

const t = tempDir('pdb-replay-');
test.after(() => t.cleanup());

const read = (file: string): Receipt => readReceiptFile(join(REPO_ROOT, file)).document as Receipt;
/** 14 git-worktree cases, every one a mismatch; two workloads, fileops and two-agent. */
const DEFAULT = read('receipts/default-20261203T122827Z-99b0e8.json');
const DEFAULT_PLAN = JSON.parse(readFileSync(join(REPO_ROOT, 'plans/default.json'), 'utf8')) as Plan;

/** The summary as the editor would adjust it: counted again from the edited cases. */
function adjustSummary(r: Receipt): void {
  const unavailable = new Set(r.backends.filter((b) => !b.available).map((b) => b.name));
  const slots = r.blocks.flatMap((b) => b.order);
  r.summary = summarize(r.cases, slots.length, slots.filter((b) => unavailable.has(b)).length, r.summary.overheadByWorkload !== undefined);
}

const oracleOf = (c: CaseRecord) => c.checks.find((k) => k.name === 'oracle')!;
const okNonOracle = (r: Receipt) => r.cases.find((c) => c.outcome === 'ok' && c.backend !== 'full-copy' && oracleOf(c).evaluated)!;

/** An ok case rewritten from a mismatch: every failed check passed, no failure. */
function rewriteAsOk(c: CaseRecord): void {
  for (const k of c.checks)
    if (k.evaluated && !k.passed) Object.assign(k, { passed: true, mismatches: k.mismatches === null ? null : 0, counts: null, paths: [] });
  Object.assign(c, { outcome: 'ok', failure: null, failures: [] });
}

const EDITS: Array<{ name: string; edit: (r: Receipt) => void; pointer: RegExp }> = [
  {
    name: 'all 14 git-worktree cases deleted, the summary adjusted',
    edit: (r) => void (r.cases = r.cases.filter((c) => c.backend !== 'git-worktree')),
    pointer: /^\/cases$/,
  },
  {
    name: 'git-worktree deleted from the cases, the blocks and the backends too',
    edit: (r) => {
      r.cases = r.cases.filter((c) => c.backend !== 'git-worktree');
      r.backends = r.backends.filter((b) => b.name !== 'git-worktree');
      for (const b of r.blocks) b.order = b.order.filter((x) => x !== 'git-worktree');
      for (const c of r.cases) c.position = r.blocks[c.block]!.order.indexOf(c.backend);
    },
    pointer: /^\/(backends|blocks\/\d+\/order)$/,
  },
  {
    name: 'a mismatch case rewritten as ok',
    edit: (r) => rewriteAsOk(r.cases.find((c) => c.outcome === 'mismatch')!),
    pointer: /^\/cases\/\d+\/checks\/\d+\/passed$/,
  },
  {
    name: 'a case duplicated',
    edit: (r) => {
      const i = r.cases.findIndex((c) => c.backend === 'overlay');
      r.cases.splice(i + 1, 0, structuredClone(r.cases[i]!));
    },
    pointer: /^\/cases\/\d+\/id$/,
  },
  {
    name: 'an oracle check removed',
    edit: (r) => {
      const c = okNonOracle(r);
      c.checks = c.checks.filter((k) => k.name !== 'oracle');
      c.oracleSnapshot = null;
    },
    pointer: /^\/cases\/\d+\/checks$/,
  },
  {
    name: 'an oracle check set not-evaluated (the case then environment, as the harness would say)',
    edit: (r) => {
      const c = okNonOracle(r);
      const k = oracleOf(c);
      Object.assign(k, { evaluated: false, passed: false, mismatches: null, counts: null, detail: 'not judged' });
      delete k.files;
      delete k.filesHashed;
      delete k.scope;
      const failure = { code: 'E_ORACLE_UNAVAILABLE', phase: 'verify', message: 'not judged' };
      Object.assign(c, { oracleSnapshot: null, outcome: 'environment', failure, failures: [failure] });
    },
    pointer: /^\/cases\/\d+\/checks\/\d+\/evaluated$/,
  },
  {
    name: 'reference.caseId naming a case that does not exist',
    edit: (r) => void (oracleOf(okNonOracle(r)).reference!.caseId = 'b99-p0'),
    pointer: /^\/cases\/\d+\/checks\/\d+\/reference$/,
  },
  {
    name: 'an ok case whose oracleSnapshot differs from its result',
    edit: (r) => {
      const c = okNonOracle(r);
      c.oracleSnapshot = c.fixture.baseSnapshot;
    },
    pointer: /^\/cases\/\d+\/oracleSnapshot$/,
  },
  {
    name: 'an ok case whose result was changed (its oracle digest kept)',
    edit: (r) => void (okNonOracle(r).resultSnapshot = `sha256:${'0'.repeat(64)}`),
    pointer: /^\/cases\/\d+\/(checks\/\d+\/passed|projectedSnapshot)$/,
  },
  { name: 'filesHashed set to 0', edit: (r) => void (oracleOf(okNonOracle(r)).filesHashed!.case = 0), pointer: /filesHashed\/case$/ },
  {
    name: 'filesHashed above files',
    edit: (r) => void (oracleOf(okNonOracle(r)).filesHashed!.reference! += 5),
    pointer: /filesHashed\/reference$/,
  },
  { name: 'scope emptied', edit: (r) => void (oracleOf(okNonOracle(r)).scope = []), pointer: /\/scope$/ },
  { name: 'scope widened', edit: (r) => void (oracleOf(okNonOracle(r)).scope = ['source', 'installed', 'build']), pointer: /\/scope$/ },
  { name: 'the seed changed', edit: (r) => void (r.seed += 1), pointer: /^\/blocks\/\d+\/order$/ },
  { name: 'the commit removed, the checkout state kept', edit: (r) => void (r.provenance.commit = null), pointer: /^\/provenance$/ },
  {
    name: "a block's warm-up flag changed with its cases'",
    edit: (r) => {
      r.blocks[0]!.warmup = !r.blocks[0]!.warmup;
      for (const c of r.cases.filter((x) => x.block === 0)) c.warmup = r.blocks[0]!.warmup;
    },
    pointer: /^\/(blocks\/0\/warmup|cases\/\d+\/warmup)$/,
  },
  {
    name: "a workload's parameters changed in every case's fixture",
    edit: (r) => {
      for (const c of r.cases) if (c.workload === 'fileops') c.fixture.paramsDigest = `sha256:${'1'.repeat(64)}`;
    },
    pointer: /\/fixture\/paramsDigest$/,
  },
];

test('every committed receipt replays from its plan, and one without a committed plan says so', () => {
  // Every committed harness receipt: a version 3 one replays from the committed plan its digest
  // names; a version 4 one carries the plan it ran. The old (version 3) vite repository run, kept
  // as a fixture, has neither: its plan was made from the command line and not recorded.
  const files = readdirSync(join(REPO_ROOT, 'receipts')).filter((f) => f.endsWith('.json'));
  assert.ok(files.length >= 8, files.join(', '));
  for (const f of files) {
    const r = read(`receipts/${f}`);
    const c = checkReceipt(r);
    assert.equal(c.issues, [], f);
    if (r.schemaVersion >= 4) assert.is.not(c.plan.from, 'none', f);
    else assert.is(c.plan.from, 'committed', f);
  }
  const vite = checkReceipt(read('test/fixtures/receipts-no-plan/repo-vite-v3.json'));
  assert.equal(vite.issues, []);
  assert.is(vite.plan.from, 'none');
  const r = cli([
    'validate',
    join(REPO_ROOT, 'receipts/lanes-blocks-20261201T132431Z-ea3a69.json'),
    join(REPO_ROOT, 'test/fixtures/receipts-no-plan/repo-vite-v3.json'),
  ]);
  assert.is(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, 'replayed from plans/lanes-blocks.json');
  assert.match(r.stdout, 'no plan: schedule not replayed');
  const strict = cli(['validate', '--require-plan', join(REPO_ROOT, 'test/fixtures/receipts-no-plan/repo-vite-v3.json')]);
  assert.is(strict.code, 1, strict.stdout);
});

const write = (name: string, r: Receipt): string => {
  const file = join(t.dir, `${name.replace(/[^a-z0-9]+/gi, '-')}.json`);
  writeFileSync(file, JSON.stringify(r, null, 2));
  return file;
};

const shown = (issues: Inconsistency[]) => issues.map((i) => `${i.pointer}: ${i.rule}`).join('\n');

for (const { name, edit, pointer } of EDITS) {
  test(`a copy of a committed receipt with ${name} fails validate`, () => {
    // As committed (the plan looked up by digest), and carrying the plan its digest names.
    for (const carry of [false, true]) {
      const r = structuredClone(DEFAULT);
      if (carry) r.plan = DEFAULT_PLAN;
      edit(r);
      adjustSummary(r);
      const issues = receiptInconsistencies(r);
      assert.ok(
        issues.some((i) => pointer.test(i.pointer)),
        `${carry ? 'with' : 'without'} the plan, expected ${pointer}:\n${shown(issues)}`,
      );
      assert.ok(
        issues.every((i) => i.rule.length > 0),
        'every inconsistency names its rule',
      );
    }
  });
}

test('validate names the field, both values and the rule', () => {
  const r = structuredClone(DEFAULT);
  r.cases = r.cases.filter((c) => c.backend !== 'git-worktree');
  adjustSummary(r);
  const out = cli(['validate', write('deleted', r), '--json']);
  assert.is(out.code, 1, out.stdout);
  const doc = JSON.parse(out.stdout) as { files: { problems: { pointer: string; message: string }[] }[] };
  const p = doc.files[0]!.problems.find((x) => x.pointer === '/cases')!;
  assert.ok(p, out.stdout);
  assert.match(
    p.message,
    /^E_RECEIPT_INCONSISTENT: recorded "no case b\d+-p\d+", recomputed "case b\d+-p\d+ \(git-worktree, [a-z-]+\)" \(rule: every scheduled case/,
  );
});

test('a carried plan must hash to the planDigest', () => {
  const r = structuredClone(DEFAULT);
  r.plan = { ...DEFAULT_PLAN, blocks: DEFAULT_PLAN.blocks - 1 };
  const issues = receiptInconsistencies(r);
  assert.ok(
    issues.some((i) => i.pointer === '/planDigest'),
    shown(issues),
  );
});

test('report refuses a coordinated edit too', () => {
  const r = structuredClone(DEFAULT);
  rewriteAsOk(r.cases.find((c) => c.outcome === 'mismatch')!);
  adjustSummary(r);
  const out = cli(['report', write('report', r), '--out', join(t.dir, 'report-out'), '--json']);
  assert.is.not(out.code, 0);
  assert.match(out.stdout + out.stderr, 'E_RECEIPT_INCONSISTENT');
});

// Half of a case's create time moved into its overhead keeps the wall time, the sum of its phases and
// the overhead rule intact. Since version 4 every harness step of a case is a timed phase with its
// start recorded, so the time moved out of create leaves a gap between two phases that no harness
// step fills. (A version 3 receipt records no phase starts: there only its signature can tell.)
test("a phase's time moved into overheadMs (half of a create, in the audit) leaves a gap between phases (version 4 on)", async () => {
  const plan = {
    kind: 'pdb-env-plan',
    name: 'replay-create',
    backends: ['full-copy'],
    workloads: [{ name: 'fileops', params: { smallFiles: 2500, largeFileBytes: 24 * 1024 * 1024, newSmallFiles: 100 } }],
    blocks: 1,
    warmupBlocks: 0,
    seed: 3,
    caseTimeoutMs: 600_000,
  } as Plan;
  const { receipt } = await runBench({ plan, outDir: join(t.dir, 'bench'), storeParent: t.dir, allowStaleBuild: true });
  assert.equal(receiptInconsistencies(receipt), [], 'as written');
  const r = structuredClone(receipt);
  const c = r.cases[0]!;
  // The audit moved half of a create; here the create may be short (156 ms on a quiet VM), so the
  // time is taken from the longest phase, at least the rule's limit and at most the phase.
  const limit = phaseGapLimit(r, c.wallMs);
  const create = c.phases.slice(0, -1).sort((a, b) => b.durationMs - a.durationMs)[0]!;
  const moved = Math.min(create.durationMs, Math.max(create.durationMs / 2, limit + 10));
  assert.ok(moved > limit, `${create.name} (${create.durationMs} ms) is long enough to show the rule`);
  create.durationMs -= moved;
  c.overheadMs += moved;
  adjustSummary(r);
  const issues = receiptInconsistencies(r);
  assert.ok(
    issues.some((i) => /^\/cases\/0\/phases\/\d+\/startMs$/.test(i.pointer) && /between two phases/.test(i.rule)),
    shown(issues),
  );
  // Shifting the phases after it to close the gap leaves it at the end instead.
  const j = c.phases.indexOf(create);
  for (const p of c.phases.slice(j + 1)) p.startMs! -= moved;
  const shifted = receiptInconsistencies(r);
  assert.ok(
    shifted.some((i) => i.pointer === '/cases/0/wallMs'),
    shown(shifted),
  );
});

test('the gap allowed between phases grows with the load per core a signed run started under, never below the quiet limit', () => {
  const host = (load: number, cores: number) => ({ host: { loadAverage: [load, load, load], cores } }) as never;
  assert.is(phaseGapLimit(host(0.4, 2), 3000), 55);
  assert.is(phaseGapLimit(host(2, 2), 3000), 55, 'one runnable task per core is still quiet');
  assert.is(phaseGapLimit(host(14, 2), 3000), 385, 'a load of 14 on 2 cores: 7x');
  assert.is(phaseGapLimit(host(14, 2), 3000, false), 55, 'unsigned: the load it records widens nothing');
});

test.run();
