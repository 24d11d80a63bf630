// Progress: drawn on a terminal's stderr only, only after the operation ran a second, never with
// --json or into a pipe; and a real create through the CLI (stderr a pipe) prints no progress.
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createProgressReporter, progressLine } from '../../cli/progress.js';
import { formatBytes, type ProgressEvent } from '../../model/progress.js';
import { cli, tempDir, writeTree } from '../helpers/index.js';

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

test.run();
