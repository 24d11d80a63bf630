// The benchmark scripts' receipts: every sample, the median of per-round ratios, the host and the
// commit, checked against their schema and the path-free rule before anything is written.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateAgainst } from '../../../model/schemas.js';
import { benchRow, startBenchReceipt, writeBenchReceipt } from '../../../scripts/bench/bench-receipt.js';
import { cli, tempDir } from '../../helpers/index.js';
import { readReceiptFile } from '../../../harness/receipt/envelope.js';

test('a row keeps every sample, its median and the median of per-round ratios', () => {
  const r = benchRow('pdb-env create', '', [100, 80, 120], { cp: [200, 100, 100] });
  assert.equal([r.n, r.medianMs], [3, 100]);
  // Per-round ratios 0.5, 0.8, 1.2: their median, not the ratio of medians (100 / 100 = 1).
  assert.is(r.ratios.cp, 0.8);
});

test('a benchmark receipt is schema-valid and path-free, or not written', async () => {
  const t = tempDir();
  try {
    const out = join(t.dir, 'out');
    const start = await startBenchReceipt(t.dir, out);
    const file = await writeBenchReceipt(start, {
      benchmark: 'full-copy',
      command: 'npm run bench:full-copy -- --rounds 3',
      params: { rounds: 3, files: 10 },
      results: [
        benchRow('cp -a --reflink=never', '', [10, 11, 12]),
        benchRow('pdb-env create', '', [8, 9, 10], { 'cp -a --reflink=never': [10, 11, 12] }),
      ],
    });
    const doc = readReceiptFile(file).document as any;
    assert.equal(validateAgainst('bench-receipt', doc), []);
    assert.is(doc.host.hostId.length, 64);
    assert.ok('commit' in doc.provenance);
    assert.is(cli(['validate', file]).code, 0);
    const leaky = writeBenchReceipt(start, { benchmark: 'cow', command: 'npm run bench:cow', params: { tree: t.dir }, results: [] });
    await leaky.then(
      () => assert.unreachable('a path in a receipt must not be written'),
      (err: { code: string }) => assert.is(err.code, 'E_RECEIPT_NOT_PATH_FREE'),
    );
    assert.is(readdirSync(out).length, 1);
    assert.ok(existsSync(file));
  } finally {
    t.cleanup();
  }
});

test.run();
