// validate recomputes: a receipt whose derived fields were edited (the summary, a case's wall time,
// its overhead, a check's verdict, where a case sits in its block) is E_RECEIPT_INCONSISTENT naming
// the field and both values; the untouched receipt passes, and report refuses the edited one too.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runBench } from '../../../harness/bench.js';
import { receiptInconsistencies } from '../../../harness/receipt/consistency.js';
import type { Receipt } from '../../../harness/receipt/receipt-types.js';
import { cli, tempDir } from '../../helpers/index.js';
import { base, workloads } from '../../helpers/bench-workloads.js';
import { readReceiptFile } from '../../../harness/receipt/envelope.js';

const t = tempDir('pdb-consistency-');
test.after(() => t.cleanup());

let receiptPath = '';
let original: Receipt;

test.before(async () => {
  const plan = base({ name: 'consistency', backends: ['full-copy', 'overlay'], workloads: [{ name: 'test-count' }], blocks: 2 });
  const r = await runBench({ plan, outDir: join(t.dir, 'out'), storeParent: t.dir, workloads });
  receiptPath = r.receiptPath;
  original = readReceiptFile(receiptPath).document as Receipt;
});

const edited = (name: string, edit: (r: Receipt) => void): string => {
  const r = structuredClone(original);
  edit(r);
  const file = join(t.dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(r, null, 2));
  return file;
};

test('the receipt as written is consistent, and validate says ok', () => {
  assert.equal(receiptInconsistencies(original), []);
  const r = cli(['validate', receiptPath]);
  assert.is(r.code, 0, r.stdout + r.stderr);
});

test('a host clock stepped forward during a case (its finishedAt and every later time 36 s later) is not an edit', () => {
  const r = structuredClone(original);
  const later = (iso: string) => new Date(Date.parse(iso) + 36_000).toISOString();
  const c = r.cases[0]!;
  // A clock step moves every UTC time read after it: this case's end, the later cases, the run's end.
  for (const x of r.cases)
    if (x !== c && Date.parse(x.startedAt) >= Date.parse(c.finishedAt))
      [x.startedAt, x.finishedAt] = [later(x.startedAt), later(x.finishedAt)];
  c.finishedAt = later(c.finishedAt);
  r.finishedAt = later(r.finishedAt);
  assert.equal(receiptInconsistencies(r), []);
});

const EDITS: Array<[string, (r: Receipt) => void, string]> = [
  ['summary-ok', (r) => (r.summary.ok = 999), '/summary/ok'],
  ['summary-oracle', (r) => (r.summary.oracleMismatches = 3), '/summary/oracleMismatches'],
  ['wall', (r) => (r.cases[0]!.wallMs = 1), '/cases/0/wallMs'],
  ['wall-up', (r) => (r.cases[0]!.wallMs += 60_000), '/cases/0/wallMs'],
  ['overhead', (r) => (r.cases[1]!.overheadMs += 500), '/cases/1/overheadMs'],
  [
    'verdict',
    (r) => {
      const k = r.cases.find((c) => c.backend === 'overlay')!.checks.find((x) => x.name === 'oracle')!;
      k.mismatches = 2;
      k.counts = { content: 2, mode: 0, symlink: 0, missing: 0, extra: 0, kind: 0 };
    },
    '/passed',
  ],
  ['position', (r) => (r.cases[0]!.backend = r.cases[0]!.backend === 'overlay' ? 'full-copy' : 'overlay'), '/cases/0/position'],
];

for (const [name, edit, pointer] of EDITS) {
  test(`an edited receipt (${name}) is E_RECEIPT_INCONSISTENT naming ${pointer} and both values`, () => {
    const file = edited(name, edit);
    const issues = receiptInconsistencies(JSON.parse(readFileSync(file, 'utf8')) as Receipt);
    assert.ok(
      issues.some((i) => i.pointer.endsWith(pointer) || i.pointer === pointer),
      JSON.stringify(issues),
    );
    const r = cli(['validate', file, '--json']);
    assert.is(r.code, 1, r.stdout);
    const doc = JSON.parse(r.stdout) as { files: { problems: { pointer: string; message: string }[] }[] };
    const problem = doc.files[0]!.problems.find((p) => p.message.startsWith('E_RECEIPT_INCONSISTENT'));
    assert.ok(problem, r.stdout);
    assert.match(problem!.message, /recorded .* recomputed /);
  });
}

test('report refuses an edited receipt with E_RECEIPT_INCONSISTENT', () => {
  const file = edited('for-report', (r) => (r.summary.ok = 999));
  const r = cli(['report', file, '--out', join(t.dir, 'report'), '--json']);
  assert.is.not(r.code, 0);
  assert.match(r.stdout + r.stderr, 'E_RECEIPT_INCONSISTENT');
  assert.match(r.stdout + r.stderr, '/summary/ok is 999, recomputed');
});

test.run();
