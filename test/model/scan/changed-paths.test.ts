// vouchedByChanged (model/scan/changed-paths.ts): the rows an overlay's upper dir vouches for.
// (1) On random trees, random changed paths, merged directories and rows changed since the base it
// gives exactly what the rule says, computed here the slow way (a path lookup per row). (2) Its cost follows the change: 20,000 paths written in
// new directories (a turn that made 20,000 files) cost about what the pass over the rows costs,
// not a binary search of the index per path (which made an overlay checkpoint slower than a
// full-copy one). PDB_CHANGED_SEED replays (1); its seed is printed.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Digest } from '../../../model/canonical-json.js';
import type { Entry } from '../../../model/snapshot.js';
import { vouchedByChanged } from '../../../model/scan/changed-paths.js';
import { allPaths } from '../../../model/scan/index-columns.js';
import { createTreeIndex, statSignature, type TreeIndex } from '../../../model/scan/tree-index.js';
import { sortEntries } from '../../../model/snapshot.js';

const SEED = Number(process.env.PDB_CHANGED_SEED ?? Math.floor(Math.random() * 2 ** 31));

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

const fields = {
  snapshot: `sha256:${'c'.repeat(64)}` as Digest,
  changeset: null,
  base: null,
  excludes: [],
  recordedAtMs: 1_700_000_000_000,
  generation: 'g1',
  source: '/src',
  changes: null,
};

/** An index of `entries`, every row with stat data except those in `noStat`. */
function indexOf(entries: Entry[], noStat: ReadonlySet<string> = new Set()): TreeIndex {
  const sigs = new Map<string, string>();
  entries.forEach((e, i) => {
    if (noStat.has(e.path)) return;
    const mode = e.kind === 'dir' ? 0o40755 : e.kind === 'symlink' ? 0o120777 : 0o100644;
    sigs.set(e.path, statSignature({ ino: i + 1, size: 1, mtimeMs: 1_000, ctimeMs: 1_000, mode }));
  });
  return createTreeIndex(fields as never, sortEntries(entries), sigs);
}

/** A random tree of names that sort in awkward ways ('a', 'a b', 'a-b', 'a/b', 'é', '.x'). */
function randomTree(r: () => number): Entry[] {
  const names = ['a', 'a b', 'a-b', 'b', 'é', '.x', 'z9', 'Z'];
  const out: Entry[] = [];
  const fill = (dir: string, depth: number) => {
    for (const n of names) {
      if (r() < 0.5) continue;
      const path = dir === '' ? n : `${dir}/${n}`;
      const k = r();
      if (depth < 3 && k < 0.35) {
        out.push({ path, kind: 'dir' });
        fill(path, depth + 1);
      } else if (k < 0.45) out.push({ path, kind: 'symlink', target: 'a' });
      else out.push({ path, kind: 'file', digest: `sha256:${'a'.repeat(64)}` as Digest, size: 1, exec: false });
    }
  };
  fill('', 0);
  return out;
}

/** The rule, the slow way: every row looked up by its path. */
function expected(
  index: TreeIndex,
  paths: string[],
  subtrees: string[],
  merged: string[] = [],
  sinceBase: string[] | null = null,
): number[] | null {
  if (subtrees.includes('')) return null;
  const all = allPaths(index.cols);
  const upper = new Set(paths);
  const mergedDirs = new Set(sinceBase ? merged : []);
  const notBase = new Set(sinceBase ?? []);
  const under = (p: string) => subtrees.some((s) => p === s || p.startsWith(`${s}/`));
  return all.map((p, i) => {
    const slash = p.lastIndexOf('/');
    if (slash < 0 || upper.has(p) || under(p) || index.cols.mode[i] === 0) return 0;
    const parent = p.slice(0, slash);
    // Below a merged directory a child the record does not name is the base's, if the index says it is the base's.
    return !upper.has(parent) || (mergedDirs.has(parent) && upper.has(parent) && !notBase.has(p)) ? 1 : 0;
  });
}

test(`vouchedByChanged follows the rule on random trees and random changed paths (seed ${SEED})`, () => {
  console.log(`changed-paths: PDB_CHANGED_SEED=${SEED}`);
  const r = rng(SEED);
  let mergedVouched = 0;
  for (let run = 0; run < 300; run++) {
    const entries = randomTree(r);
    if (entries.length === 0) continue;
    const noStat = new Set(entries.filter(() => r() < 0.05).map((e) => e.path));
    const index = indexOf(entries, noStat);
    const all = allPaths(index.cols);
    const pick = () => all[Math.floor(r() * all.length)]!;
    // Changed paths: rows of the index, and new ones (in existing and in new directories), parents first.
    const paths = new Set<string>();
    for (let i = 0, k = Math.floor(r() * 6); i < k; i++) {
      const p = pick();
      const parts = p.split('/');
      for (let j = 1; j <= parts.length; j++) paths.add(parts.slice(0, j).join('/'));
      if (r() < 0.4) {
        paths.add(`${p}/new`);
        paths.add(`${p}/new/deeper`);
      }
    }
    if (r() < 0.3) paths.add('brand-new');
    if (r() < 0.3) paths.add('brand-new/child');
    const subtrees = r() < 0.3 ? [pick()] : [];
    // Some recorded paths (and some that are not, which must not count) merge the base's directory;
    // some rows are not the base's; half the runs do not know which (null: merged is not used).
    const merged = [...paths, pick()].filter(() => r() < 0.5);
    const sinceBase = r() < 0.5 ? null : [...all.filter(() => r() < 0.2), 'not-in-the-index'];
    const changed = { paths: [...paths], subtrees, merged, reason: null };
    const got = vouchedByChanged(index, changed, sinceBase);
    const want = expected(index, [...paths], subtrees, merged, sinceBase);
    const plain = expected(index, [...paths], subtrees);
    if (want && plain) mergedVouched += want.filter((v, i) => v !== plain[i]).length;
    assert.equal(
      got === null ? null : Array.from(got),
      want,
      `run ${run}: paths ${JSON.stringify([...paths])} subtrees ${subtrees} merged ${JSON.stringify(merged)} sinceBase ${JSON.stringify(sinceBase)}`,
    );
  }
  assert.ok(mergedVouched > 0, 'some rows were vouched for by a merged directory alone');
});

test('vouchedByChanged of the root as a subtree walks everything', () => {
  const index = indexOf([{ path: 'a', kind: 'dir' }]);
  assert.is(vouchedByChanged(index, { paths: [], subtrees: [''], reason: null }), null);
});

test('20,000 new files in new directories cost about a pass over the rows, not a search of the index per path', () => {
  const base: Entry[] = [];
  for (let d = 0; d < 50; d++) {
    base.push({ path: `d${d}`, kind: 'dir' });
    for (let f = 0; f < 500; f++)
      base.push({ path: `d${d}/f${f}.txt`, kind: 'file', digest: `sha256:${'a'.repeat(64)}` as Digest, size: 1, exec: false });
  }
  const index = indexOf(base);
  const paths: string[] = ['d7', 'd7/f3.txt'];
  for (let d = 0; d < 100; d++) {
    paths.push(`new${d}`);
    for (let f = 0; f < 200; f++) paths.push(`new${d}/g${f}.txt`);
  }
  const changed = { paths, subtrees: [] as string[], reason: null };
  const time = (fn: () => void) => {
    let best = Infinity;
    for (let i = 0; i < 5; i++) {
      const t0 = process.hrtime.bigint();
      fn();
      best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e6);
    }
    return best;
  };
  const vouch = vouchedByChanged(index, changed)!;
  assert.is(
    vouch.reduce((a, b) => a + b, 0),
    index.count - 50 - 500,
  ); // d7's children and the top-level rows are not vouched
  const ms = time(() => vouchedByChanged(index, changed));
  // The yardstick: every row's path made once (a pass over the rows that builds a string per row).
  const pass = time(() => allPaths(index.cols));
  console.log(`changed-paths: 20,000 new paths over ${index.count} rows: ${ms.toFixed(1)} ms; all paths made: ${pass.toFixed(1)} ms`);
  assert.ok(ms < 4 * pass + 2, `vouchedByChanged took ${ms.toFixed(1)} ms, all paths ${pass.toFixed(1)} ms`);
});

test.run();
