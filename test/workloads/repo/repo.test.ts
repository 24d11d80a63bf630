// The repo workload on a generated repository, through the harness: steps to their exit with CPU,
// RSS and exit code; a watcher measured to its milestone, then an edit it reports; a server
// measured to an HTTP milestone, then an edit it serves; a failing step; a timeout; volatile
// caches dropped and counted; the source named only by its label; and git-worktree's dropped .env
// shown as a mismatch with its path.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runBench } from '../../../harness/bench.js';
import type { CaseRecord } from '../../../harness/receipt/receipt-types.js';
import { repoWorkload } from '../../../workloads/repo/repo.js';
import { repoParamIssues } from '../../../workloads/repo/params.js';
import { hasCommand, skipPart, tempDir } from '../../helpers/index.js';
import { isAlive } from '../../helpers/bench-workloads.js';
import { makeRepo, repoPlan } from '../../helpers/repo-fixture.js';
import { readReceiptFile } from '../../../harness/receipt/envelope.js';

const phase = (c: CaseRecord, name: string) => c.phases.find((p) => p.name === name);
const check = (c: CaseRecord, name: string) => c.checks.find((k) => k.name === name);

test('parameters: every problem is named with its pointer, before any filesystem work', () => {
  const params = (over: Record<string, unknown>) => ({ ...repoWorkload.defaultParams, source: '${SOURCE}', ...over });
  assert.equal(repoParamIssues(params({ steps: [{ name: 'build', run: 'make' }] })), []);
  const issues = repoParamIssues(
    params({
      source: '',
      label: 'has space',
      steps: [
        { name: 'build', run: 'make', extra: 1 },
        { name: 'build', run: ' ' },
        { name: 'w', run: 'x', milestone: { output: '(' } },
        { name: 'e', run: 'x', edit: { path: '../out', content: 'a', append: 'b', then: { output: 'ok' } } },
        { name: 'h', run: 'x', expectExit: 300, milestone: { http: { path: 'no-slash', status: 99 } } },
      ],
      volatile: ['/abs/**', 'ok/**'],
    }),
  ).map((i) => i.pointer);
  assert.equal(issues, [
    '/source',
    '/label',
    '/steps/0/extra',
    '/steps/1/name',
    '/steps/1/run',
    '/steps/2/milestone/output',
    '/steps/3/edit',
    '/steps/3/edit/path',
    '/steps/3/edit',
    '/steps/4/expectExit',
    '/steps/4/expectExit',
    '/steps/4/milestone/http/path',
    '/steps/4/milestone/http/status',
    '/volatile/0',
  ]);
  assert.equal(
    repoParamIssues(params({ steps: [] })).map((i) => i.pointer),
    ['/steps'],
  );
});

test('a generated repository: timed steps, a watcher and a server to their milestones and edits, volatile caches dropped; git-worktree is a mismatch at .env', async () => {
  const t = tempDir();
  try {
    const git = hasCommand('git');
    if (!git) skipPart('repo workload: git-worktree drops .env', 'git', 'git is not installed');
    const source = makeRepo(join(t.dir, 'my-app'), { git });
    const plan = repoPlan(
      'repo-gen',
      [
        { name: 'build', run: 'mkdir -p dist node_modules/.cache && cp lib/a.js dist/a.js && date +%s%N > node_modules/.cache/stamp' },
        {
          name: 'watch',
          run: 'node watch.mjs',
          timeoutMs: 20_000,
          milestone: { output: '^watching lib' },
          edit: { path: 'lib/a.js', content: 'export const a = 2;\n', then: { output: 'saw: export const a = 2;' } },
        },
        {
          name: 'serve',
          run: 'exec node serve.mjs',
          timeoutMs: 20_000,
          milestone: { http: { path: '/health' } },
          edit: { path: 'lib/a.js', append: '// served\n', then: { httpChange: '/a' } },
        },
      ],
      { backends: git ? ['full-copy', 'git-worktree'] : ['full-copy'] },
    );
    const { receipt, receiptPath } = await runBench({ plan, outDir: join(t.dir, 'out'), storeParent: t.dir, vars: { SOURCE: source } });
    const full = receipt.cases.find((c) => c.backend === 'full-copy')!;
    assert.is(full.outcome, 'ok', JSON.stringify(full.failures));
    assert.is(full.fixture.name, 'my-app', "the source is named by its folder's base name");
    assert.is(phase(full, 'step:build')?.exitCode, 0);
    for (const name of ['step:watch', 'step:serve']) {
      const m = phase(full, name)!.milestones;
      assert.ok(m.readyMs! >= 0 && m.editObservedMs! >= 0, `${name}: ${JSON.stringify(m)}`);
    }
    assert.equal(full.projection?.dropped, [{ pattern: '**/node_modules/.cache/**', entries: 3 }], 'the cache dir, its file and the stamp');
    assert.is(check(full, 'created-tree')?.passed, true);
    if (existsSync('/proc/self/clear_refs')) {
      assert.is(receipt.harness?.method, 'vmhwm-reset');
      assert.ok(full.phases.every((p) => typeof p.harnessPeakRssBytes === 'number' && p.harnessPeakRssBytes > 0));
      assert.equal(
        receipt.harness?.phases.map((p) => p.name),
        ['prepare', 'siblings', 'oracle'],
      );
    }
    const text = JSON.stringify(readReceiptFile(receiptPath).document); // the signed payload, not its base64
    assert.not.ok(text.includes(t.dir), 'the receipt never holds the source path');
    assert.not.ok(text.includes('serve.mjs'), 'nor the command lines');
    if (git) {
      const wt = receipt.cases.find((c) => c.backend === 'git-worktree')!;
      assert.is(wt.outcome, 'mismatch', JSON.stringify(wt.failures));
      assert.equal(check(wt, 'oracle')?.paths, ['.env'], 'the cache is volatile; the untracked .env is what differs');
      assert.equal(check(wt, 'oracle')?.reference, { backend: 'full-copy', caseId: full.id });
      assert.ok(check(wt, 'created-tree')?.paths.includes('.env'));
      assert.is(wt.failure?.code, 'E_TREE_NOT_REPRODUCED');
    }
  } finally {
    t.cleanup();
  }
});

test('a failing step fails the case with its exit code and output; an expected exit code passes', async () => {
  const t = tempDir();
  try {
    const source = makeRepo(join(t.dir, 'src'), { git: false });
    const failing = repoPlan('repo-fail', [
      { name: 'fails', run: 'echo boom >&2; exit 3' },
      { name: 'never', run: 'touch never-ran' },
    ]);
    const r1 = (await runBench({ plan: failing, outDir: join(t.dir, 'out'), storeParent: t.dir, vars: { SOURCE: source } })).receipt;
    const c = r1.cases[0]!;
    assert.is(c.outcome, 'failed');
    assert.is(c.failure?.code, 'E_STEP_FAILED');
    assert.is(c.failure?.phase, 'step:fails');
    assert.match(c.failure?.message ?? '', /exited 3, expected 0: boom/);
    assert.equal([phase(c, 'step:fails')?.outcome, phase(c, 'step:fails')?.exitCode], ['failed', 3], 'the failed step keeps its exit code');
    assert.is(phase(c, 'step:never'), undefined, 'the steps stop at the first failure');

    const expected = repoPlan('repo-exit', [{ name: 'fails', run: 'exit 3', expectExit: 3 }]);
    const r2 = (await runBench({ plan: expected, outDir: join(t.dir, 'out2'), storeParent: t.dir, vars: { SOURCE: source } })).receipt;
    assert.is(r2.cases[0]!.outcome, 'ok', JSON.stringify(r2.cases[0]!.failures));
  } finally {
    t.cleanup();
  }
});

test('a timeout is an outcome: a step that runs too long, and a milestone never reached, are killed and recorded', async () => {
  const t = tempDir();
  try {
    const source = makeRepo(join(t.dir, 'src'), { git: false });
    const pidFile = join(t.dir, 'sleep.pid');
    const hang = repoPlan('repo-hang', [{ name: 'hang', run: `echo $$ > '${pidFile}'; exec sleep 30`, timeoutMs: 1000 }]);
    const r1 = (await runBench({ plan: hang, outDir: join(t.dir, 'out'), storeParent: t.dir, vars: { SOURCE: source } })).receipt;
    assert.equal([r1.cases[0]!.outcome, r1.cases[0]!.failure?.code, r1.cases[0]!.failure?.phase], ['timeout', 'E_TIMEOUT', 'step:hang']);
    assert.not.ok(isAlive(Number(readFileSync(pidFile, 'utf8'))), 'the step was killed');
    assert.is(check(r1.cases[0]!, 'cleanup')?.passed, true);

    const never = repoPlan('repo-never', [
      { name: 'watch', run: 'node watch.mjs', timeoutMs: 1500, milestone: { output: 'never printed' } },
    ]);
    const r2 = (await runBench({ plan: never, outDir: join(t.dir, 'out2'), storeParent: t.dir, vars: { SOURCE: source } })).receipt;
    const c = r2.cases[0]!;
    assert.equal([c.outcome, c.failure?.code], ['timeout', 'E_TIMEOUT']);
    assert.match(c.failure?.message ?? '', /watching lib/, 'the message quotes what the process did print');
    assert.is(check(c, 'cleanup')?.passed, true, 'the watcher is gone');
  } finally {
    t.cleanup();
  }
});

test('a source that does not exist, or a placeholder without a value, fails before any case', async () => {
  const t = tempDir();
  try {
    const plan = repoPlan('repo-missing', [{ name: 'x', run: 'true' }]);
    await runBench({ plan, outDir: join(t.dir, 'out'), storeParent: t.dir }).then(
      () => assert.unreachable(),
      (err) => assert.match(String(err), /needs a value for \$\{SOURCE\}/),
    );
    await runBench({ plan, outDir: join(t.dir, 'out'), storeParent: t.dir, vars: { SOURCE: join(t.dir, 'nope') } }).then(
      () => assert.unreachable(),
      (err) => assert.is((err as { code?: string }).code, 'E_SOURCE_MISSING'),
    );
  } finally {
    t.cleanup();
  }
});

test.run();
