// Provenance on a real temporary git checkout: the commit and dirtiness are read at the start (the
// run's own output directory left out), the state again at the end; a bench run whose code changes
// under it says so in its receipt, and the receipt keeps the commit the run started at.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runBench } from '../../../harness/bench.js';
import { provenanceOf, readCheckoutState } from '../../../harness/receipt/provenance.js';
import type { Workload } from '../../../workloads/types.js';
import { skipTest, hasCommand, tempDir } from '../../helpers/index.js';
import { base, tinyFixture, workloads } from '../../helpers/bench-workloads.js';

function git(dir: string, ...args: string[]): string {
  return execFileSync('git', ['-C', dir, ...args], {
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@t.invalid',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@t.invalid',
    },
  }).trim();
}

function repo(dir: string): string {
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q');
  writeFileSync(join(dir, 'code.ts'), 'export const x = 1;\n');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-qm', 'one');
  return git(dir, 'rev-parse', 'HEAD');
}

test('clean, dirty, untracked and the ignored output directory', async () => {
  if (!hasCommand('git')) return skipTest('provenance of a git checkout', 'git', 'git is not installed');
  const t = tempDir();
  try {
    const dir = join(t.dir, 'repo');
    const head = repo(dir);
    const clean = await readCheckoutState(dir);
    assert.equal([clean.commit, clean.dirty], [head, false]);
    // The run's own receipts and journal are not the code.
    mkdirSync(join(dir, 'receipts', 'local'), { recursive: true });
    writeFileSync(join(dir, 'receipts', 'local', 'r.json'), '{}');
    const withOutput = await readCheckoutState(dir, [join(dir, 'receipts', 'local')]);
    assert.equal([withOutput.dirty, withOutput.state], [false, clean.state]);
    assert.is((await readCheckoutState(dir)).dirty, true, 'an untracked file elsewhere is dirty');
    writeFileSync(join(dir, 'code.ts'), 'export const x = 2;\n');
    const dirty = await readCheckoutState(dir, [join(dir, 'receipts')]);
    assert.is(dirty.dirty, true);
    // A further edit of an already dirty file is a change, too.
    writeFileSync(join(dir, 'code.ts'), 'export const x = 3;\n');
    const later = await readCheckoutState(dir, [join(dir, 'receipts')]);
    assert.equal(provenanceOf(dirty, later), { commit: head, dirty: true, changedDuringRun: true });
    assert.equal(provenanceOf(clean, clean), { commit: head, dirty: false, changedDuringRun: false });
    const none = await readCheckoutState(join(t.dir, 'not-a-repo'));
    assert.equal(provenanceOf(none, none), { commit: null, dirty: null, changedDuringRun: null });
  } finally {
    t.cleanup();
  }
});

test('a run whose code changes under it records the commit it started at and changedDuringRun', async () => {
  if (!hasCommand('git')) return skipTest('provenance of a run', 'git', 'git is not installed');
  const t = tempDir();
  try {
    const dir = join(t.dir, 'repo');
    const head = repo(dir);
    const committing: Workload = {
      name: 'test-commit',
      description: 'lands a commit in the checkout while the run runs',
      deterministic: true,
      sessions: 1,
      defaultParams: {},
      prepareFixture: tinyFixture('commit@1'),
      steps: () => [
        {
          name: 'land-a-commit',
          timeoutMs: 30_000,
          async run() {
            writeFileSync(join(dir, 'code.ts'), 'export const x = 42;\n');
            git(dir, 'commit', '-qam', 'two');
          },
        },
      ],
      project: (e) => e,
      projectionNote: 'identity',
    };
    const plan = base({ name: 'provenance', workloads: [{ name: 'test-commit' }] });
    const out = join(dir, 'receipts');
    const clean = await runBench({
      plan: base({ name: 'clean', workloads: [{ name: 'test-count' }] }),
      outDir: out,
      storeParent: t.dir,
      workloads,
      provenanceRepo: dir,
    });
    const { buildDigest, staleBuild, ...checkout } = clean.receipt.provenance;
    assert.equal(checkout, { commit: head, dirty: false, changedDuringRun: false }, 'its own receipts do not make it dirty');
    assert.match(buildDigest ?? '', /^sha256:/);
    assert.is(staleBuild, false);
    const { receipt } = await runBench({
      plan,
      outDir: out,
      storeParent: t.dir,
      workloads: { ...workloads, 'test-commit': committing },
      provenanceRepo: dir,
    });
    assert.equal(
      { commit: receipt.provenance.commit, dirty: receipt.provenance.dirty, changedDuringRun: receipt.provenance.changedDuringRun },
      { commit: head, dirty: false, changedDuringRun: true },
    );
  } finally {
    t.cleanup();
  }
});

test.run();
