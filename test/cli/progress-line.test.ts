// Progress: drawn on a terminal's stderr only, only after the operation ran a second, never with
// --json or into a pipe; a real create through the CLI (stderr a pipe) prints no progress; export
// and apply on a pseudo-terminal do.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createProgressReporter, progressLine } from '../../cli/progress-line.js';
import { formatBytes, type ProgressEvent } from '../../model/progress.js';
import { CLI, cli, cliJson, hasCommand, skipTest, tempDir, writeTree } from '../helpers/index.js';
import { gitCommitAll } from '../helpers/cow-harness.js';

const t = tempDir();
test.after(() => t.cleanup());

const event = (files: number, bytes: number): ProgressEvent => ({ phase: 'hash', files, totalFiles: 10, bytes, totalBytes: 4096 });

function fakeStream(isTTY: boolean) {
  const out: string[] = [];
  return { out, stream: { isTTY, write: (s: string) => out.push(s) > 0 } };
}

test('a terminal gets files and bytes after the first second, at most ten times a second, erased at the end', () => {
  let clock = 0;
  const { out, stream } = fakeStream(true);
  const r = createProgressReporter({ json: false, stream, now: () => clock });
  r.onProgress!(event(1, 100));
  clock = 999;
  r.onProgress!(event(2, 200));
  assert.equal(out, [], 'nothing in the first second');
  clock = 1000;
  r.onProgress!(event(3, 1024));
  clock = 1050;
  r.onProgress!(event(4, 2048));
  clock = 1100;
  r.onProgress!(event(5, 3072));
  r.done();
  const kb = formatBytes(4096);
  assert.equal(out, [
    `\r\x1b[Khashed 3/10 files, ${formatBytes(1024)} of ${kb}`,
    `\r\x1b[Khashed 5/10 files, ${formatBytes(3072)} of ${kb}`,
    '\r\x1b[K',
  ]);
});

test('never with --json, never into a pipe; nothing to erase when nothing was drawn', () => {
  for (const [json, tty] of [
    [true, true],
    [false, false],
  ] as const) {
    const { out, stream } = fakeStream(tty);
    const r = createProgressReporter({ json, stream, now: () => 5000 });
    assert.is(r.onProgress, undefined);
    r.done();
    assert.equal(out, []);
  }
  const { out, stream } = fakeStream(true);
  createProgressReporter({ json: false, stream }).done();
  assert.equal(out, []);
});

test('a line without totals counts entries', () => {
  assert.is(progressLine({ phase: 'scan', files: 7, totalFiles: 0, bytes: 0, totalBytes: 0 }), 'scanned 7 entries');
});

test('create and checkpoint through the CLI, stderr a pipe: no progress on stderr, --json stdout is only JSON', () => {
  const src = join(t.dir, 'src');
  writeTree(src, { 'a.txt': 'a\n' });
  const env = { PDB_ENV_STORE: join(t.dir, 'store') };
  const c = cli(['create', 'p', '--from', src, '--json'], { env });
  assert.is(c.code, 0, c.stderr);
  assert.is(c.stderr, '');
  assert.is(JSON.parse(c.stdout).session, 'p');
  const k = cli(['checkpoint', 'p', '--json'], { env });
  assert.is(k.stderr, '');
  assert.ok(JSON.parse(k.stdout).snapshot);
});

/** Run the CLI on a pseudo-terminal (util-linux script) with stdout to `out`: what the terminal showed is stderr. */
function onTerminal(args: string[], env: Record<string, string>, out: string): { code: number | null; terminal: string } {
  const quote = (a: string) => `'${a.replace(/'/g, "'\\''")}'`;
  const inner = `${[process.execPath, CLI, ...args].map(quote).join(' ')} > ${quote(out)}`;
  const r = spawnSync('script', ['-qec', inner, '/dev/null'], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, terminal: r.stdout };
}

test('diff, export (patch and git) and apply show files and bytes done on a terminal, erased at the end; never into a pipe or with --json', () => {
  if (!hasCommand('script')) return skipTest('way-back progress on a terminal', 'pty', 'util-linux script is not installed');
  if (!hasCommand('git')) return skipTest('way-back progress on a terminal', 'git', 'git is not installed');
  const src = join(t.dir, 'wb-src');
  writeTree(src, { 'a.txt': 'a\n', lib: { 'b.txt': 'b\n' } });
  gitCommitAll(src);
  const env = { PDB_ENV_STORE: join(t.dir, 'wb-store'), PDB_ENV_PROGRESS_DELAY_MS: '0' };
  const root = cliJson(['create', 'w', '--from', src], { env }).root;
  for (let i = 0; i < 5; i++) writeFileSync(join(root, `new${i}.bin`), Buffer.alloc(64 * 1024, i));
  writeFileSync(join(root, 'a.txt'), 'changed\n');
  cliJson(['checkpoint', 'w'], { env });
  const runs: Array<[string[], RegExp]> = [
    [['diff', 'w', '--patch'], /\r\x1b\[K(scanned \d+ entries|hashed \d+\/7 files)/],
    [['export', 'w', '--patch', join(t.dir, 'w.patch')], /\r\x1b\[Khashed \d+\/7 files, [\d.]+ k?B of 328 kB/],
    [['export', 'w', '--git'], /\r\x1b\[Khashed \d+\/6 files/],
    [['apply', 'w'], /\r\x1b\[K(hashed \d+\/6 files|copied \d+\/6 files)/],
  ];
  for (const [args, line] of runs) {
    const out = join(t.dir, `${args[0]}-${args[2]}.out`);
    const r = onTerminal(args, env, out);
    assert.is(r.code, 0, r.terminal);
    assert.match(r.terminal, line, `${args.join(' ')}: ${JSON.stringify(r.terminal)}`);
    assert.ok(r.terminal.trimEnd().endsWith('\r\x1b[K'), `${args.join(' ')}: the line is erased at the end`);
    assert.not.match(readFileSync(out, 'utf8'), /\x1b/, 'never on stdout');
  }
  // Into a pipe, and with --json on a terminal: nothing but the result.
  const piped = cli(['export', 'w', '--patch', join(t.dir, 'w2.patch')], { env });
  assert.is(piped.code, 0, piped.stderr);
  assert.is(piped.stderr, '');
  const json = onTerminal(['export', 'w', '--patch', join(t.dir, 'w3.patch'), '--json'], env, join(t.dir, 'json.out'));
  assert.is(json.code, 0, json.terminal);
  assert.not.match(json.terminal, /\x1b\[K/);
  assert.ok(JSON.parse(readFileSync(join(t.dir, 'json.out'), 'utf8')).changes > 0);
});

test.run();
