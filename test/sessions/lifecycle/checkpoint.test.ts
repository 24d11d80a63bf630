// Checkpoint at status speed, on real trees: a file whose stat signature is the recorded one keeps
// its digest (git's racy-clean rule), yet the scan stays complete (adds, deletes and retypes are
// found) and gives the digest a full hash gives; --verify re-hashes everything.
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createTreeIndex, parseTreeIndex, RACY_WINDOW_MS, serializeTreeIndex, statSignature } from '../../../model/scan/tree-index.js';
import { sessionIndexFile } from '../../../sessions/records/session-record.js';
import { SessionService } from '../../../sessions/service.js';
import { tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());

const settle = () => sleep(RACY_WINDOW_MS * 2);

let n = 0;
async function setup() {
  const dir = join(t.dir, `case${n++}`);
  const src = join(dir, 'src');
  writeTree(src, {
    'a.txt': 'alpha\n',
    'b.txt': 'bravo\n',
    'keep.txt': 'keep\n',
    lib: { 'c.txt': 'charlie\n', 'd.txt': 'delta\n' },
    gone: { 'e.txt': 'echo\n' },
  });
  const svc = await SessionService.open(join(dir, 'store'), { create: true });
  await svc.create('s', { from: src });
  await settle();
  return { src, svc, root: svc.sessionRoot('s') };
}

test('an untouched session checkpoints with 0 files hashed once its files are older than the racy window', async () => {
  const { svc } = await setup();
  const one = await svc.checkpoint('s');
  assert.is(one.changes, 0);
  // A tiny tree is copied within the racy window before create records it: its files are hashed
  // once more here (as git does after a checkout); from this record on they are trusted.
  assert.ok(one.filesHashed <= one.files);
  const two = await svc.checkpoint('s');
  assert.is(two.snapshot, one.snapshot);
  assert.is(two.filesHashed, 0);
  assert.is(two.filesTrusted, two.files);
  assert.is((await svc.checkpoint('s', { verify: true })).snapshot, one.snapshot);
});

test('adds, deletes, retypes, a mode change and a same-size edit with the mtime restored are all found; the digest is a full hash’s', async () => {
  const { svc, root } = await setup();
  await svc.checkpoint('s');
  await settle();
  writeFileSync(join(root, 'new.txt'), 'new\n');
  unlinkSync(join(root, 'b.txt'));
  rmSync(join(root, 'gone'), { recursive: true });
  writeFileSync(join(root, 'gone'), 'now a file\n'); // dir -> file
  unlinkSync(join(root, 'lib', 'd.txt'));
  symlinkSync('c.txt', join(root, 'lib', 'd.txt')); // file -> symlink
  execFileSync('chmod', ['+x', join(root, 'keep.txt')]);
  writeFileSync(join(root, 'ref'), '');
  execFileSync('touch', ['-m', '-r', join(root, 'a.txt'), join(root, 'ref')]);
  writeFileSync(join(root, 'a.txt'), 'alphX\n');
  execFileSync('touch', ['-m', '-r', join(root, 'ref'), join(root, 'a.txt')]);
  rmSync(join(root, 'ref'));
  const cp = await svc.checkpoint('s');
  const cs = svc.store.getDocument<{ changes: Array<{ path: string; kind: string }> }>(cp.changeset, 'Changeset');
  assert.equal(
    cs.changes.map((c) => `${c.kind} ${c.path}`),
    ['modify a.txt', 'delete b.txt', 'retype gone', 'delete gone/e.txt', 'mode keep.txt', 'retype lib/d.txt', 'add new.txt'],
  );
  assert.is(cp.filesHashed, 4, 'read: a.txt (ctime moved), keep.txt (mode is in the signature), gone and new.txt (new)');
  const full = await svc.checkpoint('s', { verify: true });
  assert.is(full.snapshot, cp.snapshot);
  assert.is(full.changeset, cp.changeset);
  assert.is(full.filesHashed, full.files);
});

test('a file changed just before the recorded checkpoint (racily clean) is hashed again', async () => {
  const { svc, root } = await setup();
  writeFileSync(join(root, 'a.txt'), 'alpha, now\n');
  const first = await svc.checkpoint('s'); // a.txt changed within the window before this record
  const again = await svc.checkpoint('s');
  assert.is(again.snapshot, first.snapshot);
  assert.is(again.filesHashed, 1, 'a.txt is not trusted yet');
  await settle();
  await svc.checkpoint('s');
  assert.is((await svc.checkpoint('s')).filesHashed, 0);
});

test('--verify finds a change a signature cannot show (here: a recorded signature forged to match the edited file)', async () => {
  // ctime cannot be set back without changing the clock, so the change signatures miss is made
  // in the index: the edited file's new signature is written into it, as a same-tick write would leave it.
  const { svc, root } = await setup();
  const before = await svc.checkpoint('s');
  writeFileSync(join(root, 'lib', 'c.txt'), 'charliX\n');
  await settle();
  const file = sessionIndexFile(svc.store, 's');
  const index = parseTreeIndex(readFileSync(file))!;
  const sigs = new Map(index.entries.map((e, i) => [e.path, index.sig(i)]));
  sigs.set('lib/c.txt', statSignature(lstatSync(join(root, 'lib', 'c.txt'))));
  writeFileSync(file, serializeTreeIndex(createTreeIndex({ ...index.header, recordedAtMs: Date.now() }, index.entries, sigs)));
  await settle();
  const trusting = await svc.checkpoint('s');
  assert.is(trusting.snapshot, before.snapshot, 'the forged signature is trusted: nothing is read');
  const verified = await svc.checkpoint('s', { verify: true });
  assert.is.not(verified.snapshot, before.snapshot);
  assert.is(verified.changes, 1);
  assert.equal(
    (await svc.diff('s', { verify: true })).changes.map((c) => c.path),
    ['lib/c.txt'],
  );
});

test('a new directory full of files and an emptied one are found', async () => {
  const { svc, root } = await setup();
  await svc.checkpoint('s');
  mkdirSync(join(root, 'fresh', 'deep'), { recursive: true });
  writeFileSync(join(root, 'fresh', 'deep', 'x.txt'), 'x\n');
  rmSync(join(root, 'lib', 'c.txt'));
  rmSync(join(root, 'lib', 'd.txt'));
  const d = await svc.diff('s');
  assert.equal(
    d.changes.map((c) => `${c.kind} ${c.path}`),
    ['add fresh', 'add fresh/deep', 'add fresh/deep/x.txt', 'delete lib/c.txt', 'delete lib/d.txt'],
  );
});

/** Bytes of every file under `dir`. */
function filesBytes(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (e.isFile()) total += lstatSync(join(e.parentPath ?? (e as unknown as { path: string }).path, e.name)).size;
  return total;
}

test('checkpoints of a large tree share chunks: a 1-file change adds under 64 KB; gc keeps every checkpoint, then sweeps a discarded one; verify and doctor find nothing', async () => {
  const dir = join(t.dir, `case${n++}`);
  const src = join(dir, 'src');
  const spec: Record<string, Record<string, string>> = {};
  for (let d = 0; d < 40; d++) {
    spec[`pkg${d}`] = {};
    for (let f = 0; f < 50; f++) spec[`pkg${d}`]![`file-${f}.js`] = `module.exports = ${d * 100 + f};\n`;
  }
  writeTree(src, spec);
  const svc = await SessionService.open(join(dir, 'store'), { create: true });
  await svc.create('s', { from: src });
  const root = svc.sessionRoot('s');
  const objects = join(svc.store.paths.root, 'objects');
  const first = await svc.checkpoint('s');
  assert.ok(svc.store.isChunked(first.snapshot), 'a 2,000-file Snapshot is stored as chunks');
  await settle();
  const before = filesBytes(objects);
  writeFileSync(join(root, 'pkg20', 'file-25.js'), 'module.exports = "changed";\n');
  const second = await svc.checkpoint('s');
  const added = filesBytes(objects) - before;
  assert.is(second.changes, 1);
  assert.ok(added < 64 * 1024, `a 1-file checkpoint added ${added} bytes`);
  assert.is(svc.readSnapshot(second.snapshot).entries.length, svc.readSnapshot(first.snapshot).entries.length);
  assert.equal((await svc.gc()).failed, []);
  for (const cp of [first, second]) assert.ok(svc.readSnapshot(cp.snapshot).entries.length > 2000, 'gc kept both checkpoints');
  assert.equal((await svc.verify()).missing, []);
  assert.equal(await svc.doctor(), []);
  await svc.create('t', { base: second.snapshot });
  assert.is(readFileSync(join(svc.sessionRoot('t'), 'pkg20', 'file-25.js'), 'utf8'), 'module.exports = "changed";\n');
  await svc.discard('s', { force: true });
  await svc.discard('t', { force: true });
  const gone = await svc.gc();
  assert.equal(gone.failed, []);
  assert.ok(gone.freed.objects > 0);
  assert.not.ok(svc.store.has(second.snapshot), 'an unreachable chunked Snapshot is swept, record and all');
});

test.run();
