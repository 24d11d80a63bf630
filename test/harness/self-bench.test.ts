// The one-line bench on a real repository: this one. A copy of its checkout (tracked and untracked
// files, nothing ignored) is the source; `npm ci`, a full build and one test file are the steps; it
// runs on full-copy and on overlay (a CoW backend CI can run as root), and must end with both cases
// ok, the overlay case checked against its block's full-copy case, a receipt and a report, and the
// answer printed. Needs the npm registry (or a warm npm cache) and, for overlay, root.
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Receipt } from '../../harness/receipt/receipt-types.js';
import { REPO_ROOT, cli, hasCommand, isRoot, skipPart, skipTest, tempDir } from '../helpers/index.js';
import { readReceiptFile } from '../../harness/receipt/envelope.js';

/** The checkout as a user has it, without what is ignored (node_modules, dist, local receipts). */
function copyCheckout(dest: string): void {
  if (hasCommand('git') && existsSync(join(REPO_ROOT, '.git'))) {
    const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: REPO_ROOT, encoding: 'utf8' })
      .split('\0')
      .filter(Boolean);
    for (const f of files) {
      if (!existsSync(join(REPO_ROOT, f))) continue; // deleted in the working tree
      mkdirSync(dirname(join(dest, f)), { recursive: true });
      copyFileSync(join(REPO_ROOT, f), join(dest, f));
    }
    return;
  }
  const skip = /(^|\/)(node_modules|dist|\.git)(\/|$)|^(receipts|reports)\/(local|out)(\/|$)/;
  cpSync(REPO_ROOT, dest, { recursive: true, filter: (src) => !skip.test(src.slice(REPO_ROOT.length + 1)) });
}

test('pdb-env bench --source <this repository> --step install --step build --step test, on full-copy and overlay', () => {
  const t = tempDir();
  try {
    const cow = isRoot();
    if (!cow) skipPart('self-bench on overlay', 'overlay', 'overlay mounts need root; full-copy only');
    const source = join(t.dir, 'pdb-env');
    copyCheckout(source);
    const out = join(t.dir, 'out');
    const r = cli(
      [
        'bench',
        '--source',
        source,
        '--step',
        'install=npm ci --ignore-scripts --prefer-offline --no-audit --no-fund --loglevel=warn',
        '--step',
        'build=npx tsc -p tsconfig.json',
        '--step',
        'test=node dist/test/harness/plan/scheduler.test.js',
        '--backends',
        cow ? 'full-copy,overlay' : 'full-copy',
        '--blocks',
        '1',
        '--out',
        out,
        '--store',
        t.dir,
        '--json',
      ],
      { env: { npm_config_update_notifier: 'false' } },
    );
    const doc = JSON.parse(r.stdout) as { receipt: string; report: { dir: string; answer: string[] }; summary: Receipt['summary'] };
    const receipt = readReceiptFile(join(process.cwd(), doc.receipt)).document as Receipt;
    const stopped = receipt.cases.filter((c) => c.outcome === 'environment' && c.failure?.code === 'E_REGISTRY_UNREACHABLE');
    if (stopped.length)
      return skipTest('self-bench', 'registry', 'npm ci could not reach the registry (and the npm cache lacked a package)');
    assert.is(r.code, 0, r.stderr.slice(-2000));
    assert.equal(
      receipt.cases.map((c) => [c.backend, c.outcome]).sort(),
      (cow
        ? [
            ['full-copy', 'ok'],
            ['overlay', 'ok'],
          ]
        : [['full-copy', 'ok']]
      ).sort(),
      JSON.stringify(receipt.cases.map((c) => c.failures)),
    );
    for (const c of receipt.cases) {
      assert.equal(
        c.phases.filter((p) => p.name.startsWith('step:')).map((p) => [p.name, p.exitCode]),
        [
          ['step:install', 0],
          ['step:build', 0],
          ['step:test', 0],
        ],
      );
    }
    if (cow) {
      const oracle = receipt.cases.find((c) => c.backend === 'overlay')!.checks.find((k) => k.name === 'oracle')!;
      assert.equal([oracle.evaluated, oracle.passed, oracle.reference?.backend], [true, true, 'full-copy']);
    }
    assert.is(receipt.cases[0]!.fixture.name, 'pdb-env');
    assert.ok(existsSync(join(process.cwd(), doc.report.dir, 'report.md')));
    assert.match(doc.report.answer[0] ?? '', /^pdb-env \(repo\) on T1: fastest correct here: full-copy/);
  } finally {
    t.cleanup();
  }
});

test.run();
