// An overlay checkpoint lstats only what its upper dir holds (backends/overlay.ts changedPaths,
// model/scan/changed-paths.ts): randomized operations on real overlay mounts (create, modify,
// delete, rename files and directories, a base directory deleted and made again (opaque), chmod
// (a metadata-only copy-up with metacopy=on), symlinks, retypes), each checkpoint compared with a full --verify walk of
// the same tree: the Snapshots must be the same. PDB_OVERLAY_SEED replays a run (the seed is printed).
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SessionService } from '../../sessions/service.js';
import { isRoot, skipTest, tempDir } from '../helpers/index.js';

const SEED = Number(process.env.PDB_OVERLAY_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.PDB_OVERLAY_RUNS ?? 3);
const ROUNDS = 12;

const t = tempDir();
const made: Array<{ svc: SessionService; name: string }> = [];
test.after(async () => {
  for (const { svc, name } of made) await svc.discard(name, { force: true }); // unmounts
  t.cleanup();
});

/** mulberry32: small, seeded, replayable. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** A base tree: nested directories with files and symlinks. */
function makeBase(dir: string, r: () => number): void {
  const fill = (d: string, depth: number) => {
    mkdirSync(d, { recursive: true });
    const n = 1 + Math.floor(r() * 4);
    for (let i = 0; i < n; i++) writeFileSync(join(d, `f${i}.txt`), `base ${d} ${i} ${r()}\n`, { mode: r() < 0.2 ? 0o755 : 0o644 });
    if (r() < 0.3) symlinkSync(`f0.txt`, join(d, 'link'));
    if (depth < 3) for (let i = 0, k = 1 + Math.floor(r() * 3); i < k; i++) fill(join(d, `d${i}`), depth + 1);
  };
  fill(dir, 0);
}

/** Every path under root (relative), directories marked. */
function listTree(root: string): { files: string[]; dirs: string[]; links: string[] } {
  const out = { files: [] as string[], dirs: [] as string[], links: [] as string[] };
  const walk = (rel: string) => {
    for (const d of readdirSync(rel === '' ? root : join(root, rel), { withFileTypes: true })) {
      const p = rel === '' ? d.name : `${rel}/${d.name}`;
      if (d.isDirectory()) {
        out.dirs.push(p);
        walk(p);
      } else if (d.isSymbolicLink()) out.links.push(p);
      else out.files.push(p);
    }
  };
  walk('');
  return out;
}

/** One random operation on the merged root; returns what it did (printed when the walks disagree). Long because it is one switch of twelve operations, each a few lines. */
function operate(root: string, r: () => number, serial: { n: number }): string {
  const tree = listTree(root);
  const pick = <T>(xs: T[]): T | undefined => (xs.length ? xs[Math.floor(r() * xs.length)] : undefined);
  const dirOrRoot = () => (r() < 0.2 ? '' : (pick(tree.dirs) ?? ''));
  const fresh = (d: string) => (d === '' ? `n${serial.n++}` : `${d}/n${serial.n++}`);
  const abs = (p: string) => join(root, p);
  const op = Math.floor(r() * 12);
  const f = pick(tree.files);
  const d = pick(tree.dirs);
  switch (op) {
    case 0: {
      const p = fresh(dirOrRoot());
      writeFileSync(abs(p), `new ${p} ${r()}\n`);
      return `create ${p}`;
    }
    case 1:
      if (!f) return 'none';
      writeFileSync(abs(f), `modified ${r()}\n`);
      return `modify ${f}`;
    case 2:
      if (!f) return 'none';
      rmSync(abs(f));
      return `delete ${f}`;
    case 3: {
      if (!f) return 'none';
      const to = fresh(dirOrRoot());
      renameSync(abs(f), abs(to));
      return `rename ${f} -> ${to}`;
    }
    case 4: {
      if (!d) return 'none';
      const into = dirOrRoot();
      if (into === d || into.startsWith(`${d}/`)) return 'none';
      const to = fresh(into);
      renameSync(abs(d), abs(to));
      return `rename dir ${d} -> ${to}`;
    }
    case 5: {
      // A base directory deleted and made again: opaque in the upper dir.
      if (!d) return 'none';
      rmSync(abs(d), { recursive: true });
      if (r() < 0.7) {
        mkdirSync(abs(d));
        if (r() < 0.7) writeFileSync(abs(`${d}/again.txt`), `again ${r()}\n`);
        return `recreate dir ${d}`;
      }
      return `delete dir ${d}`;
    }
    case 6: {
      if (!f) return 'none';
      const mode = statSync(abs(f)).mode & 0o777;
      chmodSync(abs(f), mode & 0o100 ? 0o644 : 0o755);
      // With metacopy=on a base file's chmod copies up its metadata only; a write after it, its data.
      if (r() < 0.3) {
        writeFileSync(abs(f), `after chmod ${r()}\n`, { flag: 'a' });
        return `chmod and append ${f}`;
      }
      return `chmod ${f}`;
    }
    case 7: {
      const p = fresh(dirOrRoot());
      symlinkSync(pick(tree.files) ?? 'nowhere', abs(p));
      return `symlink ${p}`;
    }
    case 8: {
      const l = pick(tree.links);
      if (!l) return 'none';
      rmSync(abs(l));
      symlinkSync(`retargeted-${r()}`, abs(l));
      return `retarget ${l}`;
    }
    case 9: {
      const p = fresh(dirOrRoot());
      mkdirSync(abs(p));
      if (r() < 0.5) writeFileSync(abs(`${p}/x.txt`), `x ${r()}\n`);
      return `mkdir ${p}`;
    }
    case 10: {
      // Retype: a file becomes a directory.
      if (!f) return 'none';
      rmSync(abs(f));
      mkdirSync(abs(f));
      writeFileSync(abs(`${f}/inside.txt`), `inside ${r()}\n`);
      return `retype ${f}`;
    }
    default: {
      // A directory renamed onto the name of one deleted before (its redirect changes).
      if (tree.dirs.length < 2) return 'none';
      const [a, b] = [pick(tree.dirs)!, pick(tree.dirs)!];
      if (a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`)) return 'none';
      rmSync(abs(b), { recursive: true });
      renameSync(abs(a), abs(b));
      return `replace dir ${b} with ${a}`;
    }
  }
}

test(`overlay: a checkpoint from the upper dir equals a full --verify walk (seed ${SEED}, PDB_OVERLAY_SEED replays)`, async () => {
  if (!isRoot()) return skipTest('overlay upper-dir checkpoint', 'root', 'mounting an overlay needs root');
  console.log(`overlay upper-dir test: seed ${SEED} (PDB_OVERLAY_SEED=${SEED} replays)`);
  const r = rng(SEED);
  const svc = await SessionService.open(join(t.dir, 'store'), { create: true });
  let compared = 0;
  for (let run = 0; run < RUNS; run++) {
    const src = join(t.dir, `src${run}`);
    makeBase(src, r);
    if (run === 0) {
      const probe = await svc.probe('overlay', src);
      if (!probe.available) return skipTest('overlay upper-dir checkpoint', 'overlay', probe.detail);
    }
    const name = `o${run}`;
    const s = await svc.create(name, { from: src, backend: 'overlay' });
    made.push({ svc, name });
    const serial = { n: 0 };
    const done: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0, k = 1 + Math.floor(r() * 6); i < k; i++) done.push(operate(s.root, r, serial));
      const fast = await svc.checkpoint(name);
      assert.is(fast.walked.by, 'backend', `the upper dir told the walk what to lstat (${fast.walked.reason})`);
      // Some rounds chain checkpoints from the upper dir; the others compare with a full walk.
      if (r() < 0.4 && round < ROUNDS - 1) continue;
      const full = await svc.checkpoint(name, { verify: true });
      assert.is(full.walked.by, 'whole');
      compared++;
      if (fast.snapshot !== full.snapshot) {
        const diff = (await svc.diffCheckpoints(name, `${fast.number}`, `${full.number}`)) as unknown;
        assert.unreachable(
          `seed ${SEED} run ${run} round ${round}: the upper-dir checkpoint differs from the full walk\n${JSON.stringify(diff)}\nafter: ${done.join('; ')}`,
        );
      }
      assert.is(fast.changeset, full.changeset, 'and so do their Changesets');
    }
    // What the checkpoints saw is what is there: no file of the tree is unknown to the last one.
    assert.ok(lstatSync(s.root).isDirectory());
  }
  assert.ok(compared >= RUNS, `compared ${compared} times`);
  console.log(`overlay upper-dir test: ${compared} comparisons with a full walk, 0 disagreements (seed ${SEED})`);
});

test('overlay: only what the upper dir holds is lstat-ed; a session root not mounted says why the walk is whole', async () => {
  if (!isRoot()) return skipTest('overlay changed paths', 'root', 'mounting an overlay needs root');
  const src = join(t.dir, 'src-small');
  mkdirSync(join(src, 'a', 'deep'), { recursive: true });
  mkdirSync(join(src, 'b'), { recursive: true });
  writeFileSync(join(src, 'a', 'deep', 'x.txt'), 'x\n');
  writeFileSync(join(src, 'b', 'y.txt'), 'y\n');
  const svc = await SessionService.open(join(t.dir, 'store-small'), { create: true });
  const probe = await svc.probe('overlay', src);
  if (!probe.available) return skipTest('overlay changed paths', 'overlay', probe.detail);
  const s = await svc.create('small', { from: src, backend: 'overlay' });
  made.push({ svc, name: 'small' });
  const { getBackend } = await import('../../backends/registry.js');
  const backend = await getBackend('overlay');
  const ctx = svc.backendContext(src);
  writeFileSync(join(s.root, 'b', 'y.txt'), 'changed\n');
  renameSync(join(s.root, 'a'), join(s.root, 'c'));
  const { readSession, sessionDir: dirOf } = await import('../../sessions/records/session-record.js');
  const sessionDir = dirOf(svc.store, 'small');
  const state = (await readSession(svc.store, 'small')).backendState;
  const skip = { names: new Set<string>(), paths: new Set<string>(['.git', '.pdb', '.pdb-host']) };
  const changed = await backend.changedPaths!(ctx, s.root, sessionDir, state, skip);
  assert.equal(changed.reason, null);
  // b was copied up for y.txt; a is a whiteout, c a renamed directory (its subtree is walked whole).
  assert.equal([...changed.paths!].sort(), ['a', 'b', 'b/y.txt', 'c']);
  assert.equal(changed.subtrees, ['c']);
  // b merges the base's b (a copy-up): its other children are the base's.
  assert.equal(changed.merged, ['b']);
  const cp = await svc.checkpoint('small');
  assert.is(cp.walked.by, 'backend');
  const full = await svc.checkpoint('small', { verify: true });
  assert.is(cp.snapshot, full.snapshot);
  // A base directory deleted and made again is opaque, not merged; a file made in b and deleted after
  // a checkpoint leaves the upper dir with its record, and the next checkpoint still sees it gone.
  writeFileSync(join(s.root, 'b', 'made.txt'), 'made\n');
  await svc.checkpoint('small');
  rmSync(join(s.root, 'b', 'made.txt'));
  rmSync(join(s.root, 'c'), { recursive: true });
  mkdirSync(join(s.root, 'c'));
  const again = await backend.changedPaths!(ctx, s.root, sessionDir, state, skip);
  assert.equal([...again.paths!].sort(), ['a', 'b', 'b/y.txt', 'c']);
  assert.equal(again.merged, ['b'], 'c is opaque now');
  assert.equal(again.subtrees, []);
  const after = await svc.checkpoint('small');
  assert.is(after.deleted, 3, 'b/made.txt, c/deep and c/deep/x.txt are gone');
  assert.is(after.snapshot, (await svc.checkpoint('small', { verify: true })).snapshot);
});

test('overlay: a chmod of a base file is a metadata-only copy-up (metacopy=on), and the upper-dir checkpoint sees it', async () => {
  if (!isRoot()) return skipTest('overlay metacopy', 'root', 'mounting an overlay needs root');
  const src = join(t.dir, 'src-meta');
  mkdirSync(join(src, 'a'), { recursive: true });
  writeFileSync(join(src, 'a', 'x.txt'), 'the base data of x\n');
  writeFileSync(join(src, 'a', 'y.txt'), 'the base data of y\n');
  const svc = await SessionService.open(join(t.dir, 'store-meta'), { create: true });
  const probe = await svc.probe('overlay', src);
  if (!probe.available) return skipTest('overlay metacopy', 'overlay', probe.detail);
  const s = await svc.create('meta', { from: src, backend: 'overlay' });
  made.push({ svc, name: 'meta' });
  const { readSession, sessionDir: dirOf } = await import('../../sessions/records/session-record.js');
  const state = (await readSession(svc.store, 'meta')).backendState;
  // A kernel whose overlay module has the metacopy parameter takes metacopy=on: the session must use it.
  if (!existsSync('/sys/module/overlay/parameters/metacopy'))
    return skipTest('overlay metacopy', 'overlay', "this kernel's overlay has no metacopy feature");
  assert.is(state.options, 'redirect_dir=on,metacopy=on', 'the session was mounted with metacopy=on');
  chmodSync(join(s.root, 'a', 'x.txt'), 0o755);
  chmodSync(join(s.root, 'a', 'y.txt'), 0o755);
  writeFileSync(join(s.root, 'a', 'y.txt'), 'y written after its chmod\n', { flag: 'a' });
  // The upper file of x holds no data (a sparse file of the right size): the data is still the lower file's.
  const upperX = readFileSync(join(dirOf(svc.store, 'meta'), 'upper', 'a', 'x.txt'));
  assert.is(upperX.length, 'the base data of x\n'.length);
  assert.ok(
    upperX.every((b) => b === 0),
    'a metadata-only copy-up',
  );
  assert.is(readFileSync(join(s.root, 'a', 'x.txt'), 'utf8'), 'the base data of x\n');
  const cp = await svc.checkpoint('meta');
  assert.is(cp.walked.by, 'backend');
  assert.is(cp.modified, 2, 'the mode of x and the mode and data of y');
  const full = await svc.checkpoint('meta', { verify: true });
  assert.is(cp.snapshot, full.snapshot);
  // Mounted again (after a reboot, say) with the options it was made with: the metacopy file still reads the base data.
  const { getBackend } = await import('../../backends/registry.js');
  const backend = await getBackend('overlay');
  await backend.release(svc.backendContext(src), s.root, dirOf(svc.store, 'meta'), state);
  await backend.resume(svc.backendContext(src), s.root, dirOf(svc.store, 'meta'), state);
  assert.is(readFileSync(join(s.root, 'a', 'x.txt'), 'utf8'), 'the base data of x\n');
  assert.is(statSync(join(s.root, 'a', 'x.txt')).mode & 0o777, 0o755);
});

test.run();
