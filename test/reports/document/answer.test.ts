// The proof's closing answer from a small receipt: one line per workload with the words of
// report.md's first table (the same answers, the same fastestText: no second computation), the
// correct and not-correct backends, what could not run said once, and a git-worktree that only
// mismatched called expected by the same rule the bench's Markdown summary follows.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isExpectedMismatch, partialBackends, EXPECTED_MISMATCH_WHY } from '../../../harness/receipt/expected-mismatch.js';
import type { Receipt } from '../../../harness/receipt/receipt-types.js';
import { receiptMarkdown } from '../../../harness/receipt/summary-markdown.js';
import { analyzeReceipts } from '../../../reports/analysis/analyze.js';
import { closingLines, fastestText } from '../../../reports/document/answer.js';
import { buildDocument } from '../../../reports/document/document.js';
import { renderMarkdown } from '../../../reports/render/render.js';
import { syntheticReceipt } from '../../helpers/synthetic-receipts.js';

/** full-copy, overlay (half its create time) and git-worktree, whose every case mismatched; agentfs cannot run. */
function smallReceipt(): Receipt {
  const r = syntheticReceipt({
    runId: '20260101T000000Z-c1a5e0',
    backends: ['full-copy', 'overlay', 'git-worktree'],
    workloads: ['fileops', 'two-agent'],
    blocks: 7,
    warmupBlocks: 1,
    createMs: { 'full-copy': 2000, overlay: 200, 'git-worktree': 300 },
    noise: 0.02,
    unavailable: [{ name: 'agentfs', reason: 'E_AGENTFS_MISSING' }],
    mutate: (c) => {
      if (c.backend !== 'git-worktree') return;
      const oracle = c.checks.find((k) => k.name === 'oracle')!;
      Object.assign(oracle, { passed: false, mismatches: 2, paths: ['kinds/empty', '.env'] });
      c.outcome = 'mismatch';
      c.failure = { code: 'E_ORACLE_MISMATCH', phase: 'oracle', message: '2 entries differ' } as NonNullable<typeof c.failure>;
      c.failures = [c.failure];
    },
  });
  const wt = r.backends.find((b) => b.name === 'git-worktree')!;
  wt.capabilities = { ...wt.capabilities!, carriesFullSnapshot: false };
  return r;
}

test('closingLines: per workload the fastest correct backend, in the words of the first table; git-worktree not correct, expected', () => {
  const receipt = smallReceipt();
  const data = analyzeReceipts([receipt]);
  const partial = partialBackends(receipt);
  const expected = (at: { workload: string }, backend: string) =>
    receipt.cases
      .filter((c) => c.backend === backend && c.workload === at.workload && c.outcome !== 'ok')
      .every((c) => isExpectedMismatch(partial, c));
  const lines = closingLines(data.answers, data.baseline, expected, EXPECTED_MISMATCH_WHY);
  assert.ok(lines.length <= 24, `one screen: ${lines.length} lines`);
  assert.match(lines[0]!, /^answer \(the first table of report\.md/);
  const fileops = lines.find((l) => l.startsWith('  fileops '))!;
  assert.match(
    fileops,
    /^ {2}fileops \(fileops-small@1\): overlay: 0\.\d{3}x full-copy's whole-case time, 95% CI 0\.\d{3}-0\.\d{3}, 6 blocks$/,
  );
  assert.ok(lines.some((l) => l.startsWith('  two-agent (two-agent-small@1): ')));
  // Every answer line is the table's own cell: report.md holds the very same text.
  const md = renderMarkdown({ data, gate: null, policy: null }).markdown;
  for (const a of data.answers) {
    const cell = fastestText(a, data.baseline);
    assert.ok(md.includes(`| ${cell} |`), `report.md's first table holds "${cell}"`);
    assert.ok(lines.includes(`  ${a.workload} (${a.fixture}): ${cell}`));
  }
  const standing = lines[lines.indexOf(fileops) + 1]!;
  assert.match(
    standing,
    /^ {4}correct: full-copy, overlay; not correct: git-worktree \(6 mismatch, expected: it does not carry the whole tree/,
  );
  assert.is(lines.at(-1), '  cannot run here: agentfs (E_AGENTFS_MISSING)', 'said once, last');
  assert.is(lines.filter((l) => l.includes('agentfs')).length, 1);
});

test('closingLines: a not-correct backend with a failure is not called expected; nothing ran says so', () => {
  const receipt = smallReceipt();
  const data = analyzeReceipts([receipt]);
  const lines = closingLines(data.answers, data.baseline, () => false, EXPECTED_MISMATCH_WHY);
  assert.not.ok(lines.some((l) => l.includes('expected')));
  assert.equal(closingLines([], 'full-copy'), ['answer: no case ran']);
});

test('the Markdown summary follows the same rule: git-worktree mismatches are expected, never FAIL; the rule is the capability', () => {
  const receipt = smallReceipt();
  const md = receiptMarkdown(receipt);
  assert.not.ok(md.includes('**FAIL**'), md);
  assert.match(md, /\| oracle \| - \| 7 \/ 7 \| 0 \/ 7 \(7 expected\) \|/);
  assert.match(md, /mismatch \(expected: it does not carry the whole tree/);
  // The counts as the proof's end says them: planned = ran + unavailable, ran being the progress line's M.
  const [, planned, ran, unavailable] = md.match(/Cases: (\d+) planned, (\d+) ran \(.*\), (\d+) unavailable/) ?? [];
  assert.equal([Number(planned), Number(ran), Number(unavailable)], [56, 42, 14]);
  // The rule is the capability, not the name: git-worktree declared as carrying the full tree fails.
  receipt.backends.find((b) => b.name === 'git-worktree')!.capabilities!.carriesFullSnapshot = true;
  assert.match(receiptMarkdown(receipt), /0 \/ 7 \*\*FAIL\*\*/);
});

test('the ratio chart leaves out a backend judged not correct; its rows stay in the comparison table', () => {
  const data = analyzeReceipts([smallReceipt()]);
  const blocks = buildDocument({ data, gate: null, policy: null });
  const chart = blocks.find((b) => b.kind === 'chart' && b.name.startsWith('ratio-'));
  assert.ok(chart && chart.kind === 'chart');
  assert.ok(chart.svg.includes('overlay · fileops-small@1'), 'a correct backend is drawn');
  assert.not.ok(chart.svg.includes('git-worktree ·'), 'git-worktree, not correct here, is not drawn');
  const tables = blocks.filter((b) => b.kind === 'table').flatMap((b) => (b.kind === 'table' ? b.rows : []));
  assert.ok(
    tables.some((r) => r[0] === 'git-worktree' && r.includes('fileops')),
    'its comparison rows remain',
  );
});

test.run();
