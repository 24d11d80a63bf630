// `pdb-env du` as a script reads it (--json: sessions with name, backend, exclusiveBytes,
// sharedBytes; the store), as a person reads it, and `list` showing the last measurement without
// measuring (list --du measures first). The figures against free space: test/sessions/health/du.test.ts.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { formatBytes } from '../../../model/progress.js';
import { cli, cliJson, tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir('pdb-du-cli-');
test.after(() => t.cleanup());
const env = { PDB_ENV_STORE: join(t.dir, 'store') };
const src = join(t.dir, 'src');
writeTree(src, { 'a.txt': 'a\n'.repeat(5000), lib: { 'b.txt': 'b\n' } });

test('list shows no size before a du, and never measures', () => {
  cliJson(['create', 'a', '--from', src], { env });
  cliJson(['create', 'b', '--from', src], { env });
  const listed = cliJson(['list'], { env });
  assert.equal(
    listed.sessions.map((s: { usage: unknown }) => s.usage),
    [null, null],
  );
  assert.match(cli(['list'], { env }).stdout, /EXCLUSIVE/);
});

test('du --json: every session with its exclusive and shared bytes, and the store', () => {
  const r = cliJson(['du'], { env });
  assert.equal(Object.keys(r).sort(), ['sessions', 'store']);
  assert.equal(
    r.sessions.map((s: { name: string; backend: string }) => [s.name, s.backend]),
    [
      ['a', 'full-copy'],
      ['b', 'full-copy'],
    ],
  );
  for (const s of r.sessions) {
    assert.ok(s.exclusiveBytes >= 10000, `${s.name}: ${s.exclusiveBytes}`);
    assert.is(s.sharedBytes, 0);
    assert.is(s.measured, true);
    assert.is(s.method, 'st_blocks');
    assert.ok(s.adminBytes > 0 && s.adminBytes < s.exclusiveBytes, 'the record and index are part of it');
  }
  assert.ok(r.store.objects >= 2 && r.store.objectBytes > 0, JSON.stringify(r.store));
  assert.equal(r.store.bases, [], 'full-copy copies from the objects: no base');
  assert.equal(Object.keys(r.store.gc).sort(), ['bases', 'freeBytes', 'objects', 'skipped']);
  assert.is(r.store.gc.freeBytes, cliJson(['gc', '--dry-run'], { env }).freed.bytes);
  // What du measured is what list shows now.
  const listed = cliJson(['list'], { env });
  assert.is(listed.sessions[0].usage.exclusiveBytes, r.sessions[0].exclusiveBytes);
  const text = cli(['list'], { env }).stdout;
  assert.match(text, `${formatBytes(r.sessions[0].exclusiveBytes)} (`);
  assert.match(text, /\ds ago\)/);
});

test('du NAME measures one session; list --du measures again', () => {
  const one = cliJson(['du', 'a'], { env });
  assert.equal(
    one.sessions.map((s: { name: string }) => s.name),
    ['a'],
  );
  writeFileSync(join(cliJson(['path', 'a'], { env }).root, 'more.bin'), Buffer.alloc(1024 * 1024, 1));
  assert.is(cliJson(['list'], { env }).sessions[0].usage.exclusiveBytes, one.sessions[0].exclusiveBytes, 'list alone does not measure');
  const again = cliJson(['list', '--du'], { env }).sessions[0].usage.exclusiveBytes;
  assert.ok(again - one.sessions[0].exclusiveBytes >= 1024 * 1024, `grew to ${again}`);
});

test('du text: the table, the store and what gc would free; unknown sessions and --help', () => {
  const r = cli(['du'], { env });
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, /SESSION\s+BACKEND\s+EXCLUSIVE\s+SHARED\s+MEASURED BY/);
  assert.match(r.stdout, /^a\s+full-copy\s+\d/m);
  assert.match(r.stdout, /objects\s+\d+ \(/);
  assert.match(r.stdout, /gc\s+would free /);
  const missing = cli(['du', 'nope'], { env });
  assert.is(missing.code, 1);
  assert.match(missing.stderr, /E_SESSION_NOT_FOUND/);
  const help = cli(['du', '--help']);
  assert.is(help.code, 0);
  assert.match(help.stdout, /EXCLUSIVE is what only that session holds/);
  assert.match(help.stdout, /FIEMAP/);
});

test.run();
