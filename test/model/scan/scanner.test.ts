// The native scanner (native/walk.c) against the JavaScript one, its oracle: on random trees,
// without an index and against an index after random changes, both give the same RawScan (every
// touched entry with its stat data, the status of every row, the counts), and the same typed
// errors. Skipped, and named, when the addon is not built (CI builds it and requires it).
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, renameSync, rmSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isPdbError } from '../../../model/errors.js';
import { nextColumns } from '../../../model/scan/index-update.js';
import { nativeUnavailable, scanWalk } from '../../../model/scan/scanner.js';
import { TreeIndex, indexHeader, rootSig } from '../../../model/scan/tree-index.js';
import type { RawScan, WalkInput } from '../../../model/scan/tree-walk.js';
import { skipTest, tempDir } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());
const why = nativeUnavailable();
const built = why === null;

const NAMES = ['a', 'b', 'c.txt', 'd d', 'é', '🦊', 'x"y', 'tab\there'];
const op = fc.oneof(
  fc.tuple(fc.constant('file' as const), fc.array(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 3 }), fc.string({ maxLength: 20 })),
  fc.tuple(fc.constant('dir' as const), fc.array(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 3 }), fc.constant('')),
  fc.tuple(
    fc.constant('link' as const),
    fc.array(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 3 }),
    fc.constantFrom('a', '../x', 'é/🦊'),
  ),
  fc.tuple(fc.constant('rm' as const), fc.array(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 3 }), fc.constant('')),
  fc.tuple(fc.constant('exec' as const), fc.array(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 3 }), fc.constant('')),
  fc.tuple(fc.constant('mv' as const), fc.array(fc.constantFrom(...NAMES), { minLength: 2, maxLength: 2 }), fc.constant('')),
  fc.tuple(fc.constant('touch' as const), fc.array(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 2 }), fc.constant('')),
);
type Op = [kind: 'file' | 'dir' | 'link' | 'rm' | 'exec' | 'mv' | 'touch', path: string[], data: string];

/** Apply an operation where it can apply (a parent that is no directory just skips it). */
function apply(root: string, [kind, parts, data]: Op): void {
  const p = join(root, ...parts);
  try {
    if (kind !== 'rm' && kind !== 'exec' && kind !== 'mv' && kind !== 'touch') mkdirSync(join(p, '..'), { recursive: true });
    if (kind === 'file') writeFileSync(p, data);
    else if (kind === 'dir') mkdirSync(p, { recursive: true });
    else if (kind === 'link') symlinkSync(data, p);
    else if (kind === 'rm') rmSync(p, { recursive: true, force: true });
    else if (kind === 'exec') chmodSync(p, 0o755);
    else if (kind === 'mv') renameSync(p, join(root, parts[1]!));
    else if (kind === 'touch') utimesSync(p, new Date(1_000_000), new Date(1_000_000));
  } catch {
    // the path does not fit the tree as it is (a file where a directory would be): no change
  }
}

let n = 0;
const input = (root: string, index: TreeIndex | null, dirRule = true): WalkInput => ({
  root,
  excludeNames: new Set(['node_modules']),
  excludePaths: new Set(['.git', '.pdb', '.pdb-host', 'd d/b']),
  index,
  dirRule,
});

/** What both scanners must agree on: everything but which one ran and when. */
function comparable(r: RawScan) {
  return {
    status: r.status ? [...r.status] : null,
    touched: [...r.touched].sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0)),
    root: r.root,
    counts: [r.entries, r.files, r.bytes, r.dirsRead],
  };
}

/** An index of the tree as `raw` saw it, recorded as if long after: every row trusted. */
function indexOf(raw: RawScan): TreeIndex {
  raw.startedAtMs = Date.now() + 60_000;
  const cols = nextColumns(null, raw, (e) => ({ digest: Buffer.alloc(32, e.path.length), size: e.size }), false);
  const header = indexHeader(
    {
      snapshot: null,
      changeset: null,
      base: null,
      excludes: ['node_modules'],
      recordedAtMs: raw.startedAtMs,
      generation: '',
      source: null,
      extraExcludes: [],
      root: rootSig(raw.root, raw.startedAtMs, false),
    },
    cols.n,
  );
  return new TreeIndex(header, cols);
}

test('native and JavaScript scanners give the same walk, with and without an index, on random trees and changes', () => {
  if (!built) return skipTest('native and JavaScript scanners agree', 'native-scan', why!);
  fc.assert(
    fc.property(fc.array(op, { maxLength: 25 }), fc.array(op, { maxLength: 12 }), fc.boolean(), (before: Op[], after: Op[], dirRule) => {
      const root = join(t.dir, `r${n++}`);
      mkdirSync(root);
      for (const o of before) apply(root, o);
      const js0 = scanWalk(input(root, null), 'js');
      assert.equal(comparable(scanWalk(input(root, null), 'native')), comparable(js0), 'no index');
      const index = indexOf(js0);
      assert.equal(
        comparable(scanWalk(input(root, index, dirRule), 'native')),
        comparable(scanWalk(input(root, index, dirRule), 'js')),
        'unchanged',
      );
      for (const o of after) apply(root, o);
      const js = scanWalk(input(root, index, dirRule), 'js');
      assert.equal(comparable(scanWalk(input(root, index, dirRule), 'native')), comparable(js), 'changed');
    }),
    { seed: 26, numRuns: 150 },
  );
});

test('native and JavaScript scanners fail alike: a fifo, a name that is not UTF-8, a missing root', () => {
  if (!built) return skipTest('native and JavaScript scanners fail alike', 'native-scan', why!);
  const fifo = join(t.dir, 'fifo');
  mkdirSync(join(fifo, 'd'), { recursive: true });
  execFileSync('mkfifo', [join(fifo, 'd', 'pipe')]);
  const bad = join(t.dir, 'bad');
  mkdirSync(bad);
  writeFileSync(Buffer.concat([Buffer.from(`${bad}/bad-`), Buffer.from([0xff, 0xfe])]), 'x');
  for (const [root, code, path] of [
    [fifo, 'E_UNSUPPORTED_ENTRY', 'd/pipe'],
    [bad, 'E_NON_UTF8_NAME', null],
    [join(t.dir, 'absent'), 'E_SOURCE_MISSING', null],
  ] as const) {
    for (const scanner of ['js', 'native'] as const) {
      try {
        scanWalk(input(root, null), scanner);
        assert.unreachable(`${scanner} ${code}`);
      } catch (err) {
        assert.ok(isPdbError(err, code), `${scanner}: ${String(err)}`);
        if (path) assert.is((err as { path?: string }).path, path);
      }
    }
  }
  unlinkSync(join(fifo, 'd', 'pipe'));
});

test('the directory rule: an unchanged tree is not read at all, a changed directory only', () => {
  for (const scanner of built ? (['js', 'native'] as const) : (['js'] as const)) {
    const root = join(t.dir, `rule-${scanner}`);
    for (const d of ['p', 'p/q', 'r']) mkdirSync(join(root, d), { recursive: true });
    for (const f of ['p/1', 'p/q/2', 'r/3']) writeFileSync(join(root, f), f);
    const index = indexOf(scanWalk(input(root, null), 'js'));
    const same = scanWalk(input(root, index), scanner);
    assert.is(same.dirsRead, 0, `${scanner}: nothing read`);
    assert.is(same.touched.length, 0);
    assert.is(same.entries, 6);
    writeFileSync(join(root, 'p', 'q', 'new'), 'n');
    const changed = scanWalk(input(root, index), scanner);
    assert.is(changed.dirsRead, 1, `${scanner}: only p/q is read`);
    assert.equal(changed.touched.map((x) => x.path).sort(), ['p/q', 'p/q/new']);
    assert.is(scanWalk(input(root, index, false), scanner).dirsRead, 4, `${scanner}: without the rule, every directory`);
  }
});

test.run();
