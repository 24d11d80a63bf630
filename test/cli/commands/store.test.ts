// gc, pin and unpin through the CLI: --dry-run prints what it would free in bytes and frees nothing;
// a pinned checkpoint survives gc until unpinned; a digest not in the store cannot be pinned.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readBuildDigest } from '../../../harness/receipt/provenance.js';
import { cli, cliJson, REPO_ROOT, tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());
const src = join(t.dir, 'src');
writeTree(src, { 'a.txt': 'A\n' });
const env = { PDB_ENV_STORE: join(t.dir, 'store') };

test('gc --dry-run prints the bytes it would free and frees nothing; gc frees them; pin keeps a checkpoint until unpin', () => {
  cliJson(['create', 'g', '--from', src], { env });
  const root = cli(['path', 'g'], { env }).stdout.trim();
  writeFileSync(join(root, 'blob.bin'), randomBytes(1024 * 1024));
  const dropped = cliJson(['checkpoint', 'g'], { env });
  cliJson(['discard', 'g'], { env });
  cliJson(['create', 'p', '--from', src], { env });
  const proot = cli(['path', 'p'], { env }).stdout.trim();
  writeFileSync(join(proot, 'keep.bin'), randomBytes(512 * 1024));
  const kept = cliJson(['checkpoint', 'p'], { env });
  assert.is(cliJson(['pin', kept.snapshot], { env }).digest, kept.snapshot);
  assert.equal(cliJson(['pin'], { env }).pins, [kept.snapshot]);
  cliJson(['discard', 'p'], { env });

  const dry = cli(['gc', '--dry-run'], { env });
  assert.is(dry.code, 0, dry.stderr);
  const would = Number(/would free (\d+) bytes/.exec(dry.stdout)?.[1]);
  assert.ok(would >= 1024 * 1024 && would < 1536 * 1024, dry.stdout);
  assert.is(cliJson(['gc', '--dry-run'], { env }).freed.bytes, would, 'a dry run changed nothing');
  const done = cliJson(['gc'], { env });
  assert.is(done.freed.bytes, would);
  const snapshotOf = (d: string) => cli(['create', `x${d.slice(7, 12)}`, '--base', d], { env });
  assert.is(snapshotOf(dropped.snapshot).code, 1, 'the discarded checkpoint is gone');
  assert.is(snapshotOf(kept.snapshot).code, 0, 'the pinned one is kept');
  cliJson(['discard', `x${kept.snapshot.slice(7, 12)}`], { env });

  assert.is(cliJson(['unpin', kept.snapshot], { env }).wasPinned, true);
  assert.match(cli(['unpin', kept.snapshot], { env }).stdout, /was not pinned/);
  assert.ok(cliJson(['gc'], { env }).freed.bytes >= 512 * 1024, 'unpinned: collected');
  assert.is(cli(['verify'], { env }).code, 0);
  const bad = cli(['pin', 'sha256:' + '0'.repeat(64)], { env });
  assert.is.not(bad.code, 0);
});

test('doctor where no store is yet says so and how this install runs (exit 0, nothing made); a directory that is not a store is still refused', () => {
  const none = join(t.dir, 'no-store-yet');
  const out = cli(['doctor', '--store', none]);
  assert.is(out.code, 0, out.stderr);
  assert.match(out.stdout, /^no store here yet/m);
  assert.match(out.stdout, /^scanner: (native|js) /m);
  assert.ok(!existsSync(none), 'doctor made no store');
  const j = cliJson(['doctor', '--store', none]);
  assert.equal([j.store, j.findings], [null, []]);
  assert.ok(['native', 'js'].includes(j.scanner.scanner));
  // The digest a receipt records as provenance.buildDigest, so a user can compare the two.
  assert.is(j.buildDigest, readBuildDigest(REPO_ROOT));
  assert.match(out.stdout, new RegExp(`^build: ${j.buildDigest} \\(`, 'm'));
  mkdirSync(join(t.dir, 'empty'));
  assert.is(cliJson(['doctor', '--store', join(t.dir, 'empty')]).store, null, 'an empty directory holds no store either');
  const other = join(t.dir, 'other');
  writeTree(other, { 'notes.txt': 'mine\n' });
  const refused = cli(['doctor', '--store', other]);
  assert.is(refused.code, 1);
  assert.match(refused.stderr, /E_STORE_INVALID/);
});

test.run();
