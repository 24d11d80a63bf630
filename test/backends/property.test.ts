// Property: for random small trees and random operation sequences, every available backend ends
// with exactly the Snapshot the full-copy oracle ends with, and a sibling session stays the base.
// The hard-link farm must fail the same property. The seed is printed on failure; replay with
// PDB_PROPERTY_SEED=<seed> (and PDB_PROPERTY_RUNS to change the run count, default 20).
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  lstatSync,
  renameSync,
  rmSync,
  symlinkSync,
  truncateSync,
  appendFileSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname, join, posix } from 'node:path';
import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { diffEntries } from '../../model/snapshot.js';
import { SessionService } from '../../sessions/service.js';
import { hasCommand, isRoot, skipPart, tempDir } from '../helpers/index.js';
import { gitCommitAll, loadHostSetup, pattern, withLoopFs } from '../helpers/cow-harness.js';

const RUNS = Number(process.env.PDB_PROPERTY_RUNS ?? 20);
const SEED = process.env.PDB_PROPERTY_SEED ? Number(process.env.PDB_PROPERTY_SEED) : undefined;
const t = tempDir('pdb-prop-');
test.after(() => t.cleanup());

const DIRS = ['', 'a', 'a/b', 'c', 'c/d/e'] as const;
const NAMES = ['f1', 'f2', 'x.txt', 'y.js', 'z'] as const;

const contentArb = fc.oneof(
  fc.record({ kind: fc.constant('text' as const), text: fc.string({ maxLength: 40 }) }),
  // Blobs larger than btrfs's inline limit, so clones share real extents.
  fc.record({ kind: fc.constant('blob' as const), seed: fc.integer({ min: 1, max: 1000 }), kb: fc.integer({ min: 9, max: 96 }) }),
);
type Content = { kind: 'text'; text: string } | { kind: 'blob'; seed: number; kb: number };
const bytesOf = (c: Content): Buffer => (c.kind === 'text' ? Buffer.from(c.text) : pattern(c.kb * 1024, c.seed));

const treeArb = fc.record({
  files: fc.array(fc.record({ dir: fc.constantFrom(...DIRS), name: fc.constantFrom(...NAMES), content: contentArb, exec: fc.boolean() }), {
    minLength: 1,
    maxLength: 12,
  }),
  links: fc.array(
    fc.record({
      dir: fc.constantFrom(...DIRS),
      name: fc.constantFrom('l1', 'l2'),
      target: fc.constantFrom('f1', '../f1', 'a/x.txt', 'missing', '..'),
    }),
    { maxLength: 3 },
  ),
});
type Tree = typeof treeArb extends fc.Arbitrary<infer T> ? T : never;

const opArb = fc.oneof(
  fc.record({ op: fc.constant('write' as const), target: fc.nat(), content: contentArb }),
  fc.record({ op: fc.constant('append' as const), target: fc.nat(), text: fc.string({ minLength: 1, maxLength: 20 }) }),
  fc.record({
    op: fc.constant('patch' as const),
    target: fc.nat(),
    offset: fc.nat({ max: 70_000 }),
    text: fc.string({ minLength: 1, maxLength: 20 }),
  }),
  fc.record({ op: fc.constant('truncate' as const), target: fc.nat(), length: fc.nat({ max: 12 }) }),
  fc.record({ op: fc.constant('delete' as const), target: fc.nat() }),
  fc.record({ op: fc.constant('rename' as const), target: fc.nat(), name: fc.constantFrom('r1', 'r2') }),
  fc.record({ op: fc.constant('renameDir' as const), target: fc.nat() }),
  fc.record({ op: fc.constant('chmod' as const), target: fc.nat(), exec: fc.boolean() }),
  fc.record({
    op: fc.constant('create' as const),
    dir: fc.constantFrom('n', 'n/m', 'a/n', ''),
    name: fc.constantFrom('new1', 'new2'),
    content: contentArb,
  }),
  fc.record({ op: fc.constant('symlink' as const), target: fc.nat(), name: fc.constantFrom('s1', 's2') }),
);
type Op = typeof opArb extends fc.Arbitrary<infer T> ? T : never;

function writeSource(dir: string, tree: Tree): void {
  mkdirSync(dir, { recursive: true });
  const used = new Set<string>();
  for (const f of tree.files) {
    const p = posix.join(f.dir, f.name);
    if (used.has(p)) continue;
    used.add(p);
    mkdirSync(join(dir, f.dir), { recursive: true });
    writeFileSync(join(dir, p), bytesOf(f.content));
    chmodSync(join(dir, p), f.exec ? 0o755 : 0o644);
  }
  for (const l of tree.links) {
    const p = posix.join(l.dir, l.name);
    if (used.has(p)) continue;
    used.add(p);
    mkdirSync(join(dir, l.dir), { recursive: true });
    symlinkSync(l.target, join(dir, p));
  }
}

/** Sorted relative paths of the session (no administrative `.git` at the root). */
function listing(root: string): { files: string[]; dirs: string[]; all: string[] } {
  const files: string[] = [];
  const dirs: string[] = [];
  const all: string[] = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(join(root, rel)).sort()) {
      const p = rel ? `${rel}/${name}` : name;
      if (!rel && name === '.git') continue;
      const st = lstatSync(join(root, p));
      all.push(p);
      if (st.isDirectory()) {
        dirs.push(p);
        walk(p);
      } else if (st.isFile()) files.push(p);
    }
  };
  walk('');
  return { files, dirs, all };
}

/** Apply ops deterministically: targets are indexes into the sorted listing at that moment. */
function applyOps(root: string, ops: Op[]): void {
  for (const o of ops) {
    const { files, dirs, all } = listing(root);
    const pick = (xs: string[], i: number) => (xs.length ? xs[i % xs.length]! : null);
    switch (o.op) {
      case 'write': {
        const f = pick(files, o.target);
        if (f) writeFileSync(join(root, f), bytesOf(o.content));
        break;
      }
      case 'append': {
        const f = pick(files, o.target);
        if (f) appendFileSync(join(root, f), o.text);
        break;
      }
      case 'patch': {
        const f = pick(files, o.target);
        if (!f) break;
        const fd = openSync(join(root, f), 'r+');
        writeSync(fd, Buffer.from(o.text), 0, Buffer.byteLength(o.text), o.offset % (lstatSync(join(root, f)).size + 1));
        closeSync(fd);
        break;
      }
      case 'truncate': {
        const f = pick(files, o.target);
        if (f) truncateSync(join(root, f), o.length);
        break;
      }
      case 'delete': {
        const p = pick(all, o.target);
        if (p) rmSync(join(root, p), { recursive: true, force: true });
        break;
      }
      case 'rename': {
        const f = pick(files, o.target);
        if (f) renameSync(join(root, f), join(root, dirname(f), o.name));
        break;
      }
      case 'renameDir': {
        const d = pick(dirs, o.target);
        if (d && !existsSync(join(root, `${d}-moved`))) renameSync(join(root, d), join(root, `${d}-moved`));
        break;
      }
      case 'chmod': {
        const f = pick(files, o.target);
        if (f) chmodSync(join(root, f), o.exec ? 0o755 : 0o644);
        break;
      }
      case 'create': {
        const dir = join(root, o.dir);
        if (o.dir && existsSync(dir) && !lstatSync(dir).isDirectory()) break;
        mkdirSync(dir, { recursive: true });
        const p = join(dir, o.name);
        if (existsSync(p) && lstatSync(p).isDirectory()) break;
        writeFileSync(p, bytesOf(o.content));
        break;
      }
      case 'symlink': {
        const f = pick(files, o.target);
        if (!f) break;
        const at = join(root, dirname(f), o.name);
        if (existsSync(at) || isLink(at)) break;
        symlinkSync(posix.relative(posix.dirname(f), f) || '.', at);
        break;
      }
      default: {
        const never: never = o;
        throw new Error(`unknown op ${JSON.stringify(never)}`);
      }
    }
  }
}

function isLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

interface Target {
  label: string;
  backend: string;
  svc: SessionService;
  allowTestOnly?: boolean;
}

let counter = 0;

interface RunResult {
  digest: string;
  entries: ReturnType<SessionService['readSnapshot']>['entries'];
  sibDiff: ReturnType<typeof diffEntries>;
}

/** A sibling and a worker session on one backend; ops on the worker; checkpoint; discard both. */
async function runOn(tg: Target, source: string, ops: Op[]): Promise<RunResult> {
  const name = `s${counter++}`;
  const sib = `${name}-sib`;
  const made = await tg.svc.create(sib, { from: source, backend: tg.backend, allowTestOnly: tg.allowTestOnly });
  await tg.svc.create(name, { from: source, backend: tg.backend, allowTestOnly: tg.allowTestOnly });
  applyOps(await tg.svc.path(name), ops);
  const cp = await tg.svc.checkpoint(name);
  const base = tg.svc.readSnapshot(made.base);
  const sibDiff = diffEntries(base.entries, await tg.svc.scanEntries(sib));
  const entries = tg.svc.readSnapshot(cp.snapshot).entries;
  await tg.svc.discard(name);
  await tg.svc.discard(sib);
  return { digest: cp.snapshot, entries, sibDiff };
}

/** One backend vs the oracle's run: null when it conforms, else what differed. */
function compare(label: string, want: RunResult, got: RunResult): string | null {
  const problems: string[] = [];
  if (got.digest !== want.digest)
    problems.push(
      `result differs: ${diffEntries(want.entries, got.entries)
        .map((c) => `${c.kind} ${c.path}`)
        .join(', ')}`,
    );
  if (got.sibDiff.length) problems.push(`sibling changed: ${got.sibDiff.map((c) => `${c.kind} ${c.path}`).join(', ')}`);
  return problems.length ? `${label}: ${problems.join('; ')}` : null;
}

async function property(targets: Target[], oracle: Target, runs: number): Promise<fc.RunDetails<[Tree, Op[]]>> {
  let i = 0;
  return fc.check(
    fc.asyncProperty(treeArb, fc.array(opArb, { minLength: 1, maxLength: 10 }), async (tree, ops) => {
      const source = join(t.dir, `src-${i++}`);
      writeSource(source, tree);
      if (targets.some((x) => x.backend === 'git-worktree')) gitCommitAll(source);
      const failures: string[] = [];
      const want = await runOn(oracle, source, ops);
      if (want.sibDiff.length) failures.push(`oracle sibling changed: ${want.sibDiff.map((c) => c.path).join(', ')}`);
      for (const target of targets) {
        const f = compare(target.label, want, await runOn(target, source, ops));
        if (f) failures.push(f);
      }
      rmSync(source, { recursive: true, force: true });
      if (failures.length) throw new Error(failures.join('\n'));
    }),
    { numRuns: runs, seed: SEED, endOnFailure: true },
  );
}

function explain(r: fc.RunDetails<[Tree, Op[]]>): string {
  return `seed=${r.seed} path=${r.counterexamplePath} counterexample=${JSON.stringify(r.counterexample)}\n${r.errorInstance instanceof Error ? r.errorInstance.message : String(r.errorInstance)}`;
}

test('every available backend equals the full-copy oracle on random trees and operations', async () => {
  const tmpSvc = await SessionService.open(join(t.dir, 'store-tmp'), { create: true });
  const oracle: Target = { label: 'full-copy', backend: 'full-copy', svc: tmpSvc };
  const targets: Target[] = [{ label: 'full-copy (self)', backend: 'full-copy', svc: tmpSvc }];
  if ((await tmpSvc.probe('overlay', t.dir)).available) targets.push({ label: 'overlay on tmp', backend: 'overlay', svc: tmpSvc });
  else skipPart('property overlay', 'overlay', (await tmpSvc.probe('overlay', t.dir)).detail);
  if (hasCommand('git')) targets.push({ label: 'git-worktree', backend: 'git-worktree', svc: tmpSvc });
  else skipPart('property git-worktree', 'git', 'git is not installed');

  const hs = await loadHostSetup();
  const xfsWhy = isRoot() ? await hs.loopFsUnavailableReason('xfs') : 'loopback xfs needs root';
  const btrfsWhy = isRoot()
    ? ((await hs.loopFsUnavailableReason('btrfs')) ?? (hasCommand('btrfs') ? null : 'btrfs-progs missing'))
    : 'loopback btrfs needs root';
  if (xfsWhy) skipPart('property reflink on xfs', 'xfs', xfsWhy);
  if (btrfsWhy) skipPart('property btrfs backends', 'btrfs', btrfsWhy);

  const body = async () => {
    const r = await property(targets, oracle, RUNS);
    console.log(`  ${RUNS} runs over: ${targets.map((x) => x.label).join(', ')} (seed ${r.seed})`);
    if (r.failed) console.log(`PROPERTY FAILED ${explain(r)}`);
    assert.not.ok(r.failed, explain(r));
  };
  const withBtrfs = async () => {
    if (btrfsWhy) return body();
    return withLoopFs('btrfs', t.dir, async (mnt) => {
      const svc = await SessionService.open(join(mnt, 'store'), { create: true });
      targets.push({ label: 'reflink on btrfs', backend: 'reflink', svc }, { label: 'btrfs-snapshot', backend: 'btrfs-snapshot', svc });
      await body();
    });
  };
  if (xfsWhy) await withBtrfs();
  else
    await withLoopFs('xfs', t.dir, async (mnt) => {
      const svc = await SessionService.open(join(mnt, 'store'), { create: true });
      targets.push({ label: 'reflink on xfs', backend: 'reflink', svc });
      await withBtrfs();
    });
});

test('the hard-link farm fails the same property (the harness can fail)', async () => {
  const svc = await SessionService.open(join(t.dir, 'store-hl'), { create: true });
  const r = await property(
    [{ label: 'hardlink-farm', backend: 'hardlink-farm', svc, allowTestOnly: true }],
    { label: 'full-copy', backend: 'full-copy', svc },
    RUNS,
  );
  assert.ok(r.failed, 'the negative control passed the property: the checks cannot fail');
  console.log(
    `  caught as expected after ${r.numRuns} run(s): ${String((r.errorInstance as Error | undefined)?.message ?? '').split('\n')[0]}`,
  );
});

test.run();
