// Import: scan a source directory into the store, and the race check a prepare makes after it
// materialized the session. The source's tree index (model/scan/tree-index.ts) makes an unchanged
// source cost a stat walk: files whose signature is the recorded one are not read, and when
// nothing differs the recorded Snapshot digest is the answer (nothing serialized or hashed again).
import { lstat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Digest } from '../model/canonical-json.js';
import { PdbError } from '../model/errors.js';
import { writeFileAtomic, type ObjectStore } from '../model/store/object-store.js';
import { sourceKey } from '../model/paths.js';
import type { ProgressFn } from '../model/progress.js';
import {
  SOURCE_CONFIG,
  hashPaths,
  readSourceConfig,
  scanTree,
  trustableSignatures,
  walkTree,
  type ScanResult,
  type Walk,
} from '../model/scan/scan.js';
import { SNAPSHOT_VERSION, type Change, type Entry, type Snapshot } from '../model/snapshot.js';
import { createTreeIndex, isTrustable, racyWindowMs, readTreeIndex, serializeTreeIndex } from '../model/scan/tree-index.js';

export interface ImportResult {
  digest: Digest;
  /** The Snapshot (built when first read: an unchanged import never needs it). */
  snapshot: Snapshot;
  excludes: string[];
  scan: ScanResult;
}

export interface ImportOptions {
  /** Check that every trusted digest is in the store (after an object turned out missing). */
  checkObjects?: boolean;
  onProgress?: ProgressFn;
}

/** Where the tree index of the last import of `src` is kept (one file per source). */
export function sourceIndexFile(store: ObjectStore, src: string): string {
  return join(store.paths.sources, `${sourceKey(src)}.index`);
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** Scan a source directory into the store (installing the bytes it has not seen) and record its Snapshot. */
export async function importSource(store: ObjectStore, sourceDir: string, options: ImportOptions = {}): Promise<ImportResult> {
  const src = resolve(sourceDir);
  const st = await lstat(src).catch(() => null);
  if (!st || !st.isDirectory())
    throw new PdbError('E_SOURCE_MISSING', `source directory ${src} does not exist or is not a directory`, {
      hint: 'Pass --from DIR or run in your project directory.',
    });
  const { excludes } = await readSourceConfig(src);
  const indexFile = sourceIndexFile(store, src);
  const index = readTreeIndex(indexFile);
  const generation = store.generation();
  const scan = await scanTree(src, {
    excludes,
    excludeAbsolute: [store.paths.root],
    store,
    trust: index,
    checkObjects: options.checkObjects === true || index?.header.generation !== generation,
    onProgress: options.onProgress,
  });
  const unchanged = index !== null && scan.changedPaths!.length === 0 && sameList(index.header.excludes, excludes);
  let snapshot: Snapshot | null = null;
  const build = (): Snapshot => (snapshot ??= { version: SNAPSHOT_VERSION, base: null, excludes, entries: scan.entries });
  let digest: Digest;
  if (unchanged && index.header.snapshot && store.has(index.header.snapshot)) digest = index.header.snapshot;
  else digest = await store.putSnapshot(build());
  // Every file trusted and nothing changed: the index already holds exactly these signatures (a
  // file hashed again, racily clean before or touched, may be trustable now: then it is rewritten).
  const same = unchanged && scan.filesHashed === 0 && digest === index.header.snapshot && index.header.generation === generation;
  if (!same) {
    const sigs = trustableSignatures(scan.walk);
    const next = createTreeIndex(
      { snapshot: digest, changeset: null, base: null, excludes, recordedAtMs: scan.walk.startedAtMs, generation, source: src },
      scan.entries,
      sigs,
    );
    await writeFileAtomic(store.paths, indexFile, serializeTreeIndex(next), 0o644, { sync: false });
  }
  return {
    digest,
    excludes,
    scan,
    get snapshot() {
      return build();
    },
  };
}

/**
 * The race check of prepare: walk the source again and compare each entry's signature with what
 * the import's walk saw; nothing is hashed again except files that were racily clean then (a
 * write in the same clock tick leaves a signature unchanged). Writes nothing.
 */
export async function sourceChangesSince(store: ObjectStore, sourceDir: string, imported: ImportResult): Promise<Change[]> {
  const src = resolve(sourceDir);
  const { excludes } = await readSourceConfig(src);
  if (!sameList(excludes, imported.excludes)) return [{ path: SOURCE_CONFIG, kind: 'modify', before: null, after: null }];
  const first = imported.scan.walk;
  const again = walkTree(src, { excludes, excludeAbsolute: [store.paths.root] });
  const differing = compareWalks(first, again);
  const window = racyWindowMs(first.files.map((f) => f.mtimeMs));
  const racy = first.files.filter((f) => !isTrustable(f.mtimeMs, f.ctimeMs, first.startedAtMs, window) && !differing.has(f.path));
  if (racy.length > 0) {
    const entries = entryMap(imported.scan.entries);
    const digests = await hashPaths(racy.map((f) => f.abs));
    racy.forEach((f, i) => {
      const e = entries.get(f.path);
      if (e?.kind !== 'file' || e.digest !== digests[i]) differing.set(f.path, 'modify');
    });
  }
  if (differing.size === 0) return [];
  const entries = entryMap(imported.scan.entries);
  return [...differing]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([path, kind]) => ({ path, kind, before: entries.get(path) ?? null, after: null }));
}

function entryMap(entries: Entry[]): Map<string, Entry> {
  return new Map(entries.map((e) => [e.path, e]));
}

/** Paths that differ between two walks of one tree: added, deleted, retyped, or a file whose signature or a link whose target changed. */
function compareWalks(a: Walk, b: Walk): Map<string, Change['kind']> {
  const out = new Map<string, Change['kind']>();
  if (sameWalk(a, b)) return out;
  const kindsA = walkKinds(a);
  const kindsB = walkKinds(b);
  for (const [path, ka] of kindsA) {
    const kb = kindsB.get(path);
    if (kb === undefined) out.set(path, 'delete');
    else if (kb[0] !== ka[0]) out.set(path, 'retype');
    else if (kb !== ka) out.set(path, 'modify');
  }
  for (const path of kindsB.keys()) if (!kindsA.has(path)) out.set(path, 'add');
  return out;
}

/** The common case, without a map: both walks saw the same entries in the same order. */
function sameWalk(a: Walk, b: Walk): boolean {
  if (a.dirs.length !== b.dirs.length || a.files.length !== b.files.length || a.links.length !== b.links.length) return false;
  for (let i = 0; i < a.dirs.length; i++) if (a.dirs[i] !== b.dirs[i]) return false;
  for (let i = 0; i < a.links.length; i++)
    if (a.links[i]!.path !== b.links[i]!.path || a.links[i]!.target !== b.links[i]!.target) return false;
  for (let i = 0; i < a.files.length; i++) if (a.files[i]!.path !== b.files[i]!.path || a.files[i]!.sig !== b.files[i]!.sig) return false;
  return true;
}

/** Path -> kind letter and what identifies it in a walk: 'd', 'l' + target, 'f' + signature. */
function walkKinds(w: Walk): Map<string, string> {
  const m = new Map<string, string>();
  for (const d of w.dirs) m.set(d, 'd');
  for (const l of w.links) m.set(l.path, `l${l.target}`);
  for (const f of w.files) m.set(f.path, `f${f.sig}`);
  return m;
}

/** Fail with E_SOURCE_CHANGED unless the source is still what was imported. */
export async function assertSourceUnchanged(store: ObjectStore, sourceDir: string, imported: ImportResult): Promise<void> {
  const changes = await sourceChangesSince(store, sourceDir, imported);
  if (changes.length > 0) {
    const changed = changes.slice(0, 5).map((c) => `${c.kind} ${c.path}`);
    throw new PdbError('E_SOURCE_CHANGED', `the source changed while the session was prepared (${changed.join(', ')})`, {
      hint: 'Stop whatever writes into the source and create the session again.',
    });
  }
}
