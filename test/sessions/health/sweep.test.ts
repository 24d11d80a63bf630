// gc's mark and sweep on real bytes: discarded sessions' data leaves the store (back within 5 MB),
// while what a root reaches stays: a live session's base and checkpoints, a pinned digest, every
// head an environment ever had. And a sweep never breaks a create running next to it in another process.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Digest } from '../../../model/canonical-json.js';
import type { Changeset } from '../../../model/snapshot.js';
import { SessionService } from '../../../sessions/service.js';
import { CLI, hasCommand, skipTest, tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());

const MB = 1024 * 1024;
/** Bytes the store takes on disk (one filesystem). */
const du = (dir: string) => Number(execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split('\t')[0]) || 0;
const duBlocks = (dir: string) => Number(execFileSync('du', ['-sk', dir], { encoding: 'utf8' }).split('\t')[0]) * 1024;

let n = 0;
async function setup(files: Record<string, string> = { 'a.txt': 'alpha\n', lib: { 'b.txt': 'bravo\n' } } as never) {
  const dir = join(t.dir, `case${n++}`);
  const src = join(dir, 'src');
  writeTree(src, files as never);
  const svc = await SessionService.open(join(dir, 'store'), { create: true });
  return { dir, src, svc };
}

/** The objects a checkpoint added: its Snapshot, the file objects its Changeset names, and (withChangeset) the Changeset. */
function addedObjects(svc: SessionService, cp: { snapshot: Digest; changeset: Digest }, withChangeset = true): Digest[] {
  const cs = svc.store.getDocument<Changeset>(cp.changeset, 'Changeset');
  const files = cs.changes.flatMap((c) => (c.after?.kind === 'file' ? [c.after.digest] : []));
  return [cp.snapshot, ...(withChangeset ? [cp.changeset] : []), ...files];
}

test('after sessions wrote 5 x 4 MB, checkpointed and were discarded, gc brings the store back within 5 MB; verify passes', async () => {
  const { src, svc } = await setup();
  await svc.create('warm', { from: src });
  await svc.discard('warm');
  await svc.gc();
  const before = duBlocks(svc.store.paths.root);
  for (let i = 0; i < 5; i++) {
    await svc.create(`s${i}`, { from: src });
    writeFileSync(join(svc.sessionRoot(`s${i}`), 'blob.bin'), randomBytes(4 * MB));
    await svc.checkpoint(`s${i}`);
    await svc.discard(`s${i}`);
  }
  const grown = duBlocks(svc.store.paths.root);
  assert.ok(grown - before >= 20 * MB, `the checkpoints are in the store: ${grown - before} bytes`);
  const dry = await svc.gc({ dryRun: true });
  assert.ok(dry.freed.bytes >= 20 * MB, `dry run: would free ${dry.freed.bytes}`);
  assert.is(dry.freed.objects, 5 * 3);
  assert.is(duBlocks(svc.store.paths.root), grown, 'a dry run frees nothing');
  const r = await svc.gc();
  assert.is(r.freed.objects, 15);
  const after = duBlocks(svc.store.paths.root);
  assert.ok(Math.abs(after - before) <= 5 * MB, `store ${before} -> ${grown} -> ${after} bytes`);
  const v = await svc.verify();
  assert.equal([v.corrupt, v.missing], [[], []]);
  // What remains still works: create from the unchanged source (its last import is a root).
  await svc.create('again', { from: src });
  assert.ok(du(svc.sessionRoot('again')) > 0);
});

test('gc keeps a live session’s base and checkpoints, a pinned digest and every published head; unpin lets it go', async () => {
  const { src, svc } = await setup();
  // Published history: two heads of main after the import.
  await svc.create('p', { from: src });
  writeFileSync(join(svc.sessionRoot('p'), 'one.txt'), 'published one\n');
  const p1 = await svc.checkpoint('p');
  const first = await svc.publish('p', 'main', await svc.envHead('main'));
  writeFileSync(join(svc.sessionRoot('p'), 'two.txt'), 'published two\n');
  const p2 = await svc.checkpoint('p');
  await svc.publish('p', 'main', first.head);
  await svc.discard('p');
  // A live session with two checkpoints.
  await svc.create('live', { env: 'main' });
  writeFileSync(join(svc.sessionRoot('live'), 'l1.txt'), 'live one\n');
  const l1 = await svc.checkpoint('live');
  writeFileSync(join(svc.sessionRoot('live'), 'l2.txt'), 'live two\n');
  const l2 = await svc.checkpoint('live');
  // A discarded session whose checkpoint is pinned, and one that nothing keeps.
  await svc.create('pinned', { from: src });
  writeFileSync(join(svc.sessionRoot('pinned'), 'pin.txt'), 'pinned\n');
  const pc = await svc.checkpoint('pinned');
  await svc.pin(pc.snapshot);
  await svc.discard('pinned');
  await svc.create('dropped', { from: src });
  writeFileSync(join(svc.sessionRoot('dropped'), 'drop.txt'), 'dropped\n');
  const dc = await svc.checkpoint('dropped');
  await svc.discard('dropped');

  const kept = [
    first.previous,
    // A published head keeps its Snapshot (and what it reaches), not the discarded session's Changeset.
    ...addedObjects(svc, p1, false),
    ...addedObjects(svc, p2, false),
    (await svc.readSession('live')).base,
    ...addedObjects(svc, l1),
    ...addedObjects(svc, l2),
  ];
  const pinned = svc.store.getDocument<{ entries: Array<{ path: string; digest?: Digest }> }>(pc.snapshot, 'Snapshot');
  const pinnedFile = pinned.entries.find((e) => e.path === 'pin.txt')!.digest!;
  const dropped = addedObjects(svc, dc);
  const r = await svc.gc();
  for (const d of kept) assert.ok(svc.store.has(d), `kept ${d}`);
  assert.ok(svc.store.has(pc.snapshot) && svc.store.has(pinnedFile), 'the pinned Snapshot and what it reaches');
  for (const d of dropped) assert.not.ok(svc.store.has(d), `swept ${d}`);
  assert.ok(r.freed.objects >= 3);
  // The live session still checkpoints and its earlier checkpoint (not its last) survived too.
  assert.is((await svc.checkpoint('live')).snapshot, l2.snapshot);
  assert.equal(await svc.pins(), [pc.snapshot]);
  assert.is((await svc.unpin(pc.snapshot)).wasPinned, true);
  await svc.gc();
  assert.not.ok(svc.store.has(pinnedFile), 'unpinned: swept');
  assert.ok(svc.store.has(p1.snapshot), 'history is still kept');
  const v = await svc.verify();
  assert.equal([v.corrupt, v.missing], [[], []]);
});

test('gc next to creates running in other processes never breaks one', async () => {
  const files: Record<string, string> = {};
  for (let i = 0; i < 400; i++) files[`f${String(i).padStart(3, '0')}.txt`] = `file ${i}\n`.repeat(50);
  const { src, svc } = await setup(files);
  // Garbage for every sweep to find.
  await svc.create('junk', { from: src });
  writeFileSync(join(svc.sessionRoot('junk'), 'junk.bin'), randomBytes(MB));
  await svc.checkpoint('junk');
  await svc.discard('junk');
  const env = { ...process.env, PDB_ENV_STORE: svc.store.paths.root, NO_COLOR: '1' };
  const children = [0, 1, 2].map((i) => {
    // Each one changes the source first, so each imports new objects a sweep must not take.
    writeFileSync(join(src, `changed-${i}.txt`), `${i}\n`);
    const child = spawn(process.execPath, [CLI, 'create', `c${i}`, '--from', src, '--json'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (out += b));
    return { child, out: () => out, done: once(child, 'exit') as Promise<[number | null]> };
  });
  let running = true;
  const finished = Promise.all(children.map((c) => c.done)).then((codes) => {
    running = false;
    return codes;
  });
  let sweeps = 0;
  while (running) {
    await svc.gc();
    sweeps++;
  }
  const codes = await finished;
  codes.forEach(([code], i) => assert.is(code, 0, children[i]!.out()));
  assert.ok(sweeps > 0);
  await svc.gc();
  for (let i = 0; i < 3; i++) {
    const cp = await svc.checkpoint(`c${i}`, { verify: true });
    assert.ok(existsSync(join(svc.sessionRoot(`c${i}`), 'f000.txt')));
    assert.ok(svc.store.has(cp.snapshot));
  }
  const v = await svc.verify();
  assert.equal([v.corrupt, v.missing], [[], []]);
});

/** A loopback ext4 of `mib` MiB with `inodes` inodes (-N) and no root reserve, mounted for `fn`; always unmounted and detached. */
async function withExt4<T>(label: string, mib: number, inodes: number, fn: (mnt: string) => Promise<T>): Promise<T> {
  const image = join(t.dir, `${label}.img`);
  const mnt = join(t.dir, `mnt-${label}`);
  execFileSync('truncate', ['-s', `${mib}M`, image]);
  const dev = execFileSync('losetup', ['--find', '--show', image], { encoding: 'utf8' }).trim();
  let mounted = false;
  try {
    execFileSync('mkfs.ext4', ['-q', '-F', '-m', '0', '-N', String(inodes), dev]);
    execFileSync('mkdir', ['-p', mnt]);
    execFileSync('mount', [dev, mnt]);
    mounted = true;
    return await fn(mnt);
  } finally {
    if (mounted) execFileSync('umount', [mnt]);
    execFileSync('losetup', ['-d', dev]);
    execFileSync('rm', ['-f', image]);
  }
}

/** Fill the store with unreachable objects (as discarded sessions leave them) until the filesystem says no. */
async function fillWithGarbage(svc: SessionService, bytes: number): Promise<number> {
  let made = 0;
  for (;;) {
    try {
      await svc.store.putBytes(randomBytes(bytes));
      made++;
    } catch (err) {
      assert.match(String((err as { code?: string }).code), 'E_NO_SPACE', String(err));
      return made;
    }
  }
}

test('gc frees space on a store out of inodes, and on one out of blocks: nothing it writes comes before what it removes (issue 41)', async () => {
  const why = !(process.getuid?.() === 0)
    ? 'needs root'
    : !hasCommand('mkfs.ext4') || !hasCommand('losetup')
      ? 'needs mkfs.ext4 and losetup'
      : null;
  if (why) return skipTest('gc on a full filesystem', 'root', why);
  for (const [label, mib, inodes, bytes] of [
    ['inodes', 64, 600, 64],
    ['blocks', 32, 4096, 256 * 1024],
  ] as const) {
    await withExt4(label, mib, inodes, async (mnt) => {
      const src = join(t.dir, `src-${label}`);
      writeTree(src, { 'a.txt': 'alpha\n' });
      const svc = await SessionService.open(join(mnt, 'store'), { create: true });
      await svc.create('keep', { from: src });
      const garbage = await fillWithGarbage(svc, bytes);
      assert.ok(garbage > 10, `${label}: filled with ${garbage} objects`);
      const r = await svc.gc();
      assert.equal(r.failed, [], `${label}: ${JSON.stringify(r.failed)}`);
      assert.ok(r.freed.objects >= garbage, `${label}: freed ${r.freed.objects} of ${garbage}`);
      assert.equal(await svc.doctor(), [], label);
      await svc.create('after', { from: src }); // there is room again
      await svc.discard('after');
      await svc.discard('keep');
    });
  }
});

test.run();
