// The one-line bench: the plan it builds (full-copy always in it, the source a ${SOURCE} placeholder,
// path-free), its usage errors, and a run end to end on a generated repository through the CLI
// (receipt, report, the answer printed, git-worktree a mismatch with its first paths); and validate
// judging plans exactly as bench does.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { planVarNames, parseVarArgs, requirePlanVars, resolvePlanVars } from '../../../harness/plan/plan-vars.js';
import { checkPlan } from '../../../harness/plan/plan.js';
import { buildRepoPlan, parseBackendList, parseStepArgs } from '../../../harness/plan/repo-plan.js';
import { findPathIssues } from '../../../harness/receipt/path-free.js';
import type { Receipt } from '../../../harness/receipt/receipt-types.js';
import { receiptInconsistencies } from '../../../harness/receipt/consistency.js';
import { WORKLOADS } from '../../../workloads/registry.js';
import type { Workload } from '../../../workloads/types.js';
import { cli, hasCommand, skipPart, tempDir } from '../../helpers/index.js';
import { makeRepo } from '../../helpers/repo-fixture.js';
import { readReceiptFile } from '../../../harness/receipt/envelope.js';

const workloads = WORKLOADS as Record<string, Workload>;

test('the plan: full-copy first, the source as ${SOURCE}, the label, default volatile caches plus the given ones', () => {
  const plan = buildRepoPlan(
    {
      sourceDir: '/somewhere/my app',
      steps: ['install=npm ci', 'test=npm test'],
      backends: ['overlay'],
      blocks: 2,
      seed: 5,
      volatile: ['out/**'],
    },
    workloads,
  );
  assert.equal(plan.backends, ['full-copy', 'overlay']);
  assert.is(plan.name, 'repo-my-app');
  assert.equal([plan.blocks, plan.warmupBlocks, plan.seed], [2, 0, 5]);
  const params = plan.workloads[0]!.params as Record<string, any>;
  assert.is(params.source, '${SOURCE}');
  assert.is(params.label, 'my-app');
  assert.equal(params.steps, [
    { name: 'install', run: 'npm ci' },
    { name: 'test', run: 'npm test' },
  ]);
  assert.ok(params.volatile.includes('**/*.tsbuildinfo') && params.volatile.at(-1) === 'out/**');
  assert.equal(findPathIssues(plan), [], 'the plan is path-free');
  assert.equal(planVarNames(plan), ['SOURCE']);
  assert.is(plan.caseTimeoutMs, 2 * 600_000 + 30 * 60_000);
});

test('usage errors: steps, backends and vars are checked before any run', () => {
  const code = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      return (err as { code?: string }).code;
    }
    return 'none';
  };
  assert.is(
    code(() => parseStepArgs([])),
    'E_USAGE',
  );
  assert.is(
    code(() => parseStepArgs(['no-equals'])),
    'E_USAGE',
  );
  assert.is(
    code(() => parseStepArgs(['bad name=x'])),
    'E_USAGE',
  );
  assert.is(
    code(() => parseStepArgs(['ok='])),
    'E_USAGE',
  );
  assert.equal(parseStepArgs(['a=b=c'], 1000), [{ name: 'a', run: 'b=c', timeoutMs: 1000 }]);
  assert.is(
    code(() => parseBackendList('full-copy,nope')),
    'E_BACKEND_UNKNOWN',
  );
  assert.equal(parseBackendList('overlay, full-copy,overlay'), ['overlay', 'full-copy']);
  assert.equal(parseVarArgs(['SOURCE=/a=b', 'X=']), { SOURCE: '/a=b', X: '' });
  assert.is(
    code(() => parseVarArgs(['1X=a'])),
    'E_USAGE',
  );
  const plan = { workloads: [{ name: 'repo', params: { source: '${SOURCE}', label: '${LABEL}x', steps: [] } }] };
  assert.is(
    code(() => requirePlanVars(plan, { SOURCE: '/s' })),
    'E_USAGE',
  );
  assert.equal(resolvePlanVars(plan.workloads[0]!.params, { SOURCE: '/s', LABEL: 'l' }), { source: '/s', label: 'lx', steps: [] });
});

test('validate and bench judge a plan by one function: the same problem, the same pointer', () => {
  const t = tempDir();
  try {
    const bad = {
      kind: 'pdb-env-plan',
      name: 'bad',
      backends: ['full-copy'],
      workloads: [{ name: 'repo', params: { source: '${SOURCE}', steps: [{ name: 'w', run: 'x', milestone: { output: '(' } }] } }],
      blocks: 1,
      warmupBlocks: 0,
      seed: 1,
      caseTimeoutMs: 1000,
    };
    const file = join(t.dir, 'bad.json');
    writeFileSync(file, JSON.stringify(bad));
    const v = cli(['validate', file]);
    assert.is(v.code, 1);
    assert.match(v.stdout, '/workloads/0/params/steps/0/milestone/output is not a valid regular expression');
    const b = cli(['bench', '--plan', file, '--source', t.dir, '--out', join(t.dir, 'out'), '--store', t.dir]);
    assert.is(b.code, 1);
    assert.match(b.stderr, 'E_PLAN_INVALID: /workloads/0/params/steps/0/milestone/output: is not a valid regular expression');
    assert.throws(() => checkPlan({ ...bad, workloads: [{ name: 'repos' }] }, workloads), /unknown workload "repos"/);
    writeFileSync(file, JSON.stringify({ ...bad, workloads: [{ name: 'repos' }] }));
    assert.match(cli(['validate', file]).stdout, '/workloads/0/name unknown workload "repos"');
  } finally {
    t.cleanup();
  }
});

test('bench --source DIR --step ...: a receipt, a report, the answer, git-worktree a mismatch at .env; the saved plan runs again', () => {
  const t = tempDir();
  try {
    const git = hasCommand('git');
    if (!git) skipPart('one-line bench: git-worktree', 'git', 'git is not installed');
    const source = makeRepo(join(t.dir, 'web'), { git });
    const out = join(t.dir, 'out');
    const planOut = join(t.dir, 'saved-plan.json');
    const backends = git ? 'full-copy,git-worktree' : 'full-copy';
    const steps = ['--step', 'build=mkdir -p dist && cp lib/a.js dist/', '--step', "edit=echo '// edited' >> lib/a.js"];
    const args = ['bench', '--source', source, ...steps, '--backends', backends, '--blocks', '1', '--out', out, '--store', t.dir];
    const r = cli([...args, '--plan-out', planOut, '--json']);
    assert.is(r.code, git ? 1 : 0, r.stderr.slice(-1500));
    const doc = JSON.parse(r.stdout);
    const receipt = readReceiptFile(doc.receipt).document as Receipt;
    assert.ok(readFileSync(join(doc.report.dir, 'report.md'), 'utf8').includes('What the evidence says'));
    assert.match(doc.report.answer[0], /^web \(repo\) on T1: fastest correct here: full-copy: /);
    assert.is(receipt.cases.find((c) => c.backend === 'full-copy')?.outcome, 'ok');
    if (git) {
      assert.equal(
        doc.summary.mismatches.map((m: { backend: string; paths: string[] }) => [m.backend, m.paths[0]]),
        [['git-worktree', '.env']],
      );
      const text = cli(args);
      assert.match(text.stdout, /mismatch: git-worktree case b0-p\d: \d+ entries differ from full-copy, first: \.env/);
      assert.match(text.stdout, /not correct: git-worktree \(1 mismatch\)/);
    }
    assert.not.ok(JSON.stringify(readReceiptFile(doc.receipt).document).includes(t.dir), 'no path in the receipt');
    // The generated plan is kept in the receipt: its digest and its order replay from the receipt alone.
    assert.is(receipt.plan?.workloads[0]?.params?.source, '${SOURCE}');
    assert.equal(receiptInconsistencies(receipt), []);
    const replayed = cli(['validate', '--require-plan', doc.receipt]);
    assert.is(replayed.code, 0, replayed.stdout + replayed.stderr);
    assert.not.match(replayed.stdout, 'no plan');

    const saved = readFileSync(planOut, 'utf8');
    assert.not.ok(saved.includes(t.dir), 'the saved plan names the source as ${SOURCE}');
    assert.match(cli(['validate', planOut]).stdout, /^ok /);
    const again = cli(['bench', '--plan', planOut, '--source', source, '--out', join(t.dir, 'out2'), '--store', t.dir, '--json']);
    assert.is(JSON.parse(again.stdout).summary.ok, 1, again.stderr.slice(-1500));
  } finally {
    t.cleanup();
  }
});

test('one-line options without --step, and --step without --source, are usage errors', () => {
  assert.is(cli(['bench', '--plan', 'plans/default.json', '--backends', 'overlay']).code, 2);
  assert.match(cli(['bench', '--plan', 'plans/default.json', '--blocks', '2']).stderr, /--blocks belongs to the one-line bench/);
  const r = cli(['bench', '--step', 'x=true']);
  assert.is(r.code, 2);
  assert.match(r.stderr, /--step needs --source DIR/);
  assert.is(cli(['bench', '--source', '.', '--step', 'x=true', '--plan', 'plans/default.json']).code, 2);
});

test.run();
