// restore: the root becomes exactly a checkpoint's Snapshot, in place (adds removed, deletes back,
// modes, links and empty directories as recorded, untracked files included, admin roots untouched),
// after a safety checkpoint that undoes it; refused while a run holds the session; nothing changes
// when the safety checkpoint or the staging fails; a kill at every restore step is finished by gc;
// the checkpoint right after a restore is the one --verify takes.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CRASH_POINTS } from '../../../model/crash-point.js';
import { scanTree } from '../../../model/scan/scan.js';
import { diffEntries, type Entry } from '../../../model/snapshot.js';
import { SessionService } from '../../../sessions/service.js';
import { pdb } from '../../helpers/faults/fault-helpers.js';
import { tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir('pdb-restore-');
test.after(() => t.cleanup());

let n = 0;
async function setup() {
  const dir = join(t.dir, `case${n++}`);
  const src = join(dir, 'src');
  writeTree(src, {
    'a.txt': 'alpha\n',
    'b.txt': 'bravo\n',
    'run.sh': { content: '#!/bin/sh\n', exec: true },
    lib: { 'c.txt': 'charlie\n', link: { link: 'c.txt' } },
    gone: { 'e.txt': 'echo\n' },
    empty: {},
  });
  const store = join(dir, 'store');
  const svc = await SessionService.open(store, { create: true });
  await svc.create('s', { from: src });
  const root = svc.sessionRoot('s');
  // Untracked and admin: .env is part of every Snapshot (nothing is ignored), .git is never touched.
  writeFileSync(join(root, '.env'), 'SECRET=1\n');
  mkdirSync(join(root, '.git'));
  writeFileSync(join(root, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  return { dir, store, svc, root };
}

const entries = async (root: string): Promise<Entry[]> => (await scanTree(root, { excludes: [] })).entries;

/** Change everything a restore must put back. */
function mess(root: string) {
  writeFileSync(join(root, 'a.txt'), 'changed\n');
  unlinkSync(join(root, 'b.txt'));
  chmodSync(join(root, 'run.sh'), 0o644);
  rmSync(join(root, 'gone'), { recursive: true });
  writeFileSync(join(root, 'gone'), 'a file now\n');
  unlinkSync(join(root, 'lib', 'link'));
  symlinkSync('../a.txt', join(root, 'lib', 'link'));
  rmSync(join(root, 'empty'), { recursive: true });
  mkdirSync(join(root, 'new', 'deep'), { recursive: true });
  writeFileSync(join(root, 'new', 'deep', 'f.txt'), 'f\n');
  writeFileSync(join(root, '.env'), 'SECRET=2\n');
}

test('restore --to a checkpoint: the root is exactly it; the safety checkpoint undoes it; .git untouched; only what differs is written', async () => {
  const { svc, root } = await setup();
  const one = await svc.checkpoint('s', { label: 'clean' });
  const want = await entries(root);
  mess(root);
  const messed = await entries(root);
  const inode = lstatSync(join(root, 'lib', 'c.txt')).ino;
  const r = await svc.restore('s', String(one.number));
  assert.equal(diffEntries(want, await entries(root)), [], 'the root is the checkpoint');
  assert.is(r.exact, null, 'recorded from what was written, not scanned again');
  assert.is(lstatSync(join(root, 'lib', 'c.txt')).ino, inode, 'an unchanged file is not written again');
  assert.is(readFileSync(join(root, '.git', 'HEAD'), 'utf8'), 'ref: refs/heads/main\n');
  assert.is(readFileSync(join(root, '.env'), 'utf8'), 'SECRET=1\n');
  assert.ok(lstatSync(join(root, 'empty')).isDirectory(), 'the empty directory is back');
  assert.not.ok(existsSync(join(root, '.pdb')), 'no staging left');
  assert.is(r.safety.number, 2);
  assert.is(r.checkpoint.number, 3);
  const log = (await svc.log('s')).checkpoints;
  assert.equal(
    log.map((c) => [c.number, c.label, c.restoredFrom]),
    [
      [1, 'clean', undefined],
      [2, 'before restore to 1', undefined],
      [3, 'restore to 1', 1],
    ],
  );
  // Undo: restore --to the safety checkpoint brings the messed tree back.
  await svc.restore('s', String(r.safety.number));
  assert.equal(diffEntries(messed, await entries(root)), [], 'the safety checkpoint brings the tree before back');
});

test('the checkpoint right after a restore is the one --verify takes (no stale index row is trusted)', async () => {
  const { svc, root } = await setup();
  const one = await svc.checkpoint('s');
  await sleep(250); // past the racy window: the index trusts every row it recorded
  // Same size, restored mtime: only a stale row would hide it.
  writeFileSync(join(root, 'a.txt'), 'ALPHA\n');
  const two = await svc.checkpoint('s');
  await sleep(250);
  for (const to of [String(one.number), String(two.number), 'base', String(one.number)]) {
    await svc.restore('s', to);
    const next = await svc.checkpoint('s');
    const verify = await svc.checkpoint('s', { verify: true });
    assert.is(next.snapshot, verify.snapshot, `after restore --to ${to}`);
  }
});

test('REF: a number, base, a Snapshot or Changeset digest prefix; unknown and ambiguous ones are refused before anything', async () => {
  const { svc, root } = await setup();
  const one = await svc.checkpoint('s');
  writeFileSync(join(root, 'x.txt'), 'x\n');
  const two = await svc.checkpoint('s');
  await svc.restore('s', one.changeset.slice(7, 19));
  assert.not.ok(existsSync(join(root, 'x.txt')));
  await svc.restore('s', `sha256:${two.snapshot.slice(7, 17)}`);
  assert.ok(existsSync(join(root, 'x.txt')));
  const toBase = await svc.restore('s', 'base');
  assert.not.ok(existsSync(join(root, '.env')), 'base: the tree as created');
  const recorded = svc.readSnapshot(toBase.checkpoint.snapshot);
  assert.equal(
    [recorded.base, recorded.entries],
    [one.base, svc.readSnapshot(one.base).entries],
    'recorded: the base entries, on the base',
  );
  const before = (await svc.log('s')).checkpoints.length;
  for (const [ref, code] of [
    ['99', 'E_DIGEST_UNKNOWN'],
    ['fffffff', 'E_DIGEST_UNKNOWN'],
    ['xyz', 'E_USAGE'],
  ])
    await svc.restore('s', ref).then(
      () => assert.unreachable(ref),
      (err: { code: string }) => assert.is(err.code, code, ref),
    );
  assert.is((await svc.log('s')).checkpoints.length, before, 'a refused REF takes no checkpoint');
});

test('restore and diff --from/--to of a few changed paths read no Snapshot: the two Changesets say what differs', async () => {
  const { svc, root } = await setup();
  writeFileSync(join(root, 'x.txt'), 'x\n');
  const one = await svc.checkpoint('s');
  writeFileSync(join(root, 'a.txt'), 'changed\n');
  const two = await svc.checkpoint('s');
  const read = new Set<string>();
  const getBytes = svc.store.getBytes.bind(svc.store);
  svc.store.getBytes = (digest) => (read.add(digest), getBytes(digest));
  const snapshots = new Set([one.base, one.snapshot, two.snapshot]);
  const readSnapshots = () => [...read].filter((d) => snapshots.has(d as never));
  assert.equal(
    (await svc.diffCheckpoints('s', '2', '1')).changes.map((c) => `${c.kind} ${c.path}`),
    ['modify a.txt'],
  );
  assert.equal((await svc.diffCheckpoints('s', 'base', '2')).changes.map((c) => `${c.kind} ${c.path}`).includes('add x.txt'), true);
  assert.equal(readSnapshots(), [], 'diff --from/--to read a whole Snapshot');
  const r = await svc.restore('s', String(one.number));
  assert.is(readFileSync(join(root, 'a.txt'), 'utf8'), 'alpha\n');
  assert.equal([r.written, r.removed, r.checkpoint.snapshot], [1, 0, one.snapshot]);
  assert.equal(readSnapshots(), [], 'restore read a whole Snapshot');
  // The first checkpoint after it: its index is the safety checkpoint's, its previous checkpoint the
  // target; the counts come from the two Changesets, no Snapshot read, and match the whole trees'.
  writeFileSync(join(root, 'y.txt'), 'y\n');
  const three = await svc.checkpoint('s');
  assert.equal(readSnapshots(), [], 'the checkpoint after a restore read a whole Snapshot');
  const whole = diffEntries(svc.readSnapshot(one.snapshot).entries, svc.readSnapshot(three.snapshot).entries);
  const count = (kind: string[]) => whole.filter((c) => kind.includes(c.kind)).length;
  assert.equal([three.added, three.modified, three.deleted], [count(['add']), count(['modify', 'mode', 'retype']), count(['delete'])]);
  assert.equal([three.added, three.modified, three.deleted], [1, 0, 0]);
});

test('across a publish --rebase (a checkpoint on another base): restore and diff --from/--to fall back to the whole Snapshots, exactly', async () => {
  const { svc, root } = await setup();
  const h0 = await svc.envHead('main');
  const other = await svc.create('o', { env: 'main' });
  writeFileSync(join(other.root, 'o.txt'), 'o\n');
  await svc.checkpoint('o');
  const h1 = (await svc.publish('o', 'main', h0)).head;
  writeFileSync(join(root, 'x.txt'), 'x\n');
  const one = await svc.checkpoint('s');
  const rebased = (await svc.publish('s', 'main', h1, { rebase: true })).head;
  const two = (await svc.log('s')).checkpoints.at(-1)!;
  assert.equal([two.snapshot, svc.readSnapshot(rebased).base], [rebased, h1], 'the rebased checkpoint is on the new head');
  const snap = (d: string) => svc.readSnapshot(d as never).entries;
  const d = await svc.diffCheckpoints('s', String(one.number), String(two.number));
  assert.equal(d.changes, diffEntries(snap(one.snapshot), snap(rebased)));
  assert.equal(
    d.changes.map((c) => `${c.kind} ${c.path}`),
    ['add o.txt'],
  );
  await svc.restore('s', String(two.number));
  assert.equal(diffEntries(snap(rebased), await entries(root)), [], 'the root is the rebased checkpoint');
  await svc.restore('s', String(one.number));
  assert.equal(diffEntries(snap(one.snapshot), await entries(root)), [], 'the root is checkpoint 1 again');
});

test('diff --from --to between two checkpoints', async () => {
  const { svc, root } = await setup();
  await svc.checkpoint('s');
  writeFileSync(join(root, 'x.txt'), 'x\n');
  unlinkSync(join(root, 'b.txt'));
  await svc.checkpoint('s');
  const d = await svc.diffCheckpoints('s', '1', '2');
  assert.equal(
    d.changes.map((c) => `${c.kind} ${c.path}`),
    ['delete b.txt', 'add x.txt'],
  );
  assert.equal((await svc.diffCheckpoints('s', '2', '2')).changes, []);
  assert.ok((await svc.diffCheckpoints('s', 'base', '1')).changes.some((c) => c.path === '.env'));
});

test('diff --from --to merges the two Snapshots from their bytes: neither is parsed into entries', async () => {
  // Parsing two 250,000-entry Snapshots into objects took 416 MB RSS for a diff of ten files.
  const { svc, root } = await setup();
  await svc.checkpoint('s');
  writeFileSync(join(root, 'a.txt'), 'changed\n');
  chmodSync(join(root, 'run.sh'), 0o644);
  await svc.checkpoint('s');
  const parse = svc.store.getDocument.bind(svc.store);
  const parsed: string[] = [];
  svc.store.getDocument = <T>(digest: Parameters<typeof parse>[0], what?: string) => (parsed.push(what ?? ''), parse<T>(digest, what));
  const d = await svc.diffCheckpoints('s', 'base', '2');
  assert.equal(
    parsed.filter((w) => w === 'Snapshot'),
    [],
    'no Snapshot document parsed whole',
  );
  const whole = diffEntries(svc.readSnapshot(d.from.snapshot).entries, svc.readSnapshot(d.to.snapshot).entries);
  assert.equal(d.changes, whole, 'the same changes as the entries give');
  assert.ok(d.changes.some((c) => c.kind === 'mode' && c.path === 'run.sh'));
});

test('refused while a run holds the session; nothing checkpointed, nothing written', async () => {
  const { svc, root } = await setup();
  await svc.checkpoint('s');
  writeFileSync(join(root, 'x.txt'), 'x\n');
  const running = svc.run('s', 'sleep', ['1.5'], { stdio: 'pipe' });
  await sleep(400);
  await svc.restore('s', '1').then(
    () => assert.unreachable('restored under a run'),
    (err: { code: string }) => assert.is(err.code, 'E_LEASE_BUSY'),
  );
  await running;
  assert.ok(existsSync(join(root, 'x.txt')));
  assert.is((await svc.log('s')).checkpoints.length, 1);
});

test('the safety checkpoint cannot be taken (an unsupported entry): nothing is restored and the error says why', async () => {
  const { svc, root } = await setup();
  await svc.checkpoint('s');
  writeFileSync(join(root, 'x.txt'), 'x\n');
  execFileSync('mkfifo', [join(root, 'pipe')]);
  const err = await svc.restore('s', '1').then(
    () => null,
    (e: Error & { code: string }) => e,
  );
  assert.ok(err, 'restore went on without its safety checkpoint');
  assert.match(err!.message, /checkpoint before the restore could not be taken, so nothing was restored/);
  assert.ok(existsSync(join(root, 'x.txt')), 'nothing was restored');
  assert.equal(
    (await svc.journal.list()).filter((i) => i.op === 'restore'),
    [],
    'no intent left',
  );
});

test('a corrupt object of the target: E_OBJECT_CORRUPT while staging, the tree as it was, no intent left', async () => {
  const { svc, root } = await setup();
  await svc.checkpoint('s');
  writeFileSync(join(root, 'a.txt'), 'changed\n');
  const before = await entries(root);
  const snap = svc.readSnapshot((await svc.log('s')).checkpoints[0]!.snapshot);
  const a = snap.entries.find((e) => e.path === 'a.txt') as Extract<Entry, { kind: 'file' }>;
  const obj = svc.store.objectPath(a.digest);
  chmodSync(obj, 0o644);
  writeFileSync(obj, 'tampered\n');
  await svc.restore('s', '1').then(
    () => assert.unreachable('restored from a corrupt object'),
    (err: { code: string }) => assert.is(err.code, 'E_OBJECT_CORRUPT'),
  );
  assert.equal(diffEntries(before, await entries(root)), [], 'the tree is as it was');
  assert.equal(
    (await svc.journal.list()).filter((i) => i.op === 'restore'),
    [],
  );
  assert.not.ok(existsSync(join(root, '.pdb')), 'no staging left');
});

test('a kill at each step of a restore: after gc the root is the target (or, before the safety checkpoint, as it was); nothing lost', async () => {
  for (const point of CRASH_POINTS.filter((p) => p.startsWith('restore:'))) {
    const { store, svc, root } = await setup();
    await svc.checkpoint('s');
    const want = await entries(root);
    mess(root);
    const messed = await entries(root);
    const killed = pdb(store, ['restore', 's', '--to', '1'], { PDB_ENV_CRASH_AT: point });
    assert.is(killed.signal, 'SIGKILL', `${point}: ${killed.stderr}`);
    const gc = pdb(store, ['gc', '--json']);
    assert.is(gc.code, 0, `${point}: ${gc.stdout}${gc.stderr}`);
    const now = await entries(root);
    const log = (await svc.log('s')).checkpoints;
    if (point === 'restore:after-intent') assert.equal(diffEntries(messed, now), [], `${point}: the tree before`);
    else {
      assert.equal(diffEntries(want, now), [], `${point}: the restored tree`);
      // Nothing lost: the safety checkpoint holds the tree before.
      assert.equal(diffEntries(messed, svc.readSnapshot(log[1]!.snapshot).entries), [], `${point}: the safety checkpoint`);
      assert.is(log.at(-1)!.restoredFrom, 1, `${point}: the restored tree is checkpointed`);
    }
    assert.equal(await svc.journal.list(), [], `${point}: an intent left`);
    assert.not.ok(existsSync(join(root, '.pdb')), `${point}: staging left`);
    assert.equal(readdirSync(join(root, '.git')), ['HEAD']);
    const doctor = JSON.parse(pdb(store, ['doctor', '--json']).stdout) as { findings: unknown[] };
    assert.equal(doctor.findings, [], `${point}: doctor after gc`);
    assert.is(pdb(store, ['verify']).code, 0, `${point}: verify`);
  }
});

test('gc keeps the last history.keep checkpoints (pdb-env.json) and pinned ones; log marks the collected; du shows the history', async () => {
  const { dir, svc, root } = await setup();
  writeFileSync(join(dir, 'src', 'pdb-env.json'), JSON.stringify({ history: { keep: 2 } }));
  const snaps: string[] = [];
  for (let i = 0; i < 5; i++) {
    writeFileSync(join(root, 'v.txt'), `version ${i} ${'x'.repeat(100)}\n`);
    snaps.push((await svc.checkpoint('s')).snapshot);
  }
  await svc.pin(snaps[0]!);
  const du = await svc.du('s');
  const h = du.sessions[0]!.history!;
  assert.is(h.checkpoints, 5);
  assert.is(h.kept, 2);
  await svc.gc();
  const log = (await svc.log('s')).checkpoints;
  assert.equal(
    log.map((c) => c.collected),
    [false, true, true, false, false],
  );
  await svc.restore('s', '2').then(
    () => assert.unreachable('restored a collected checkpoint'),
    (err: { code: string; message: string }) => assert.is(err.code, 'E_OBJECT_MISSING'),
  );
  await svc.restore('s', '1'); // pinned
  assert.match(readFileSync(join(root, 'v.txt'), 'utf8'), /^version 0/);
  const v = await svc.verify();
  assert.equal([v.corrupt, v.missing], [[], []]);
});

test.run();
