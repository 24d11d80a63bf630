// What the apply tests share: a source, a store with a checkpointed session, a copy of the source
// to apply into, a directory OUTSIDE it that nothing may touch, and the one check that matters
// after any fault: the target is untouched (the base) or fully applied (the result), nothing else.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { scanTree } from '../../model/scan/scan.js';
import { diffEntries, type Entry } from '../../model/snapshot.js';
import { SessionService, type CheckpointResult } from '../../sessions/service.js';
import { writeTree, type TreeSpec } from './index.js';

export interface ApplyCase {
  dir: string;
  src: string;
  store: string;
  svc: SessionService;
  /** A copy of the source (cp -a), the directory applies write into. */
  target: string;
  /** Nothing here may ever change. */
  outside: string;
  base: Entry[];
}

/** The source every apply test starts from: files at depth 1 and 2, a directory to retype, a late path. */
export function applySource(files = 40): TreeSpec {
  const f: TreeSpec = {};
  for (let i = 1; i <= files; i++) f[`f${i}.txt`] = `file ${i}\n`;
  return {
    'a.txt': 'alpha\n',
    lib: { 'x.js': 'x\n', sub: { 'y.js': 'y\n' } },
    d: { 'c.txt': 'c\n' },
    files: f,
    zz: { 'last.txt': 'last\n' },
  };
}

/** A source, a store and a copy of the source under `parent/label`; OUTSIDE holds a secret. */
export async function applyCase(parent: string, label: string, tree: TreeSpec = applySource()): Promise<ApplyCase> {
  const dir = join(parent, label);
  const src = join(dir, 'src');
  writeTree(src, tree);
  const store = join(dir, 'store');
  const svc = await SessionService.open(store, { create: true });
  const outside = join(dir, 'OUTSIDE');
  writeTree(outside, { secret: 'do not touch\n', payload: 'do not move\n' });
  const target = join(dir, 'work', 'target');
  mkdirSync(join(dir, 'work'));
  execFileSync('cp', ['-a', src, target]);
  return { dir, src, store, svc, target, outside, base: await filesOf(src) };
}

/** Make session `name` from the case's source, change its root with `edit`, and checkpoint it. */
export async function changedSession(c: ApplyCase, name: string, edit: (root: string) => void): Promise<CheckpointResult> {
  const s = await c.svc.create(name, { from: c.src });
  edit(s.root);
  return c.svc.checkpoint(name);
}

/** The tree under `dir` as contract entries, hashed from its bytes (admin roots such as .pdb left out, and `excludes`). */
export async function filesOf(dir: string, excludes: string[] = []): Promise<Entry[]> {
  return (await scanTree(dir, { excludes })).entries;
}

/** "untouched", "applied", or what differs from both. */
export async function targetState(target: string, base: Entry[], result: Entry[], excludes: string[] = []): Promise<string> {
  const now = await filesOf(target, excludes);
  if (diffEntries(base, now).length === 0) return 'untouched';
  if (diffEntries(result, now).length === 0) return 'applied';
  const show = (cs: ReturnType<typeof diffEntries>) => cs.map((c) => `${c.kind} ${c.path}`).join(', ');
  return `neither: from the base ${show(diffEntries(base, now))}; from the result ${show(diffEntries(result, now))}`;
}
