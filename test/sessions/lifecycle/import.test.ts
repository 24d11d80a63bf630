// Import at stat speed, on real trees: an unchanged source is a stat walk (nothing hashed), and
// every change a signature can show is still found: content, a restored mtime (ctime and inode
// differ), racily clean files, adds, deletes and retypes.
import { execFileSync } from 'node:child_process';
import { mkdirSync, renameSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { RACY_WINDOW_MS } from '../../../model/scan/tree-index.js';
import { SessionService } from '../../../sessions/service.js';
import { tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());

/** Long enough that what was written before it is no longer racily clean for a record made after it. */
const settle = () => sleep(RACY_WINDOW_MS * 2);

/** Give `file` the mtime of `ref` to the nanosecond (node's utimes rounds through a double). */
const copyMtime = (ref: string, file: string) => execFileSync('touch', ['-m', '-r', ref, file]);
const copyMtimeTo = (file: string, ref: string) => {
  writeFileSync(ref, '');
  copyMtime(file, ref);
};

let n = 0;
async function setup() {
  const dir = join(t.dir, `case${n++}`);
  const src = join(dir, 'src');
  writeTree(src, { 'a.txt': 'alpha\n', 'b.txt': 'bravo\n', lib: { 'c.txt': 'charlie\n', 'd.txt': 'delta\n' } });
  const svc = await SessionService.open(join(dir, 'store'), { create: true });
  await settle();
  return { src, svc };
}

test("an import's result keeps its scan's counts, not its walk or hashes (a session is materialized while it is held)", async () => {
  const { src, svc } = await setup();
  const imported = await svc.importSource(src);
  assert.equal(Object.keys(imported.scan).sort(), [
    'bytes',
    'changedPaths',
    'extraExcludes',
    'files',
    'filesHashed',
    'filesTrusted',
    'objectsInstalled',
    'stale',
  ]);
  assert.is(imported.scan.files, 4);
  assert.equal(
    imported.snapshot.entries.map((e) => e.path),
    ['a.txt', 'b.txt', 'lib', 'lib/c.txt', 'lib/d.txt'],
  );
  assert.is(imported.snapshot.entries.length, imported.index.cols.n, "the Snapshot's entries are the index's rows");
});

test('an unchanged source imports to the same digest with 0 files hashed', async () => {
  const { src, svc } = await setup();
  const first = await svc.importSource(src);
  assert.is(first.scan.filesHashed, 4);
  const again = await svc.importSource(src);
  assert.is(again.digest, first.digest);
  assert.is(again.scan.filesHashed, 0);
  assert.equal(again.snapshot.entries, first.snapshot.entries);
});

test('one byte changed with the same size and the mtime restored is found (ctime moved; a rename also moves the inode)', async () => {
  const { src, svc } = await setup();
  const first = await svc.importSource(src);
  const file = join(src, 'a.txt');
  const before = statSync(file);
  const ref = join(src, '..', 'ref');
  copyMtimeTo(file, ref);
  await settle();
  writeFileSync(file, 'alphX\n');
  copyMtime(ref, file);
  assert.is(statSync(file).mtimeMs, before.mtimeMs, 'the mtime is restored');
  assert.is(statSync(file).size, before.size);
  const second = await svc.importSource(src);
  assert.is.not(second.digest, first.digest);
  assert.is(second.scan.filesHashed, 1, 'only the changed file is read');
  assert.ok(second.scan.changedPaths!.includes('a.txt'));
  // Same size and mtime, a new file put in place by rename: another inode.
  await settle();
  const other = join(src, 'lib', 'c.txt');
  const cst = statSync(other);
  writeFileSync(join(src, 'tmp'), 'charliE\n');
  copyMtime(other, join(src, 'tmp'));
  assert.is(statSync(join(src, 'tmp')).mtimeMs, cst.mtimeMs);
  renameSync(join(src, 'tmp'), other);
  assert.is.not(statSync(other).ino, cst.ino);
  const third = await svc.importSource(src);
  assert.is.not(third.digest, second.digest);
  const digestOf = (r: typeof third, path: string) => {
    const e = r.snapshot.entries.find((x) => x.path === path);
    return e?.kind === 'file' ? e.digest : null;
  };
  assert.is.not(digestOf(third, 'lib/c.txt'), digestOf(second, 'lib/c.txt'));
});

test('racily clean files (changed within the window before the record) are hashed again, then trusted', async () => {
  const { src, svc } = await setup();
  await svc.importSource(src);
  writeFileSync(join(src, 'b.txt'), 'bravO\n'); // then imported at once: inside the racy window
  const racy = await svc.importSource(src);
  assert.ok(racy.scan.changedPaths!.includes('b.txt'));
  const again = await svc.importSource(src);
  assert.is(again.digest, racy.digest);
  assert.is(again.scan.filesHashed, 1, 'b.txt was racily clean at the last record: hashed again');
  await settle();
  await svc.importSource(src); // recorded well after b.txt's ctime: trusted from now on
  const trusted = await svc.importSource(src);
  assert.is(trusted.scan.filesHashed, 0);
  assert.is(trusted.digest, racy.digest);
});

test('adds, deletes and retypes are found by an import that trusts signatures, and the digest is a full scan’s', async () => {
  const { src, svc } = await setup();
  await svc.importSource(src);
  await settle();
  writeFileSync(join(src, 'new.txt'), 'new\n');
  unlinkSync(join(src, 'b.txt'));
  rmSync(join(src, 'lib', 'd.txt'));
  mkdirSync(join(src, 'lib', 'd.txt')); // file -> dir
  unlinkSync(join(src, 'a.txt'));
  symlinkSync('lib/c.txt', join(src, 'a.txt')); // file -> symlink
  const trusted = await svc.importSource(src);
  assert.equal([...trusted.scan.changedPaths!].sort(), ['a.txt', 'b.txt', 'lib/d.txt', 'new.txt']);
  assert.is(trusted.scan.filesHashed, 1, 'only new.txt is read');
  const fresh = await (await SessionService.open(join(t.dir, `fresh${n++}`), { create: true })).importSource(src);
  assert.is(trusted.digest, fresh.digest, 'the same digest as an import without an index');
});

test('the race check compares walks: a change after import is seen, nothing hashed when none happened', async () => {
  const { src, svc } = await setup();
  await svc.importSource(src);
  await settle();
  const imported = await svc.importSource(src);
  assert.equal(await svc.sourceChangesSince(src, imported), []);
  const ref = join(src, '..', 'ref');
  copyMtimeTo(join(src, 'lib', 'c.txt'), ref);
  writeFileSync(join(src, 'lib', 'c.txt'), 'charliX\n');
  copyMtime(ref, join(src, 'lib', 'c.txt'));
  assert.equal(
    (await svc.sourceChangesSince(src, imported)).map((c) => `${c.kind} ${c.path}`),
    ['modify lib/c.txt'],
  );
});

test.run();
