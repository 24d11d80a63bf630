// Tree index columns: the Snapshot bytes written from them are canonicalSnapshot's, paths and
// lookups agree with the entries, and the next index made from an old one and a walk's changes
// holds exactly the new tree (rows kept, touched, dropped and merged in), on random trees with
// names JSON escapes, names that sort between a directory and its children, and non-ASCII ones.
import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Digest } from '../../../model/canonical-json.js';
import {
  allPaths,
  columnsFromEntries,
  findRow,
  kindCode,
  lowerBound,
  rowPath,
  type IndexColumns,
} from '../../../model/scan/index-columns.js';
import { nextColumns } from '../../../model/scan/index-update.js';
import { installSnapshotFromColumns, snapshotBytesFromColumns } from '../../../model/scan/snapshot-bytes.js';
import { readdirSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { ObjectStore } from '../../../model/store/object-store.js';
import { nativeSnapshotSplice, nativeSnapshotWriter } from '../../../model/scan/scanner.js';
import { CHUNK_THRESHOLD, keptSnapshot, rememberCuts } from '../../../model/store/chunks.js';
import { TreeIndex, indexHeader } from '../../../model/scan/tree-index.js';
import { nativeUnavailable } from '../../../model/scan/scanner.js';
import type { RawEntry, RawScan } from '../../../model/scan/tree-walk.js';
import { canonicalSnapshot, sortEntries, type Entry } from '../../../model/snapshot.js';
import { skipPart, tempDir } from '../../helpers/index.js';

const why = nativeUnavailable();
const native = why === null;
if (why) skipPart('Snapshot bytes from native/snapshot.c', 'native-scan', why);
const t = tempDir('pdb-cols-');
test.after(() => t.cleanup());

// Escapes before, at and after an 8-byte boundary (native/snapshot.c looks 8 bytes at a time).
const NAMES = [
  'a',
  'b',
  'a-b',
  'a.b',
  'a b',
  'é',
  '🦊',
  // Above the surrogates in UTF-16, below a character above U+FFFF in UTF-8.
  '\uff5a',
  'q"x',
  'back\\slash',
  'tab\tnl\n',
  'Z',
  'ctl\u0001\u001f\u007f',
  '\u2028',
  'a-longer-plain-name-éé',
  '1234567"',
  '12345678\\9',
  '0123456789abcde\u001f',
];

/** A random tree: directories first by construction, names from NAMES, every parent present. */
const tree = fc
  .array(
    fc.tuple(
      fc.array(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 3 }),
      fc.constantFrom('dir', 'file', 'symlink'),
      fc.nat(5),
      fc.boolean(),
    ),
    {
      maxLength: 40,
    },
  )
  .map((specs) => {
    const byPath = new Map<string, Entry>();
    for (const [parts, kind, v, exec] of specs) {
      for (let d = 1; d < parts.length; d++) {
        const dir = parts.slice(0, d).join('/');
        const there = byPath.get(dir);
        if (there && there.kind !== 'dir') break;
        byPath.set(dir, { path: dir, kind: 'dir' });
      }
      const path = parts.join('/');
      const parentOk = parts.length === 1 || byPath.get(parts.slice(0, -1).join('/'))?.kind === 'dir';
      if (!parentOk || byPath.get(path)?.kind === 'dir') continue;
      byPath.set(
        path,
        kind === 'dir'
          ? { path, kind: 'dir' }
          : kind === 'file'
            ? { path, kind: 'file', digest: `sha256:${String(v).repeat(64)}` as Digest, size: v * 100, exec }
            : { path, kind: 'symlink', target: `../t${v}"\\` },
      );
    }
    return sortEntries([...byPath.values()]);
  });

const stat = (e: Entry) => ({
  ino: e.path.length,
  size: e.kind === 'file' ? e.size : 7,
  mtimeMs: 1000.5,
  ctimeMs: 2000.25,
  mode: e.kind === 'dir' ? 0o40755 : e.kind === 'symlink' ? 0o120777 : e.exec ? 0o100755 : 0o100644,
});

test('Snapshot bytes from columns are canonicalSnapshot’s; paths and lookups agree with the entries', () => {
  fc.assert(
    fc.property(tree, fc.constantFrom(null, `sha256:${'e'.repeat(64)}` as Digest), (entries, base) => {
      const c = columnsFromEntries(entries, (e) => ({ st: stat(e), trusted: true }));
      const excludes = ['node_modules', 'a "b"'];
      const expected = canonicalSnapshot({ version: 1, base, excludes, entries });
      assert.equal(snapshotBytesFromColumns(c, base, excludes, 'js'), expected);
      if (native) assert.equal(snapshotBytesFromColumns(c, base, excludes, 'native'), expected, 'native/snapshot.c');
      assert.equal(
        allPaths(c),
        entries.map((e) => e.path),
      );
      entries.forEach((e, i) => {
        assert.is(rowPath(c, i), e.path);
        assert.is(findRow(c, e.path), i);
      });
      assert.is(findRow(c, 'not/there'), -1);
      assert.is(lowerBound(c, Buffer.from('')), 0);
      assert.is(lowerBound(c, Buffer.from('\u{10FFFF}')), c.n);
    }),
    { seed: 261, numRuns: 300 },
  );
});

/** The walk a scanner would return for `next` against an index of `old`, touching `changed` paths besides. */
function walkOf(old: IndexColumns, oldEntries: Entry[], next: Entry[], changed: Set<string>): RawScan {
  const rows = new Map(oldEntries.map((e, i) => [e.path, i]));
  const status = new Uint8Array(old.n);
  const touched: RawEntry[] = [];
  for (const e of next) {
    const row = rows.get(e.path) ?? -1;
    const same =
      row >= 0 && oldEntries[row]!.kind === e.kind && JSON.stringify(oldEntries[row]) === JSON.stringify(e) && !changed.has(e.path);
    if (row >= 0) status[row] = same ? 1 : 2;
    if (!same)
      touched.push({
        path: e.path,
        row,
        kind: kindCode(e.kind),
        ...stat(e),
        mtimeMs: 5000.5,
        target: e.kind === 'symlink' ? e.target : null,
      });
  }
  const root = { ino: 1, size: 0, mtimeMs: 1, ctimeMs: 1, mode: 0o40755 };
  return { scanner: 'js', startedAtMs: 10_000, status, touched, root, entries: next.length, files: 0, bytes: 0, dirsRead: 0 };
}

/** The content the walk hashed for a touched file of `after`. */
const contentOf = (after: Entry[]) => {
  const byPath = new Map(after.map((e) => [e.path, e]));
  return (t: RawEntry) => {
    const e = byPath.get(t.path);
    return e?.kind === 'file' ? { digest: Buffer.from(e.digest.slice(7), 'hex'), size: e.size } : undefined;
  };
};

const indexOf = (cols: IndexColumns) =>
  new TreeIndex(
    indexHeader({ snapshot: null, changeset: null, base: null, excludes: [], recordedAtMs: 10_000, generation: '', source: null }, cols.n),
    cols,
  );

test('a Snapshot installed from columns holds canonicalSnapshot’s bytes, streamed by native/snapshot.c or made in JavaScript', async () => {
  const store = await ObjectStore.init(join(t.dir, 'store-install'));
  const writers = native ? (['native', 'js'] as const) : (['js'] as const);
  const check = async (entries: Entry[], base: Digest | null, excludes: string[]) => {
    const c = columnsFromEntries(entries, (e) => ({ st: stat(e), trusted: true }));
    const expected = canonicalSnapshot({ version: 1, base, excludes, entries });
    for (const writer of writers) {
      const digest = await installSnapshotFromColumns(store, c, base, excludes, writer);
      assert.is(digest, expected.digest, writer);
      assert.ok(store.getBytes(digest).equals(expected.bytes), writer);
    }
    assert.equal(readdirSync(store.paths.tmp), [], 'a temporary file was left');
  };
  await fc.assert(
    fc.asyncProperty(tree, fc.constantFrom(null, `sha256:${'e'.repeat(64)}` as Digest), (entries, base) => check(entries, base, ['a "b"'])),
    { numRuns: 60 },
  );
  // Many 256 KiB chunks, and single names longer than a chunk (escaped, one is 6 bytes a byte).
  const wide: Entry[] = [];
  for (let d = 0; d < 40; d++) {
    const dir = `dir-${String(d).padStart(2, '0')}-${'x'.repeat(120)}`;
    wide.push({ path: dir, kind: 'dir' });
    for (let f = 0; f < 100; f++)
      wide.push({
        path: `${dir}/file-${String(f).padStart(3, '0')}-${'y'.repeat(90)}.js`,
        kind: 'file',
        digest: `sha256:${'ab'.repeat(32)}` as Digest,
        size: f * 1000,
        exec: f % 7 === 0,
      });
  }
  wide.push({ path: `long-${'\u0001'.repeat(60_000)}`, kind: 'file', digest: `sha256:${'cd'.repeat(32)}` as Digest, size: 1, exec: false });
  wide.push({ path: `long-${'z'.repeat(300_000)}`, kind: 'symlink', target: `"${'\\'.repeat(70_000)}` });
  await check(sortEntries(wide), null, []);
  // An existing good copy stays; a damaged one is quarantined and replaced (a Snapshot small enough to be one object).
  const c = columnsFromEntries(wide.slice(0, 20), (e) => ({ st: stat(e), trusted: true }));
  const digest = await installSnapshotFromColumns(store, c, null, [], writers[0]);
  const path = store.objectPath(digest);
  const good = store.getBytes(digest);
  chmodSync(path, 0o644);
  writeFileSync(path, 'damaged');
  assert.is(await installSnapshotFromColumns(store, c, null, [], writers[0]), digest);
  assert.ok(store.getBytes(digest).equals(good), 'the damaged object was not replaced');
  assert.ok((await store.quarantinedObjects()).includes(digest), 'the damaged object was not moved aside');
  assert.equal(readdirSync(store.paths.tmp), []);
});

test('the next index holds exactly the new tree: rows kept, touched, dropped and merged in', () => {
  fc.assert(
    fc.property(tree, tree, fc.array(fc.constantFrom(...NAMES), { maxLength: 4 }), (before, after, touch) => {
      const old = columnsFromEntries(before, (e) => ({ st: stat(e), trusted: true }));
      const raw = walkOf(old, before, after, new Set(touch));
      const cols = nextColumns(old, raw, contentOf(after), false);
      const index = indexOf(cols);
      assert.equal(index.entries, after);
      // Touched rows were recorded 5 s before the walk's start + window: trusted; kept rows keep theirs.
      for (let i = 0; i < cols.n; i++) assert.ok(index.sig(i) !== '' || after[i]!.kind !== 'file', after[i]!.path);
      assert.equal(snapshotBytesFromColumns(cols, null, []), canonicalSnapshot({ version: 1, base: null, excludes: [], entries: after }));
    }),
    { seed: 262, numRuns: 300 },
  );
});

test('the first index (none before it) holds exactly the tree, its rows sorted by their UTF-8 bytes', () => {
  fc.assert(
    fc.property(tree, (after) => {
      const none = columnsFromEntries([], () => null);
      const raw = walkOf(none, [], after, new Set());
      raw.touched.reverse(); // the walk's order is no order
      const cols = nextColumns(null, raw, contentOf(after), false);
      assert.equal(
        cols,
        columnsFromEntries(after, (e) => ({ st: { ...stat(e), mtimeMs: 5000.5 }, trusted: true })),
      );
      assert.equal(nextColumns(none, raw, contentOf(after), false), cols);
    }),
    { seed: 264, numRuns: 300 },
  );
});

// The common checkpoint: the same paths, a few files with new bytes, size or exec bit, a leaf
// retyped. The next columns share the old ones' structure; the old index must still say `before`.
const restatedTree = tree.chain((before) =>
  fc.array(fc.tuple(fc.nat(before.length + 2), fc.nat(5), fc.boolean(), fc.boolean()), { maxLength: 6 }).map((edits) => {
    const after = before.map((e) => ({ ...e }) as Entry);
    for (const [at, v, exec, retype] of edits) {
      const e = after[at % Math.max(1, after.length)];
      if (!e || e.kind === 'dir') continue;
      const leaf = { path: e.path };
      after[after.indexOf(e)] =
        retype && e.kind === 'file'
          ? { ...leaf, kind: 'symlink', target: `t${v}` }
          : { ...leaf, kind: 'file', digest: `sha256:${String((v + 1) % 10).repeat(64)}` as Digest, size: v * 7, exec };
    }
    return { before, after };
  }),
);

test('the next index of the same paths with new content: old rows restated, the old index untouched', () => {
  fc.assert(
    fc.property(restatedTree, fc.array(fc.constantFrom(...NAMES), { maxLength: 4 }), ({ before, after }, touch) => {
      const old = columnsFromEntries(before, (e) => ({ st: stat(e), trusted: true }));
      const oldIndex = indexOf(old);
      const raw = walkOf(old, before, after, new Set(touch));
      const cols = nextColumns(old, raw, contentOf(after), false);
      const index = indexOf(cols);
      assert.equal(index.entries, after);
      assert.equal(snapshotBytesFromColumns(cols, null, []), canonicalSnapshot({ version: 1, base: null, excludes: [], entries: after }));
      assert.equal(oldIndex.entries, before);
      for (const t of raw.touched) if (t.kind === kindCode('file')) assert.ok(index.sig(t.row) !== '', t.path);
    }),
    { seed: 263, numRuns: 300 },
  );
});

// ---- a Snapshot spliced from the one before (native/snapshot.c snapshotSplice, the daemon's).

const HEAD = Buffer.from('{"base":null,"entries":[');
const TAIL = Buffer.from('],"excludes":[],"version":1}');

/** The bytes and row ends of `c` as the full writer gives them. */
function written(c: IndexColumns): { bytes: Buffer; ends: Uint32Array } {
  const ends = new Uint32Array(c.n + 1);
  return { bytes: nativeSnapshotWriter('native')!(c, HEAD, TAIL, ends), ends };
}

/** Splice `cols` from `prev` (of `old`) by what nextColumns said was copied; null when it gave up. */
function spliced(cols: IndexColumns, prev: { bytes: Buffer; ends: Uint32Array }, from: Int32Array) {
  const ends = new Uint32Array(cols.n + 1);
  const bytes = nativeSnapshotSplice('native')!(cols, HEAD, TAIL, ends, prev.bytes, prev.ends, from);
  return bytes && { bytes, ends };
}

test('a Snapshot spliced from the one before is the one written whole, row ends and all', () => {
  if (!native) return;
  const check = (before: Entry[], after: Entry[], touch: string[]) => {
    const old = columnsFromEntries(before, (e) => ({ st: stat(e), trusted: true }));
    const raw = walkOf(old, before, after, new Set(touch));
    const copied: { from: Int32Array | null } = { from: null };
    const cols = nextColumns(old, raw, contentOf(after), false, copied);
    if (!copied.from) return; // a symlink touched: written whole
    assert.is(copied.from.length, cols.n);
    const whole = written(cols);
    assert.equal(spliced(cols, written(old), copied.from), whole);
    assert.ok(whole.bytes.equals(canonicalSnapshot({ version: 1, base: null, excludes: [], entries: after }).bytes));
  };
  fc.assert(
    fc.property(tree, tree, fc.array(fc.constantFrom(...NAMES), { maxLength: 4 }), (before, after, touch) => check(before, after, touch)),
    { seed: 265, numRuns: 300 },
  );
  fc.assert(
    fc.property(restatedTree, fc.array(fc.constantFrom(...NAMES), { maxLength: 4 }), ({ before, after }, touch) =>
      check(before, after, touch),
    ),
    { seed: 266, numRuns: 300 },
  );
});

test('a splice gives up (null) where the Snapshot before does not say what the rows say, never another Snapshot', () => {
  if (!native) return;
  const entries = sortEntries(
    Array.from({ length: 30 }, (_, i): Entry => ({
      path: `f${i}`,
      kind: 'file',
      digest: `sha256:${'ab'.repeat(32)}` as Digest,
      size: i * 1000,
      exec: i % 3 === 0,
    })),
  );
  const c = columnsFromEntries(entries, (e) => ({ st: stat(e), trusted: true }));
  const prev = written(c);
  const all = Int32Array.from(entries, (_, i) => i);
  assert.ok(spliced(c, prev, all)!.bytes.equals(prev.bytes), 'every row copied: the same bytes');
  // A copied row whose digest, size or exec bit the bytes before disagree with.
  for (const [what, edit] of [
    ['digest', (b: Buffer, at: number) => (b[at + 20] = 0x30)],
    ['exec', (b: Buffer, at: number) => b.write('true,', b.indexOf('false', at), 'latin1')],
    ['size', (b: Buffer, at: number) => (b[b.indexOf('}', at) - 1] = 0x39)],
  ] as const) {
    const bytes = Buffer.from(prev.bytes);
    edit(bytes, prev.ends[5]! + 1);
    assert.is(spliced(c, { bytes, ends: prev.ends }, all), null, what);
    const from = all.slice();
    from[5] = -1; // written afresh, not copied: the splice holds again
    assert.ok(spliced(c, { bytes, ends: prev.ends }, from)?.bytes.equals(prev.bytes), `${what}, row rewritten`);
  }
  // Ends out of order, past the bytes, or not at a row's braces; a row named that is not there.
  const ends = (f: (e: Uint32Array) => void) => {
    const e = prev.ends.slice();
    f(e);
    return e;
  };
  assert.is(spliced(c, { bytes: prev.bytes, ends: ends((e) => ([e[3], e[4]] = [e[4]!, e[3]!])) }, all), null);
  assert.is(spliced(c, { bytes: prev.bytes, ends: ends((e) => (e[30] = prev.bytes.length + 1)) }, all), null);
  assert.is(spliced(c, { bytes: prev.bytes, ends: ends((e) => (e[7] = e[7]! - 1)) }, all), null);
  assert.is(
    spliced(
      c,
      prev,
      Int32Array.from(all, (i) => (i === 29 ? 30 : i)),
    ),
    null,
  );
});

test('snapshotBytesFromColumns splices where this process kept the Snapshot before (the daemon)', () => {
  if (!native) return;
  rememberCuts(64 * 1024 * 1024);
  const before: Entry[] = [];
  for (let d = 0; d < 30; d++) {
    before.push({ path: `d${d}`, kind: 'dir' });
    for (let f = 0; f < 20; f++)
      before.push({ path: `d${d}/f${f}`, kind: 'file', digest: `sha256:${String(f % 10).repeat(64)}` as Digest, size: f, exec: false });
  }
  const sorted = sortEntries(before);
  const old = columnsFromEntries(sorted, (e) => ({ st: stat(e), trusted: true }));
  const first = snapshotBytesFromColumns(old, null, [], 'native');
  assert.ok(first.bytes.length > CHUNK_THRESHOLD, 'large enough to be cut and kept');
  assert.ok(keptSnapshot(first.digest), 'kept with its row ends');
  const after = sorted.map((e) => (e.path === 'd3/f4' ? { ...e, digest: `sha256:${'9'.repeat(64)}` as Digest, size: 77 } : e));
  after.splice(
    after.findIndex((e) => e.path === 'd7/f1'),
    1,
  );
  after.push({ path: 'd9/new', kind: 'file', digest: `sha256:${'1'.repeat(64)}` as Digest, size: 5, exec: true });
  const next = sortEntries(after);
  const copied: { from: Int32Array | null } = { from: null };
  const cols = nextColumns(old, walkOf(old, sorted, next, new Set()), contentOf(next), false, copied);
  assert.ok(copied.from && copied.from.filter((x) => x < 0).length === 2, 'the changed row and the new one are written afresh');
  const doc = snapshotBytesFromColumns(cols, null, [], 'native', first.digest, { from: copied.from!, rows: old.n });
  assert.equal(doc, canonicalSnapshot({ version: 1, base: null, excludes: [], entries: next }));
});

test.run();
