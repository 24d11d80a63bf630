// The start-up benchmark (scripts/bench/startup.ts), run once with this tree on both sides: a
// receipt with a before and an after row per command, the ratio of each, and whether each side
// ran its bundles, schema-valid and path-free.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateAgainst } from '../../../model/schemas.js';
import { REPO_ROOT, tempDir } from '../../helpers/index.js';
import { readReceiptFile } from '../../../harness/receipt/envelope.js';

test('one round against itself: a valid receipt of the three commands, before and after', () => {
  const t = tempDir();
  try {
    const out = join(t.dir, 'out');
    const r = spawnSync(
      process.execPath,
      [join(REPO_ROOT, 'dist', 'scripts', 'bench', 'startup.js'), '--before', REPO_ROOT, '--rounds', '1', '--out', out],
      { encoding: 'utf8' },
    );
    assert.is(r.status, 0, r.stderr);
    assert.match(r.stdout, /^before: commands (bundle|modules), checkpoint (bundle|modules); after: /);
    const files = readdirSync(out);
    assert.is(files.length, 1);
    const receipt = readReceiptFile(join(out, files[0]!)).document as any;
    assert.equal(validateAgainst('bench-receipt', receipt), []);
    assert.is(receipt.benchmark, 'startup');
    assert.equal(
      receipt.results.map((row: { group: string; name: string; n: number }) => `${row.group}: ${row.name} (${row.n})`),
      ['pdb-env --version', 'pdb-env list', 'pdb-env checkpoint NAME (1 changed file)'].flatMap((c) => [
        `${c}: before (1)`,
        `${c}: after (1)`,
      ]),
    );
    assert.is(receipt.goals.length, 3);
    for (const g of receipt.goals) assert.ok(g.ratio > 0 && g.measured === 'after' && g.baseline === 'before', g.goal);
  } finally {
    t.cleanup();
  }
});

test.run();
