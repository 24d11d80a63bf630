// The directory rule and the file rule against a full re-hash, on real trees, with each scanner:
// whatever is done to a session (adds, deletes, renames, retypes, name swaps within one second, a
// directory replaced by another of the same name, times set back), a checkpoint that trusts its
// index gives the Snapshot and the changes a scan that trusts nothing gives, and the index it
// leaves describes the tree exactly. Random sequences come from a seed (PDB_SCAN_SEED explores others).
import { execFileSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Digest } from '../../../model/canonical-json.js';
import { scanTree } from '../../../model/scan/scan.js';
import { nativeUnavailable } from '../../../model/scan/scanner.js';
import { readTreeIndex } from '../../../model/scan/tree-index.js';
import { createSnapshot, diffEntries, snapshotDigest, type Changeset, type Snapshot } from '../../../model/snapshot.js';
import { sessionIndexFile } from '../../../sessions/records/session-record.js';
import { SessionService } from '../../../sessions/service.js';
import { controlModule } from '../../helpers/controls/run-controls.js';
import { skipPart, tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());

const scanners = (): Array<'js' | 'native'> => {
  const why = nativeUnavailable();
  if (why) skipPart('the directory rule with the native scanner', 'native-scan', why);
  return why ? ['js'] : ['js', 'native'];
};

let n = 0;
async function session(scanner: 'js' | 'native') {
  process.env.PDB_ENV_SCANNER = scanner;
  const dir = join(t.dir, `case${n++}`);
  const src = join(dir, 'src');
  writeTree(src, {
    'top.txt': 'top\n',
    p: { 'a.txt': 'alpha\n', 'b.txt': 'bravo\n', q: { 'c.txt': 'charlie\n', deep: { 'd.txt': 'delta\n' } } },
    r: { 'e.txt': 'echo\n', link: { link: '../top.txt' } },
    s: {},
  });
  const svc = await SessionService.open(join(dir, 'store'), { create: true });
  await svc.create('s', { from: src });
  await sleep(250);
  await svc.checkpoint('s'); // records every signature trusted, directories included
  return { svc, root: svc.sessionRoot('s') };
}

/** The checkpoint of the session against a scan that trusts nothing, and its index against that scan. */
async function assertMatchesFullHash(svc: SessionService, root: string, what: string) {
  const base = svc.store.getDocument<Snapshot>((await svc.readSession('s')).base, 'Snapshot');
  const cp = await svc.checkpoint('s');
  const full = await scanTree(root, { excludes: base.excludes });
  const expected = snapshotDigest(createSnapshot(full.entries, base.excludes, (await svc.readSession('s')).base as Digest));
  assert.is(cp.snapshot, expected, `${what}: the checkpoint is the full re-hash`);
  const changes = svc.store.getDocument<Changeset>(cp.changeset, 'Changeset').changes.map((c) => `${c.kind} ${c.path}`);
  assert.equal(
    changes,
    diffEntries(base.entries, full.entries).map((c) => `${c.kind} ${c.path}`),
    `${what}: the changes`,
  );
  const index = readTreeIndex(sessionIndexFile(svc.store, 's'));
  assert.ok(index, `${what}: the index left can be read back`);
  assert.equal(index.entries, full.entries, `${what}: the index left describes the tree`);
  return cp;
}

const write = (p: string, s: string) => writeFileSync(p, s);
const q = (p: string) => `'${p.replace(/'/g, `'\\''`)}'`;

/** Keep the exact mtime (nanoseconds) of each path in a reference file; `restore()` sets them back (touch -r). */
function keepTimes(paths: string[]): { restore(): void } {
  const refs = join(t.dir, `times-${n++}`);
  mkdirSync(refs);
  execFileSync('sh', ['-c', paths.map((p, i) => `touch -m -r ${q(p)} ${q(join(refs, String(i)))}`).join('\n')]);
  return {
    restore: () => {
      const script = paths.map((p, i) => `[ -e ${q(p)} ] && [ ! -L ${q(p)} ] && touch -m -r ${q(join(refs, String(i)))} ${q(p)}`);
      execFileSync('sh', ['-c', `${script.join('\n')}\ntrue`]);
    },
  };
}

for (const scanner of scanners()) {
  test(`${scanner}: an unchanged session reads no directory; a change reads only its directory`, async () => {
    const { svc, root } = await session(scanner);
    await sleep(150);
    await svc.checkpoint('s');
    const quiet = await svc.checkpoint('s');
    assert.is(quiet.scanner, scanner);
    assert.is(quiet.dirsRead, 0, 'every directory kept its names');
    assert.is(quiet.filesHashed, 0);
    write(join(root, 'p', 'q', 'new.txt'), 'new\n');
    const one = await assertMatchesFullHash(svc, root, 'add in p/q');
    assert.is(one.dirsRead, 1, 'only p/q was read');
  });

  test(`${scanner}: adds, deletes, renames and retypes in kept directories, found`, async () => {
    const { svc, root } = await session(scanner);
    write(join(root, 's', 'new.txt'), 'new\n');
    rmSync(join(root, 'p', 'b.txt'));
    renameSync(join(root, 'p', 'q', 'c.txt'), join(root, 'r', 'c2.txt'));
    renameSync(join(root, 'p', 'q', 'deep'), join(root, 's', 'deep'));
    rmSync(join(root, 'r', 'link'));
    mkdirSync(join(root, 'r', 'link')); // symlink -> dir
    rmSync(join(root, 'top.txt'));
    symlinkSync('p', join(root, 'top.txt')); // file -> symlink
    chmodSync(join(root, 'p', 'a.txt'), 0o755);
    await assertMatchesFullHash(svc, root, 'mixed');
  });

  test(`${scanner}: a symlink gone, and nothing else, leaves an index that can be read back`, async () => {
    const { svc, root } = await session(scanner);
    rmSync(join(root, 'r', 'link'));
    await assertMatchesFullHash(svc, root, 'symlink removed');
    await sleep(150);
    const quiet = await svc.checkpoint('s');
    assert.is(quiet.filesHashed, 0, 'the index was read back and trusted');
  });

  test(`${scanner}: names swapped within one second, times set back, are found`, async () => {
    const { svc, root } = await session(scanner);
    const p = join(root, 'p');
    const times = keepTimes([p, join(p, 'a.txt'), join(p, 'b.txt')]);
    write(join(p, 'b.txt'), 'alpha\n'); // same size as a.txt
    renameSync(join(p, 'a.txt'), join(p, 'tmp'));
    renameSync(join(p, 'b.txt'), join(p, 'a.txt'));
    renameSync(join(p, 'tmp'), join(p, 'b.txt'));
    times.restore(); // every mtime set back exactly: inodes and ctimes still tell
    await assertMatchesFullHash(svc, root, 'swap');
  });

  test(`${scanner}: a name added to or removed from a kept directory whose mtime is then set back is found (its ctime moved)`, async () => {
    const { svc, root } = await session(scanner);
    const pq = join(root, 'p', 'q');
    const kept = keepTimes([pq]);
    write(join(pq, 'hidden.txt'), 'only the ctime of p/q tells\n');
    kept.restore();
    const added = await assertMatchesFullHash(svc, root, 'added, mtime set back');
    assert.ok(added.changes >= 1);
    await sleep(150);
    await svc.checkpoint('s');
    const r = join(root, 'r');
    const keptR = keepTimes([r]);
    rmSync(join(r, 'e.txt'));
    keptR.restore();
    await assertMatchesFullHash(svc, root, 'removed, mtime set back');
  });

  test(`${scanner}: a file rewritten in place with its size and mtime kept is found (its ctime moved)`, async () => {
    const { svc, root } = await session(scanner);
    const f = join(root, 'p', 'a.txt');
    const kept = keepTimes([f]);
    write(f, 'alphX\n');
    kept.restore();
    await assertMatchesFullHash(svc, root, 'same size, same mtime');
  });

  test(`${scanner}: a directory replaced by another of the same name with the same names is found`, async () => {
    const { svc, root } = await session(scanner);
    const pq = join(root, 'p', 'q');
    const kept = keepTimes([pq]);
    rmSync(pq, { recursive: true });
    mkdirSync(join(pq, 'deep'), { recursive: true }); // its inode may well be the freed one
    write(join(pq, 'c.txt'), 'charliX\n');
    write(join(pq, 'deep', 'd.txt'), 'deltX\n');
    kept.restore();
    await assertMatchesFullHash(svc, root, 'replaced dir');
  });

  test(`${scanner}: a backend that left out a directory it recorded: the first checkpoint finds it gone (no E_SOURCE_CHANGED)`, async () => {
    process.env.PDB_ENV_SCANNER = scanner;
    const dir = join(t.dir, `case${n++}`);
    const src = join(dir, 'src');
    writeTree(src, { 'top.txt': 'top\n', kinds: { empty: {}, 'a.txt': 'a\n' } });
    const svc = await SessionService.open(join(dir, 'store'), { create: true });
    // The negative control that drops every empty directory at create, recording the tree it was asked for.
    await svc.create('s', { from: src, backendModule: controlModule('empty-dir-lost'), allowTestOnly: true });
    await sleep(250);
    const cp = await svc.checkpoint('s');
    const changes = svc.store.getDocument<Changeset>(cp.changeset, 'Changeset').changes.map((c) => `${c.kind} ${c.path}`);
    assert.equal(changes, ['delete kinds/empty']);
  });

  test(`${scanner}: random changes and pauses, checkpoint after checkpoint, always the full re-hash`, async () => {
    const { svc, root } = await session(scanner);
    let seed = Number(process.env.PDB_SCAN_SEED ?? 26) >>> 0 || 1;
    const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
    const dirs = () => ['', ...walkDirs(root)];
    const log: string[] = [];
    for (let step = 0; step < 40; step++) {
      const ops = 1 + Math.floor(rand() * 4);
      // Half the steps set every mtime back afterwards: then only ctimes and inodes tell.
      const times = rand() < 0.5 ? keepTimes(pathsOf(root)) : null;
      for (let k = 0; k < ops; k++) log.push(randomOp(root, pick, dirs, rand));
      times?.restore();
      await sleep(pick([0, 0, 5, 40, 150]));
      await assertMatchesFullHash(svc, root, `step ${step}: ${log.slice(-ops).join('; ')}`);
    }
  });
}

/** Every file and directory of the tree (the root too), absolute. */
function pathsOf(root: string): string[] {
  const out = [root];
  for (const d of readdirSync(root, { withFileTypes: true, recursive: true }))
    if (d.isFile() || d.isDirectory()) out.push(join(d.parentPath ?? d.path, d.name));
  return out;
}

function walkDirs(root: string, rel = ''): string[] {
  const out: string[] = [];
  for (const d of readdirSync(join(root, rel), { withFileTypes: true }))
    if (d.isDirectory()) out.push(`${rel}${d.name}`, ...walkDirs(root, `${rel}${d.name}/`));
  return out;
}

/** One random change to the tree; returns what it did. */
function randomOp(root: string, pick: <T>(xs: readonly T[]) => T, dirs: () => string[], rand: () => number): string {
  const d = pick(dirs());
  const name = pick(['a.txt', 'b.txt', 'c', 'new', 'x y']);
  const p = join(root, d, name);
  const kind = pick(['write', 'append', 'same-size', 'rm', 'mkdir', 'rmdir', 'mv', 'swap', 'link', 'chmod', 'replace-dir']);
  try {
    switch (kind) {
      case 'write':
        write(p, `v${Math.floor(rand() * 5)}\n`);
        break;
      case 'append':
        writeFileSync(p, 'more\n', { flag: 'a' });
        break;
      case 'same-size': {
        const kept = keepTimes([p]);
        write(p, 'x'.repeat(lstatSync(p).size));
        kept.restore();
        break;
      }
      case 'rm':
        rmSync(p, { force: true });
        break;
      case 'mkdir':
        mkdirSync(p);
        write(join(p, 'inner.txt'), 'inner\n');
        break;
      case 'rmdir':
        if (d) rmSync(join(root, d), { recursive: true, force: true });
        break;
      case 'mv':
        renameSync(p, join(root, pick(dirs()), pick(['a.txt', 'moved', 'c'])));
        break;
      case 'swap':
        renameSync(join(root, d, 'a.txt'), join(root, d, '.tmp'));
        renameSync(join(root, d, 'b.txt'), join(root, d, 'a.txt'));
        renameSync(join(root, d, '.tmp'), join(root, d, 'b.txt'));
        break;
      case 'link':
        symlinkSync(pick(['a.txt', '../x', 'nowhere']), p);
        break;
      case 'chmod':
        chmodSync(p, rand() < 0.5 ? 0o755 : 0o644);
        break;
      case 'replace-dir': {
        if (!d) break;
        const at = join(root, d);
        const names = readdirSync(at);
        const kept = keepTimes([at]);
        rmSync(at, { recursive: true, force: true });
        mkdirSync(at);
        for (const x of names) write(join(at, x), 'replaced\n');
        kept.restore();
        break;
      }
    }
  } catch {
    return `${kind} ${d}/${name} (no-op)`;
  }
  return `${kind} ${d}/${name}`;
}

test.run();
