// The rhythm benchmark (scripts/bench/rhythm.ts), two turns, two restore rounds and two hook rounds
// on a small generated tree: a path-free, schema-valid receipt with the checkpoint, the commit and
// the status rows, the 0-changed checkpoint and clean status rows, the bytes each turn added on
// both sides, the restore rows (each restore wrote one file back), the Claude Code hook rows (the
// the daemon ran them, as it ran the checkpoints), and the seven goals, consistent with the
// samples as validate recomputes them.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { benchReceiptInconsistencies } from '../../../harness/receipt/bench-consistency.js';
import { readReceiptFile } from '../../../harness/receipt/envelope.js';
import { validateAgainst } from '../../../model/schemas.js';
import { REPO_ROOT, skipPart, tempDir } from '../../helpers/index.js';

// The daemon's client: where it was not built, the bench runs --no-daemon.
const client = existsSync(join(REPO_ROOT, 'native', 'build', 'Release', 'pdb-env-client'));

test('two turns and two restore rounds on a generated tree: a valid receipt of checkpoint, git commit, git status and restore, with bytes per turn and the goals', () => {
  const t = tempDir();
  try {
    const out = join(t.dir, 'out');
    const r = spawnSync(
      process.execPath,
      [
        join(REPO_ROOT, 'dist', 'scripts', 'bench', 'rhythm.js'),
        '--generated',
        '300',
        '--turns',
        '2',
        '--restore-rounds',
        '2',
        '--hook-rounds',
        '2',
        '--work',
        join(t.dir, 'work'),
        '--out',
        out,
        ...(client ? [] : ['--no-daemon']),
      ],
      { encoding: 'utf8' },
    );
    assert.is(r.status, 0, r.stderr);
    const files = readdirSync(out);
    assert.is(files.length, 1);
    const receipt = readReceiptFile(join(out, files[0]!)).document as any;
    assert.equal(validateAgainst('bench-receipt', receipt), []);
    assert.is(receipt.benchmark, 'rhythm');
    // Every checkpoint, restore and hook went through the daemon: the first checkpoint, two per turn, three per restore round, two per hook round.
    if (client) assert.equal([receipt.params.daemon, receipt.params.daemonServed], [true, 1 + 2 * 2 + 3 * 2 + 2 * 2]);
    else skipPart('the rhythm bench through the daemon', 'native-scan', 'native/build has no pdb-env-client (no compiler at install)');
    assert.equal(
      receipt.results.map((row: { name: string; n: number }) => `${row.name} (${row.n})`),
      [
        'pdb-env checkpoint (2)',
        'git add -A -f && git commit (2)',
        'git status --porcelain (2)',
        'pdb-env checkpoint (0 changed) (2)',
        'git status --porcelain (clean) (2)',
        'pdb-env checkpoint (1 file changed) (2)',
        'pdb-env restore --to the checkpoint before (1 file) (2)',
        'pdb-env checkpoint right after a restore (2)',
        'pdb-env hook claude-code, Stop (1-10 files changed) (2)',
        'pdb-env hook claude-code, UserPromptSubmit (0 changed) (2)',
        'git status --porcelain (the hook rounds) (2)',
      ],
    );
    const [cp, commit] = receipt.results;
    assert.is(cp.metrics.filesChangedPerTurn.split(',')[0], '1', 'the first turn changes one file');
    assert.ok(cp.metrics.bytesAdded1FileMedian > 0 && commit.metrics.bytesAdded1FileMedian > 0);
    const restore = receipt.results[6];
    assert.equal(
      [restore.metrics.writtenPerRound, restore.metrics.removedPerRound],
      ['1,1', '0,0'],
      'each restore wrote the one file back',
    );
    assert.is(receipt.goals.length, 7);
    const growth = receipt.goals[1];
    assert.match(growth.goal, /store growth over the turns at most 2x/);
    assert.is(
      growth.ratio,
      Math.round((cp.metrics.bytesAddedTotal / commit.metrics.bytesAddedTotal) * 1000) / 1000,
      'store over git, all turns',
    );
    assert.is(growth.met, growth.ratio <= 2);
    assert.equal(receipt.goals[4].measured, 'pdb-env checkpoint (0 changed)');
    assert.equal(receipt.goals[5].measured, restore.name);
    assert.equal(receipt.goals[6].measured, 'pdb-env hook claude-code, Stop (1-10 files changed)');
    assert.equal(benchReceiptInconsistencies(receipt), [], 'every figure follows from the samples');
  } finally {
    t.cleanup();
  }
});

test.run();
