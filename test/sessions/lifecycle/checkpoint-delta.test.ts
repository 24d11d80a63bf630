// The tree index's delta (model/scan/index-file.ts): a checkpoint that changed only what some rows
// hold writes the rows it touched beside the session's index instead of the whole index again.
// Whatever the delta says, a checkpoint must give what a scan that trusts nothing gives, and the
// index read back (with its delta) must describe the tree exactly; a delta that is damaged, cut
// short or of another index file must be ignored, never trusted.
import { appendFileSync, copyFileSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Digest } from '../../../model/canonical-json.js';
import { scanTree } from '../../../model/scan/scan.js';
import { deltaFileOf, deltaLimit, readTreeIndex } from '../../../model/scan/tree-index.js';
import { createSnapshot, snapshotDigest, type Snapshot } from '../../../model/snapshot.js';
import { sessionIndexFile } from '../../../sessions/records/session-record.js';
import { SessionService } from '../../../sessions/service.js';
import { tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());

let n = 0;
async function session(files = 20) {
  const dir = join(t.dir, `case${n++}`);
  const src = join(dir, 'src');
  const tree: Record<string, string> = {};
  for (let i = 0; i < files; i++) tree[`f${String(i).padStart(4, '0')}.txt`] = `file ${i}\n`;
  writeTree(src, { a: tree, b: { 'x.txt': 'x\n', 'y.txt': 'y\n' } });
  const svc = await SessionService.open(join(dir, 'store'), { create: true });
  await svc.create('s', { from: src });
  await sleep(250);
  await svc.checkpoint('s'); // every signature recorded trusted
  const root = svc.sessionRoot('s');
  const file = sessionIndexFile(svc.store, 's');
  return { svc, root, file, delta: deltaFileOf(file) };
}

/** A checkpoint, checked against a scan that trusts nothing, and the index read back against that scan. */
async function checkpointMatchesFullHash(svc: SessionService, root: string, what: string) {
  const base = (await svc.readSession('s')).base as Digest;
  const excludes = svc.store.getDocument<Snapshot>(base, 'Snapshot').excludes;
  const cp = await svc.checkpoint('s');
  const full = await scanTree(root, { excludes });
  assert.is(cp.snapshot, snapshotDigest(createSnapshot(full.entries, excludes, base)), `${what}: the checkpoint is the full re-hash`);
  const index = readTreeIndex(sessionIndexFile(svc.store, 's'))!;
  assert.equal(index.entries, full.entries, `${what}: the index read back describes the tree`);
  assert.is(index.header.snapshot, cp.snapshot, `${what}: the index read back is of this checkpoint`);
  return cp;
}

test('content-only checkpoints write a delta and leave the whole index as it was; every one is the full re-hash', async () => {
  const { svc, root, file, delta } = await session();
  const whole = readFileSync(file);
  // (The setup's checkpoint may have restated rows already: those racily clean at create.)
  const start = readTreeIndex(file)!;
  const want = new Set(start.source!.deltaRows ?? []);
  for (let round = 0; round < 4; round++) {
    const changed = [`a/f000${round}.txt`, 'b/x.txt'];
    appendFileSync(join(root, changed[0]!), `round ${round}\n`);
    writeFileSync(join(root, changed[1]!), `x ${round}\n`);
    for (const path of changed) want.add(start.position(path)!);
    await sleep(150); // outside the racy window: the new signatures are trusted
    await checkpointMatchesFullHash(svc, root, `round ${round}`);
    assert.ok(existsSync(delta), `round ${round}: a delta was written`);
    assert.ok(readFileSync(file).equals(whole), `round ${round}: the whole index was not written again`);
    const rows = readTreeIndex(file)!.source!.deltaRows!;
    assert.equal(
      [...rows],
      [...want].sort((x, y) => x - y),
      `round ${round}: the delta holds every row changed since the whole index`,
    );
  }
  const quiet = await svc.checkpoint('s');
  assert.is(quiet.filesHashed, 0, 'the delta vouches for what it recorded');
  assert.is(quiet.dirsRead, 0);
});

test('a path added or gone writes the whole index again, and the delta before is gone', async () => {
  const { svc, root, file, delta } = await session();
  appendFileSync(join(root, 'a', 'f0001.txt'), 'more\n');
  await sleep(150);
  await checkpointMatchesFullHash(svc, root, 'content');
  assert.ok(existsSync(delta));
  const before = statSync(file).mtimeMs;
  writeFileSync(join(root, 'b', 'new.txt'), 'new\n');
  await sleep(150);
  await checkpointMatchesFullHash(svc, root, 'added');
  assert.not.ok(existsSync(delta), 'the delta of the index before is removed');
  assert.ok(statSync(file).mtimeMs !== before, 'the whole index was written');
  rmSync(join(root, 'b', 'x.txt'));
  appendFileSync(join(root, 'a', 'f0002.txt'), 'more\n');
  await sleep(150);
  await checkpointMatchesFullHash(svc, root, 'deleted');
  assert.not.ok(existsSync(delta));
});

test('a delta grows no longer than its limit: then the whole index is written again', async () => {
  const files = deltaLimit(0) + 20; // the smallest limit, exceeded by changing every file
  const { svc, root, delta, file } = await session(files);
  assert.ok(deltaLimit(files + 5) < files, 'the tree is large enough to exceed the limit');
  appendFileSync(join(root, 'a', 'f0000.txt'), 'one\n');
  await sleep(150);
  await checkpointMatchesFullHash(svc, root, 'one');
  assert.ok(existsSync(delta));
  for (let i = 0; i < files; i++) appendFileSync(join(root, 'a', `f${String(i).padStart(4, '0')}.txt`), 'all\n');
  await sleep(150);
  await checkpointMatchesFullHash(svc, root, 'all');
  assert.not.ok(existsSync(delta), 'past the limit: no delta');
  assert.is(readTreeIndex(file)!.source!.deltaRows, null);
});

test('a delta damaged, cut short or of another index is ignored: the files it vouched for are hashed again', async () => {
  const { svc, root, delta, file } = await session();
  const other = await session();
  appendFileSync(join(other.root, 'a', 'f0003.txt'), 'other\n');
  await sleep(150);
  await other.svc.checkpoint('s');
  assert.ok(existsSync(other.delta));

  appendFileSync(join(root, 'a', 'f0001.txt'), 'more\n');
  await sleep(150);
  await checkpointMatchesFullHash(svc, root, 'first');
  const good = readFileSync(delta);
  const damaged = Buffer.from(good);
  damaged[damaged.length - 5]! ^= 0xff; // a digest byte of the last row
  const cases: Array<[string, () => void]> = [
    ['damaged', () => writeFileSync(delta, damaged)],
    ['cut short', () => writeFileSync(delta, good.subarray(0, good.length - 8))],
    ['of another index', () => copyFileSync(other.delta, delta)],
    ['empty', () => writeFileSync(delta, '')],
  ];
  for (const [what, spoil] of cases) {
    writeFileSync(delta, good);
    spoil();
    const index = readTreeIndex(file)!;
    assert.is(index.source!.deltaRows, null, `${what}: not applied`);
    assert.is.not(index.header.snapshot, (await svc.readSession('s')).lastCheckpoint!.snapshot, `${what}: the whole index's state`);
    const cp = await checkpointMatchesFullHash(svc, root, what);
    assert.ok(cp.filesHashed >= 1, `${what}: the file the delta vouched for was hashed again`);
  }
});

test.run();
