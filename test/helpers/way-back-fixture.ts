// A git repository the way-back tests start from: tracked text, binary, executable, symlink and
// non-ASCII files, an untracked (ignored) .env, and a node_modules the Snapshot excludes; plus
// random changesets for the properties.
import { execFileSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { scanTree } from '../../model/scan/scan.js';
import type { Entry } from '../../model/snapshot.js';
import { SessionService, type CheckpointResult } from '../../sessions/service.js';
import { writeTree } from './index.js';

export const gitRun = (cwd: string, args: string[], input?: string | Buffer): string =>
  execFileSync('git', args, { cwd, input, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } });

/** A committed repository in `dir` with an ignored .env and an excluded node_modules. */
export function makeRepo(dir: string): string {
  writeTree(dir, {
    'a.txt': 'alpha\n',
    'bin.dat': '\u0000\u0001\u0002binary\u0000',
    'run.sh': { content: '#!/bin/sh\necho hi\n', exec: true },
    link: { link: 'a.txt' },
    lib: { 'x.js': 'x\n', sub: { 'y.js': 'y\n' } },
    é: { 'ü.txt': 'umlaut\n' },
    '.gitignore': 'node_modules\n.env\n',
    'pdb-env.json': '{"excludes":["node_modules"]}\n',
  });
  gitRun(dir, ['init', '-q', '-b', 'main']);
  gitRun(dir, ['-c', 'user.name=t', '-c', 'user.email=t@t', 'add', '-A']);
  gitRun(dir, ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'base']);
  writeTree(dir, { '.env': 'SECRET=1\n', node_modules: { pkg: { 'index.js': 'module.exports = 1;\n' } } });
  return dir;
}

const PATHS = [
  'a.txt',
  'bin.dat',
  'run.sh',
  'link',
  'lib',
  'lib/x.js',
  'lib/sub',
  'lib/sub/y.js',
  'é/ü.txt',
  '日本 語.md',
  'new/deep/n.bin',
];

export type Op =
  | { op: 'write'; path: string; bytes: number[]; exec: boolean }
  | { op: 'delete'; path: string }
  | { op: 'symlink'; path: string; target: string }
  | { op: 'chmod'; path: string }
  | { op: 'dir'; path: string };

export const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    op: fc.constant('write' as const),
    path: fc.constantFrom(...PATHS),
    bytes: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 300 }),
    exec: fc.boolean(),
  }),
  fc.record({ op: fc.constant('delete' as const), path: fc.constantFrom(...PATHS) }),
  fc.record({ op: fc.constant('symlink' as const), path: fc.constantFrom(...PATHS), target: fc.constantFrom('a.txt', '../x', 'nowhere') }),
  fc.record({ op: fc.constant('chmod' as const), path: fc.constantFrom(...PATHS) }),
  fc.record({ op: fc.constant('dir' as const), path: fc.constantFrom(...PATHS) }),
);

/** Make every ancestor of `path` under `root` a directory (a file or link in the way goes). */
function ensureParents(root: string, path: string): void {
  const parts = path.split('/').slice(0, -1);
  for (let i = 1; i <= parts.length; i++) {
    const p = join(root, ...parts.slice(0, i));
    const st = lstatOr(p);
    if (st && !st.isDirectory()) rmSync(p, { force: true });
    if (!st || !st.isDirectory()) mkdirSync(p);
  }
}

/** lstat, or undefined when the path does not exist (also when an ancestor is a file). */
function lstatOr(p: string) {
  try {
    return lstatSync(p);
  } catch (err) {
    if (['ENOENT', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code!)) return undefined;
    throw err;
  }
}

function tryRemove(p: string): void {
  try {
    rmSync(p, { recursive: true, force: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOTDIR') throw err;
  }
}

export function applyOps(root: string, ops: Op[]): void {
  for (const o of ops) {
    const p = join(root, o.path);
    if (o.op === 'chmod') {
      const st = lstatOr(p);
      if (st?.isFile()) chmodSync(p, st.mode & 0o100 ? 0o644 : 0o755);
      continue;
    }
    // Nothing to remove when an ancestor is a file (ENOTDIR): the path does not exist.
    if (lstatOr(p) !== undefined || o.op !== 'delete') tryRemove(p);
    if (o.op === 'delete') continue;
    ensureParents(root, o.path);
    if (o.op === 'write') {
      writeFileSync(p, Buffer.from(o.bytes));
      chmodSync(p, o.exec ? 0o755 : 0o644);
    } else if (o.op === 'symlink') symlinkSync(o.target, p);
    else {
      mkdirSync(p);
      writeFileSync(join(p, 'inner.txt'), `inside ${o.path}\n`);
    }
  }
}

/** The files and symlinks of a tree (what git carries: it has no empty directories), excluding node_modules. */
export async function filesOf(root: string): Promise<Entry[]> {
  return nonDirs((await scanTree(root, { excludes: ['node_modules'] })).entries);
}

export const nonDirs = (entries: Entry[]): Entry[] => entries.filter((e) => e.kind !== 'dir');

/** One run of a way-back property: a fresh repository and store, session `s` changed by `ops` and checkpointed. */
export interface ChangesetRun {
  /** This run's own directory (the repository is `src` inside it, the store `store`). */
  dir: string;
  src: string;
  svc: SessionService;
  root: string;
  checkpoint: CheckpointResult;
  /** The files and symlinks of the checkpoint's result: what a complete way back must reproduce. */
  expected: Entry[];
  ops: Op[];
}

/**
 * The setup the way-back properties share: for each of `runs` random changesets, a repository
 * (makeRepo), a store, session `s` with the changeset applied (and `beforeCheckpoint`), then its
 * checkpoint; `check` asserts what the way back under test must hold.
 */
export async function forRandomChangesets(
  parent: string,
  runs: number,
  check: (run: ChangesetRun) => Promise<void>,
  options: { beforeCheckpoint?: (root: string) => void } = {},
): Promise<void> {
  let n = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 8 }), async (ops) => {
      const dir = join(parent, `p${n++}`);
      const src = makeRepo(join(dir, 'src'));
      const svc = await SessionService.open(join(dir, 'store'), { create: true });
      const s = await svc.create('s', { from: src });
      applyOps(s.root, ops);
      options.beforeCheckpoint?.(s.root);
      const checkpoint = await svc.checkpoint('s');
      const expected = nonDirs(svc.readSnapshot(checkpoint.snapshot).entries);
      await check({ dir, src, svc, root: s.root, checkpoint, expected, ops });
    }),
    { numRuns: runs },
  );
}
