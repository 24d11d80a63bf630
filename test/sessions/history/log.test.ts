// The checkpoint log: numbered lines with label and counts; lines written before labels existed and
// a line cut short by a crash still read; checkpoint --label and run --checkpoint through the CLI.
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkpointLogFile } from '../../../sessions/records/session-record.js';
import { SessionService } from '../../../sessions/service.js';
import { cli, cliJson, tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir('pdb-log-');
test.after(() => t.cleanup());

test('old lines without label or counts read; a cut line is skipped and the next line is not glued to it', async () => {
  const src = join(t.dir, 'a-src');
  writeTree(src, { 'a.txt': 'a\n' });
  const svc = await SessionService.open(join(t.dir, 'a-store'), { create: true });
  const root = (await svc.create('s', { from: src })).root;
  const one = await svc.checkpoint('s');
  const file = checkpointLogFile(svc.store, 's');
  // A line as pdb-env wrote it before issue 39, then one cut short by a crash.
  writeFileSync(file, `${JSON.stringify({ snapshot: one.snapshot, changeset: one.changeset, at: '2026-01-01T00:00:00.000Z' })}\n`);
  appendFileSync(file, `{"snapshot":"${one.snapshot}","chan`);
  writeFileSync(join(root, 'b.txt'), 'b\n');
  const two = await svc.checkpoint('s', { label: 'after the crash' });
  assert.is(two.number, 2);
  const log = (await svc.log('s')).checkpoints;
  assert.equal(
    log.map((c) => [c.number, c.label, c.added, c.collected]),
    [
      [1, undefined, undefined, false],
      [2, 'after the crash', 1, false],
    ],
  );
  assert.ok(
    readFileSync(file, 'utf8')
      .split('\n')
      .some((l) => l.startsWith('{"snapshot"') && l.includes('after the crash')),
  );
});

test('a log this process wrote and another changed since is read again (its lines are kept by the file identity only)', async () => {
  const src = join(t.dir, 'k-src');
  writeTree(src, { 'a.txt': 'a\n' });
  const svc = await SessionService.open(join(t.dir, 'k-store'), { create: true });
  const root = (await svc.create('s', { from: src })).root;
  const one = await svc.checkpoint('s');
  writeFileSync(join(root, 'b.txt'), 'b\n');
  assert.is((await svc.checkpoint('s')).number, 2);
  assert.is((await svc.log('s')).checkpoints.length, 2);
  // Another process's line (a checkpoint without the daemon), appended after this one's last.
  const file = checkpointLogFile(svc.store, 's');
  appendFileSync(
    file,
    `${JSON.stringify({ snapshot: one.snapshot, changeset: one.changeset, at: '2026-01-01T00:00:00.000Z', label: 'theirs' })}\n`,
  );
  writeFileSync(join(root, 'c.txt'), 'c\n');
  assert.is((await svc.checkpoint('s')).number, 4);
  assert.equal(
    (await svc.log('s')).checkpoints.map((c) => c.label ?? null),
    [null, null, 'theirs', null],
  );
  // Rewritten in place to the same size: other lines, read as they are now.
  const text = readFileSync(file, 'utf8');
  writeFileSync(file, text.replace('"label":"theirs"', '"label":"THEIRS"'));
  assert.is((await svc.log('s')).checkpoints[2]!.label, 'THEIRS');
});

test('checkpoint --label, run --checkpoint (label: the command line, exit code kept), log newest first', () => {
  const src = join(t.dir, 'b-src');
  writeTree(src, { 'a.txt': 'a\n' });
  const env = { PDB_ENV_STORE: join(t.dir, 'b-store') };
  cliJson(['create', 's', '--from', src], { env });
  assert.is(cliJson<{ label: string }>(['checkpoint', 's', '--label', 'first one'], { env }).label, 'first one');
  const r = cli(['run', 's', '--checkpoint', '--', 'sh', '-c', 'echo x > x.txt; rm a.txt; exit 3'], { env });
  assert.is(r.code, 3, r.stderr);
  assert.match(r.stderr, /checkpoint 2 of s/);
  const log = cliJson<{ checkpoints: Array<{ label: string; added: number; deleted: number }> }>(['log', 's'], { env }).checkpoints;
  assert.equal(
    log.map((c) => [c.label, c.added, c.deleted]),
    [
      ['first one', 0, 0],
      ["sh -c 'echo x > x.txt; rm a.txt; exit 3'", 1, 1],
    ],
  );
  const text = cli(['log', 's'], { env }).stdout.split('\n');
  assert.match(text[1]!, /^2 .* \+1 ~0 -1 .* sh -c/);
  assert.match(text[2]!, /^1 .* first one$/);
  const d = cliJson<{ changes: Array<{ path: string }> }>(['diff', 's', '--from', '1'], { env });
  assert.equal(
    d.changes.map((c) => c.path),
    ['a.txt', 'x.txt'],
  );
});

test.run();
