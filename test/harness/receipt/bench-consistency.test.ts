// A benchmark receipt's derived figures recomputed from its samples: every committed one agrees, and
// an edited ratio, median or goal verdict (alone, or with what follows from it) fails validate.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { benchReceiptInconsistencies, type BenchReceiptFigures } from '../../../harness/receipt/bench-consistency.js';
import { readReceiptFile } from '../../../harness/receipt/envelope.js';
import { cli, REPO_ROOT, tempDir } from '../../helpers/index.js';

const t = tempDir('pdb-bench-consistency-');
test.after(() => t.cleanup());

const DIR = join(REPO_ROOT, 'receipts', 'bench');
const committed = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .map((f) => ({ name: f, receipt: readReceiptFile(join(DIR, f)).document as BenchReceiptFigures }));
const startup = committed.find((c) => c.name.startsWith('bench-startup-'))!.receipt;
const cow = committed.find((c) => c.name.startsWith('bench-cow-'))!.receipt;

test('every committed benchmark receipt recomputes from its samples', () => {
  assert.ok(committed.length >= 5);
  for (const { name, receipt } of committed) assert.equal(benchReceiptInconsistencies(receipt), [], name);
});

const EDITS: Array<[string, BenchReceiptFigures, (r: BenchReceiptFigures) => void, RegExp]> = [
  [
    'a ratio',
    cow,
    (r) => {
      const row = r.results.find((x) => Object.keys(x.ratios).length > 0)!;
      const key = Object.keys(row.ratios)[0]!;
      row.ratios[key] = row.ratios[key]! * 0.9;
    },
    /^\/results\/\d+\/ratios\//,
  ],
  ['a median', startup, (r) => void (r.results[0]!.medianMs! *= 0.95), /^\/results\/0\/medianMs$/],
  ['a sample (the median kept)', startup, (r) => void r.results[1]!.samplesMs.push(1), /^\/results\/1\/n$/],
  ['goals.met', startup, (r) => void (r.goals![0]!.met = !r.goals![0]!.met), /^\/goals\/0\/met$/],
  [
    "a goal's ratio with its verdict",
    cow,
    (r) => {
      const g = r.goals!.find((x) => x.direction === 'at-most' && x.met)!;
      g.ratio = g.limit * 1.1;
      g.met = false;
    },
    /^\/goals\/\d+\/ratio$/,
  ],
];

test("a peak-RSS goal's ratio is recomputed from its row's peak RSS: an edited one fails", () => {
  // Peak RSS against a fixed limit ("300 MB RSS": 300,000,000 bytes): the ratio is the row's peakRssKiB over it.
  const row = (name: string, kib: number) => ({
    name,
    group: '250000 entries',
    n: 0,
    medianMs: null,
    samplesMs: [],
    ratios: {},
    metrics: { peakRssKiB: kib },
  });
  const goal = (measured: string, mb: number, ratio: number) => ({
    group: '250000 entries',
    measured,
    baseline: `${mb} MB RSS`,
    direction: 'at-most' as const,
    limit: 1,
    ratio,
    met: ratio <= 1,
  });
  const r: BenchReceiptFigures = {
    results: [row('peak RSS: checkpoint', 200_000), row('peak RSS: bench --source', 700_000)],
    goals: [goal('peak RSS: checkpoint', 300, 0.683), goal('peak RSS: bench --source', 512, 1.4)],
  };
  assert.equal(benchReceiptInconsistencies(r), []);
  const edited = structuredClone(r);
  Object.assign(edited.goals![1]!, { ratio: 0.9, met: true });
  assert.equal(
    benchReceiptInconsistencies(edited).map((i) => [i.pointer, i.recomputed]),
    [['/goals/1/ratio', 1.4]],
  );
  const unmeasured = structuredClone(r);
  delete unmeasured.results[0]!.metrics;
  assert.equal(
    benchReceiptInconsistencies(unmeasured).map((i) => i.pointer),
    ['/goals/0/measured'],
  );
});

test("a store-growth goal's ratio is recomputed from both rows' bytesAddedTotal: an edited one fails", () => {
  const row = (name: string, total: number) => ({
    name,
    group: 'full-copy',
    n: 0,
    medianMs: null,
    samplesMs: [],
    ratios: {},
    metrics: { bytesAddedTotal: total },
  });
  const r: BenchReceiptFigures = {
    results: [row('pdb-env checkpoint', 3_000_000), row('git add -A -f && git commit', 1_000_000)],
    goals: [
      {
        group: 'full-copy',
        measured: 'pdb-env checkpoint',
        baseline: 'bytes git add -A -f && git commit added',
        direction: 'at-most',
        limit: 2,
        ratio: 3,
        met: false,
      },
    ],
  };
  assert.equal(benchReceiptInconsistencies(r), []);
  const edited = structuredClone(r);
  Object.assign(edited.goals![0]!, { ratio: 1.9, met: true });
  assert.equal(
    benchReceiptInconsistencies(edited).map((i) => [i.pointer, i.recomputed]),
    [['/goals/0/ratio', 3]],
  );
  const unmeasured = structuredClone(r);
  delete unmeasured.results[1]!.metrics;
  assert.equal(
    benchReceiptInconsistencies(unmeasured).map((i) => i.pointer),
    ['/goals/0/baseline'],
  );
});

for (const [name, base, edit, pointer] of EDITS) {
  test(`a benchmark receipt with an edited ${name} fails validate`, () => {
    const r = structuredClone(base);
    edit(r);
    const issues = benchReceiptInconsistencies(r);
    assert.ok(
      issues.some((i) => pointer.test(i.pointer)),
      JSON.stringify(issues),
    );
    const file = join(t.dir, `${name.replace(/[^a-z]+/g, '-')}.json`);
    writeFileSync(file, JSON.stringify(r, null, 2));
    const out = cli(['validate', file, '--json']);
    assert.is(out.code, 1, out.stdout);
    const problems = JSON.parse(out.stdout).files[0].problems as { pointer: string; message: string }[];
    assert.ok(
      problems.some((p) => pointer.test(p.pointer) && /^E_RECEIPT_INCONSISTENT: recorded .* recomputed .* \(rule: /.test(p.message)),
      out.stdout,
    );
  });
}

test.run();
