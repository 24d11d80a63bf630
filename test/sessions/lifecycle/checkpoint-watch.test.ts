// The daemon's watch of session roots (model/scan/watch.ts, `daemon start --watch`): a checkpoint
// that lstats only what an event touched must give exactly what a scan that trusts nothing gives,
// whatever happened in the root since the last one. Random operations (fast-check), each batch
// followed by a checkpoint through the watch, checked against a full re-hash; most batches wait
// out the racy window first, so that a row the watch wrongly vouched for would be a trusted one,
// kept as it was recorded. Among the operations (issue 55 item 2): directories moved out of the
// root and back (changed while away), a file deleted and made again at once (the inode reused,
// same size, the old mtime), writes through descriptors opened in an earlier batch (across
// checkpoints, after renames and deletes). PDB_WATCH_SEED replays a run (its seed is printed).
// Then each blind spot docs/store.md declares, shown missed.
import {
  appendFileSync,
  chmodSync,
  closeSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Digest } from '../../../model/canonical-json.js';
import { scanTree } from '../../../model/scan/scan.js';
import { nativeUnavailable } from '../../../model/scan/scanner.js';
import { unwatchAll, vouchedRows, watchCounts, watchSessionRoots } from '../../../model/scan/watch.js';
import { readTreeIndex } from '../../../model/scan/tree-index.js';
import { sessionIndexFile } from '../../../sessions/records/session-record.js';
import { createSnapshot, snapshotDigest, type Snapshot } from '../../../model/snapshot.js';
import { SessionService } from '../../../sessions/service.js';
import { hasCommand, skipPart, skipTest, tempDir, writeTree } from '../../helpers/index.js';

const SEED = Number(process.env.PDB_WATCH_SEED ?? Math.floor(Math.random() * 2 ** 31));
const why = nativeUnavailable() ?? (process.platform === 'linux' ? null : 'inotify is Linux only');
if (why) skipPart("the daemon's watch of session roots", 'native-scan', why);
const t = tempDir();
test.after(() => {
  unwatchAll();
  t.cleanup();
});

const OPS = [
  'append',
  'same-size',
  'same-mtime',
  'create',
  'delete',
  'rename',
  'move',
  'mkdir',
  'rmdir',
  'dir-rename',
  'symlink',
  'chmod',
  'link-in',
  'through-link',
  'recreate-dir',
  'truncate',
  'dir-out',
  'dir-back',
  'reuse-inode',
  'fd-open',
  'fd-write',
] as const;
type Op = { op: (typeof OPS)[number]; pick: number; n: number };

/** Every file and directory under root, relative, sorted (directories with a trailing /). */
function listing(root: string, rel = ''): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(root, rel), { withFileTypes: true })) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(`${p}/`, ...listing(root, p));
    else out.push(p);
  }
  return out.sort();
}

/** Descriptors opened for writing by an earlier operation (fd-open), written through later (fd-write), closed after each run. */
const held: number[] = [];
const closeHeld = () => {
  for (const fd of held.splice(0)) closeSync(fd);
};

/** One operation on the root, on the entry `pick` chooses; `outside` holds what is linked from outside it and directories moved out. Long on purpose: one case per operation, read as a list. */
function apply(root: string, outside: string, { op, pick, n }: Op): void {
  const all = listing(root);
  const files = all.filter((p) => !p.endsWith('/') && statSync(join(root, p), { throwIfNoEntry: false })?.isFile());
  const dirs = ['', ...all.filter((p) => p.endsWith('/')).map((p) => p.slice(0, -1))];
  const file = files.length ? files[pick % files.length]! : null;
  const dir = dirs[pick % dirs.length]!;
  const at = (p: string) => join(root, p);
  // A name no entry has (n repeats across operations once fast-check shrinks).
  const fresh = (d: string) => {
    let k = n;
    while (existsSync(at(d ? `${d}/n${k}` : `n${k}`))) k++;
    return d ? `${d}/n${k}` : `n${k}`;
  };
  switch (op) {
    case 'append':
      if (file) appendFileSync(at(file), `more ${n}\n`);
      break;
    case 'same-size':
      if (file) writeFileSync(at(file), Buffer.alloc(statSync(at(file)).size, 65 + (n % 26)));
      break;
    case 'same-mtime':
      if (file) {
        const st = statSync(at(file));
        writeFileSync(at(file), Buffer.alloc(st.size, 97 + (n % 26)));
        utimesSync(at(file), st.atime, st.mtime);
      }
      break;
    case 'create':
      writeFileSync(at(fresh(dir)), `new ${n}\n`);
      break;
    case 'delete':
      if (file) rmSync(at(file));
      break;
    case 'rename':
      if (file && !existsSync(at(`${file}.r${n}`))) renameSync(at(file), at(`${file}.r${n}`));
      break;
    case 'move':
      if (file) renameSync(at(file), at(fresh(dir)));
      break;
    case 'mkdir': {
      const d = fresh(dir);
      mkdirSync(at(d));
      writeFileSync(at(`${d}/inside`), `in ${n}\n`);
      break;
    }
    case 'rmdir':
      if (dir) rmSync(at(dir), { recursive: true });
      break;
    case 'dir-rename':
      if (dir && !existsSync(at(`${dir}.d${n}`))) renameSync(at(dir), at(`${dir}.d${n}`));
      break;
    case 'symlink':
      if (file) rmSync(at(file));
      if (file) symlinkSync(`target-${n}`, at(file));
      else symlinkSync(`target-${n}`, at(fresh(dir)));
      break;
    case 'chmod':
      if (file) chmodSync(at(file), statSync(at(file)).mode & 0o100 ? 0o644 : 0o755);
      break;
    case 'link-in': {
      let k = n;
      while (existsSync(join(outside, `o${k}`))) k++;
      const o = join(outside, `o${k}`);
      writeFileSync(o, `outside ${n}\n`);
      linkSync(o, at(fresh(dir)));
      break;
    }
    case 'through-link': {
      // A file linked in from outside (an earlier link-in), written through the outside path.
      const linked = readdirSync(outside)
        .filter((e) => !e.startsWith('away'))
        .sort();
      const o = linked[pick % Math.max(1, linked.length)];
      if (o) appendFileSync(join(outside, o), `through ${n}\n`);
      break;
    }
    case 'recreate-dir':
      // Gone and made again under the same name, with a file of a name it held.
      if (dir) {
        const held = readdirSync(at(dir)).find((e) => lstatSync(at(`${dir}/${e}`)).isFile());
        rmSync(at(dir), { recursive: true });
        mkdirSync(at(dir));
        if (held) writeFileSync(at(`${dir}/${held}`), `recreated ${n}\n`);
      }
      break;
    case 'truncate':
      if (file) truncateSync(at(file), 0);
      break;
    case 'dir-out':
      // A directory moved out of the root (to a directory no watch holds), changed there.
      if (dir && !existsSync(join(outside, `away${n}`))) {
        renameSync(at(dir), join(outside, `away${n}`));
        writeFileSync(join(outside, `away${n}`, `while-away-${n}`), `away ${n}\n`);
      }
      break;
    case 'dir-back': {
      // ... and back, under its old name or a fresh one (an earlier dir-out, maybe in an earlier batch).
      const away = readdirSync(outside)
        .filter((e) => e.startsWith('away'))
        .sort();
      const d = away[pick % Math.max(1, away.length)];
      if (d) {
        const rel = n % 2 ? fresh(dir) : dir ? `${dir}/${d}` : d;
        if (!existsSync(at(rel))) renameSync(join(outside, d), at(rel));
      }
      break;
    }
    case 'reuse-inode':
      // Deleted and made again at once: ext4 hands the freed inode to the new file; same size, the old mtime.
      if (file) {
        const st = statSync(at(file));
        rmSync(at(file));
        writeFileSync(at(file), Buffer.alloc(st.size, 48 + (n % 10)));
        utimesSync(at(file), st.atime, st.mtime);
      }
      break;
    case 'fd-open':
      if (file) held.push(openSync(at(file), 'r+'));
      break;
    case 'fd-write': {
      // Through a descriptor opened earlier (the file may have been renamed or deleted since).
      const fd = held[pick % Math.max(1, held.length)];
      if (fd !== undefined) writeSync(fd, `fd ${n}\n`, 0);
      break;
    }
  }
}

let cases = 0;
async function session() {
  const dir = join(t.dir, `case${cases++}`);
  const src = join(dir, 'src');
  const files = (k: number) => Object.fromEntries(Array.from({ length: k }, (_, i) => [`f${i}.txt`, `file ${i}\n`]));
  writeTree(src, { a: { ...files(6), deep: { er: files(4) } }, b: files(5), c: {}, 'top.txt': 'top\n' });
  const outside = join(dir, 'outside');
  mkdirSync(outside);
  const svc = await SessionService.open(join(dir, 'store'), { create: true });
  await svc.create('s', { from: src });
  await sleep(150);
  await svc.checkpoint('s'); // the watch is set up here, before its walk
  await svc.checkpoint('s'); // and recorded: the next one is vouched for
  return { svc, root: svc.sessionRoot('s'), outside };
}

test('a checkpoint through the watch is the full re-hash, whatever happened since the one before', async () => {
  if (why) return;
  assert.ok(watchSessionRoots(), 'the addon watches here');
  const op = fc.record({ op: fc.constantFrom(...OPS), pick: fc.nat(1000), n: fc.nat(1_000_000) });
  const before = { ...watchCounts };
  console.log(`checkpoint-watch: PDB_WATCH_SEED=${SEED}`);
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(fc.array(op, { minLength: 1, maxLength: 4 }), fc.boolean()), { minLength: 3, maxLength: 8 }),
      async (batches) => {
        const { svc, root, outside } = await session();
        const base = (await svc.readSession('s')).base as Digest;
        const excludes = svc.store.getDocument<Snapshot>(base, 'Snapshot').excludes;
        try {
          for (const [ops, settle] of batches) {
            for (const o of ops) apply(root, outside, o);
            if (settle) await sleep(120); // past the racy window: what the watch vouches for is trusted
            const cp = await svc.checkpoint('s');
            const full = await scanTree(root, { excludes });
            assert.is(
              cp.snapshot,
              snapshotDigest(createSnapshot(full.entries, excludes, base)),
              `after ${JSON.stringify(ops)}: the checkpoint is the full re-hash`,
            );
          }
        } finally {
          closeHeld();
        }
        assert.ok(existsSync(dirname(root)));
      },
    ),
    { numRuns: 25, seed: SEED },
  );
  assert.ok(watchCounts.vouched - before.vouched > 40, `${watchCounts.vouched - before.vouched} checkpoints vouched for by the watch`);
});

test('a directory removed while a descriptor under it is open, made again under its name: what is written in the new one is seen (CI seed 916508392)', async () => {
  if (why) return;
  watchSessionRoots();
  const { svc, root } = await session();
  // The descriptor pins a/deep/er/f0.txt, so the removed a, a/deep, a/deep/er stay allocated: inotify
  // says nothing of their end (no IN_IGNORED) until it is closed, and their watches are still there.
  const fd = openSync(join(root, 'a', 'deep', 'er', 'f0.txt'), 'r+');
  try {
    appendFileSync(join(root, 'a', 'deep', 'er', 'f0.txt'), 'more\n');
    let r = await againstFull(svc, root);
    assert.is(r.watched, r.full, 'the append under a');
    rmSync(join(root, 'a'), { recursive: true });
    mkdirSync(join(root, 'a'));
    writeFileSync(join(root, 'a', 'f0.txt'), 'recreated\n');
    r = await againstFull(svc, root);
    assert.is(r.watched, r.full, 'a made again');
    for (let i = 0; i < 3; i++) {
      appendFileSync(join(root, 'a', 'f0.txt'), `more ${i}\n`);
      if (i === 1) await sleep(120); // past the racy window: a row wrongly vouched for would be trusted
      r = await againstFull(svc, root);
      assert.ok(r.vouched, 'vouched for by the watch');
      assert.is(r.watched, r.full, `append ${i} in the new a`);
    }
  } finally {
    closeSync(fd);
  }
});

test('a watched checkpoint lstats only what changed: one file appended in a large tree', async () => {
  if (why) return;
  watchSessionRoots();
  const { svc, root } = await session();
  const v0 = watchCounts.vouched;
  appendFileSync(join(root, 'b', 'f1.txt'), 'one more\n');
  await sleep(120);
  const cp = await svc.checkpoint('s');
  assert.is(watchCounts.vouched, v0 + 1, 'vouched for');
  assert.is(cp.modified, 1);
  assert.is(cp.filesHashed, 1);
});

test('the events a walk read are its own: a checkpoint that failed after reading them leaves the next one a walk of everything', async () => {
  if (why) return;
  watchSessionRoots();
  const { svc, root } = await session();
  const s = await svc.session('s');
  const index = () => readTreeIndex(sessionIndexFile(svc.store, 's'));
  assert.ok(vouchedRows(s.dir, s.root, index()), 'vouched for after a recorded checkpoint');
  // That walk never recorded (a checkpoint that failed): its events are gone with it.
  appendFileSync(join(root, 'b', 'f2.txt'), 'changed\n');
  await svc.checkpoint('s').catch(() => {});
  const i2 = index();
  assert.ok(vouchedRows(s.dir, s.root, i2), 'after the checkpoint recorded');
  appendFileSync(join(root, 'b', 'f3.txt'), 'changed\n');
  assert.is(vouchedRows(s.dir, s.root, i2), null, 'the next call, with no record between: everything walked');
  const base = (await svc.readSession('s')).base as Digest;
  const excludes = svc.store.getDocument<Snapshot>(base, 'Snapshot').excludes;
  const cp = await svc.checkpoint('s');
  const full = await scanTree(root, { excludes });
  assert.is(cp.snapshot, snapshotDigest(createSnapshot(full.entries, excludes, base)));
});

/** The checkpoint's Snapshot and the one a scan that trusts nothing gives of the root now. */
async function againstFull(svc: SessionService, root: string): Promise<{ watched: string; full: string; vouched: boolean }> {
  const base = (await svc.readSession('s')).base as Digest;
  const excludes = svc.store.getDocument<Snapshot>(base, 'Snapshot').excludes;
  const v0 = watchCounts.vouched;
  const cp = await svc.checkpoint('s');
  const full = await scanTree(root, { excludes });
  return { watched: cp.snapshot, full: snapshotDigest(createSnapshot(full.entries, excludes, base)), vouched: watchCounts.vouched > v0 };
}

test('blind spot (docs/store.md): a file linked from outside after the last walk and written through that link is missed, until --verify', async () => {
  if (why) return;
  watchSessionRoots();
  const { svc, root, outside } = await session();
  linkSync(join(root, 'b', 'f1.txt'), join(outside, 'g')); // link(2) tells only the file's own watchers
  await sleep(120);
  const first = await againstFull(svc, root); // the last walk saw one link: f1.txt is not lstat'ed again
  assert.ok(first.vouched);
  assert.is(first.watched, first.full, 'nothing written yet');
  appendFileSync(join(outside, 'g'), 'written through the outside link\n');
  await sleep(120);
  const missed = await againstFull(svc, root);
  assert.ok(missed.vouched);
  assert.is.not(missed.watched, missed.full, 'the watch misses it, as docs/store.md says');
  const verified = await svc.checkpoint('s', { verify: true });
  assert.is(verified.snapshot, missed.full, '--verify walks everything and sees it');
});

test('blind spot (docs/store.md): a write through a shared mapping still held is missed; after the mapping is released it is seen', async () => {
  if (why) return;
  if (!hasCommand('python3'))
    return skipTest('watch blind spot: shared mapping', 'native-scan', 'python3 (its mmap maps the file) is not on PATH');
  watchSessionRoots();
  const { svc, root } = await session();
  await sleep(120);
  const file = join(root, 'a', 'f2.txt');
  // A process that maps the file shared, writes through the mapping (no write(2): no inotify event) and holds it.
  const py =
    'import mmap,sys\nf=open(sys.argv[1],"r+b")\nm=mmap.mmap(f.fileno(),0)\nm[0:4]=b"MMAP"\nm.flush()\nprint("ready",flush=True)\nsys.stdin.read()\nm.close()\nf.close()\n';
  const child = spawn('python3', ['-c', py, file], { stdio: ['pipe', 'pipe', 'inherit'] });
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
      child.on('exit', (code) => reject(new Error(`python3 exited ${code} before mapping the file`)));
    });
    const missed = await againstFull(svc, root);
    assert.ok(missed.vouched);
    assert.is.not(missed.watched, missed.full, 'the mapping is still held: the watch misses the write');
    const exited = new Promise((resolve) => child.on('exit', resolve));
    child.stdin.end(); // munmap and close: the last release queues IN_CLOSE_WRITE
    await exited;
    const seen = await againstFull(svc, root);
    assert.is(seen.watched, seen.full, 'released: the next checkpoint sees it');
  } finally {
    if (child.exitCode === null && child.pid) process.kill(child.pid);
  }
});

test.run();
