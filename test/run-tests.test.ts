// The runner's counting: skipped tests are skipped, not passed, wherever the reporter put their
// line; test.only and test.skip never make a count negative; a skip of a required capability fails.
// Checked on hand-written outputs and on real uvu files run in a child process.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { REPO_ROOT } from './helpers/index.js';
import { countFile } from './run-tests.js';

const summary = (total: number, passed: number, skipped = 0) =>
  `\n  Total:     ${total}\n  Passed:    ${passed}\n  Skipped:   ${skipped}\n  Duration:  1.00ms\n`;

test('a skipped test is skipped, not passed, even when the reporter printed dots on the same line', () => {
  const out = `• • • SKIP test [btrfs] btrfs backends: loopback btrfs needs root\n• SKIP part [git] git-worktree: git is not installed\n${summary(4, 4)}`;
  const c = countFile(out, 0);
  assert.equal([c.passed, c.failed, c.skipped], [3, 0, 2]);
  assert.equal(c.skips, ['btrfs backends [btrfs]: loopback btrfs needs root', 'git-worktree [git] (part of a test): git is not installed']);
});

test('test.only and test.skip are skipped tests, never a negative count', () => {
  // uvu with one test.only among five: Total 1, Passed 1, Skipped 4.
  const only = countFile(summary(1, 1, 4), 0);
  assert.equal([only.passed, only.failed, only.skipped], [1, 0, 4]);
  assert.match(only.skips[0]!, 'not run');
  const failing = countFile(summary(3, 1, 1), 1);
  assert.equal([failing.passed, failing.failed, failing.skipped], [1, 2, 1]);
});

test('a crash, or a non-zero exit after every test passed, is a failure', () => {
  assert.equal(countFile('TypeError: boom', 1).failed, 1);
  // Without uvu's summary it is a crash whatever the exit code, skips printed or not (a file that
  // skips its only test still calls test.run(), which prints the summary).
  assert.equal(countFile('TypeError: boom', 0).failed, 1);
  assert.equal(countFile('SKIP test [real-agents] codex run: codex is not installed\n', 0).failed, 1);
  const exit = countFile(summary(2, 2), 1);
  assert.equal([exit.passed, exit.failed], [2, 1]);
  assert.match(exit.problem ?? '', 'exited 1');
});

function runUvuFile(body: string, env: Record<string, string> = {}): { code: number | null; output: string } {
  const dir = mkdtempSync(join(REPO_ROOT, 'dist', '.runner-test-'));
  try {
    const file = join(dir, 'x.test.mjs');
    const helpers = pathToFileURL(join(REPO_ROOT, 'dist', 'test', 'helpers', 'index.js')).href;
    writeFileSync(file, `import { test } from 'uvu';\nimport { skipTest, skipPart } from '${helpers}';\n${body}\ntest.run();\n`);
    const r = spawnSync(process.execPath, [file], {
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1', PDB_ENV_REQUIRE: '', ...env },
    });
    return { code: r.status, output: `${r.stdout}${r.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const BODY = `
test('runs', () => {});
test('needs git', () => { return skipTest('needs git', 'git', 'pretend git is missing'); });
test('half', () => { skipPart('half: overlay', 'overlay', 'pretend no overlay'); });
`;

test('real uvu output: 1 passed, 1 half-run test passed with its part skipped, 1 skipped', () => {
  const r = runUvuFile(BODY);
  assert.is(r.code, 0, r.output);
  const c = countFile(r.output, r.code);
  assert.equal([c.passed, c.failed, c.skipped], [2, 0, 2], r.output);
});

test('PDB_ENV_REQUIRE turns a skip of a listed capability into a failure, named', () => {
  const r = runUvuFile(BODY, { PDB_ENV_REQUIRE: 'git,btrfs' });
  const c = countFile(r.output, r.code);
  assert.equal([c.passed, c.failed, c.skipped], [2, 1, 1], r.output);
  assert.equal(c.required, ['needs git [git]: pretend git is missing']);
});

test('real uvu with test.only: the others are skipped, nothing is negative', () => {
  const r = runUvuFile(`test('a', () => {});\ntest.only('b', () => {});\ntest('c', () => {});\ntest.skip('d', () => {});`);
  const c = countFile(r.output, r.code);
  assert.equal([c.passed, c.failed, c.skipped], [1, 0, 3], r.output);
});

test.run();
