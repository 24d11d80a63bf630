import { sha256Digest, type Digest } from './canonical-json.js';
import { PdbError } from './errors.js';

export const SNAPSHOT_VERSION = 1 as const;

export type EntryKind = 'dir' | 'file' | 'symlink';

/** One entry of the v1 source contract. Nothing else about a file is part of its identity. */
export type Entry =
  | { path: string; kind: 'dir' }
  | { path: string; kind: 'file'; digest: Digest; size: number; exec: boolean }
  | { path: string; kind: 'symlink'; target: string };

export interface Snapshot {
  version: typeof SNAPSHOT_VERSION;
  /** null for an import; the base Snapshot's digest for a checkpoint. */
  base: Digest | null;
  /** Extra excludes from pdb-env.json, sorted; part of the Snapshot's identity. */
  excludes: string[];
  /** Sorted by the UTF-8 bytes of `path`. */
  entries: Entry[];
}

export type ChangeKind = 'add' | 'delete' | 'modify' | 'mode' | 'retype';

export interface Change {
  path: string;
  kind: ChangeKind;
  before: Entry | null;
  after: Entry | null;
}

export interface Changeset {
  version: typeof SNAPSHOT_VERSION;
  base: Digest;
  result: Digest;
  changes: Change[];
}

/**
 * Compare two relative paths by their UTF-8 bytes, as the contract sorts them. UTF-8 order is code
 * point order, which UTF-16 code units keep except where a surrogate meets a unit from U+E000 up:
 * only then (and for a lone surrogate) are the bytes encoded, so a merge over 250,000 paths makes no
 * garbage of two Buffers a step.
 */
export function comparePaths(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  const x = i < a.length ? a.charCodeAt(i) : -1;
  const y = i < b.length ? b.charCodeAt(i) : -1;
  const before = i > 0 ? a.charCodeAt(i - 1) : 0;
  if (x >= 0xd800 || y >= 0xd800 || (before >= 0xd800 && before <= 0xdbff))
    return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
  return x < y ? -1 : 1;
}

export function sortEntries<T extends { path: string }>(entries: T[]): T[] {
  // comparePaths encodes nothing below U+D800: a Buffer key per path was 23 MB at 268,753 entries,
  // and sorting the walk's order with them took 3x as long.
  return entries.slice().sort((x, y) => comparePaths(x.path, y.path));
}

/** Throws E_BAD_PATH unless `path` is a contract path: relative, '/'-separated, no '.', '..', empty component or NUL. */
export function assertContractPath(path: string): void {
  if (path.length === 0 || path.startsWith('/') || path.includes('\0')) {
    throw new PdbError('E_BAD_PATH', `"${path}" is not a relative contract path`, { path });
  }
  for (const part of path.split('/')) {
    if (part === '' || part === '.' || part === '..') {
      throw new PdbError('E_BAD_PATH', `"${path}" has an empty, "." or ".." component`, { path });
    }
  }
}

export function createSnapshot(entries: Entry[], excludes: string[], base: Digest | null = null): Snapshot {
  return { version: SNAPSHOT_VERSION, base, excludes: [...excludes].sort(), entries: sortEntries(entries) };
}

export function snapshotDigest(snapshot: Snapshot): Digest {
  return canonicalSnapshot(snapshot).digest;
}

/**
 * The canonical bytes of a Snapshot, written directly: the same bytes as canonicalJson (keys in
 * sorted order, strings through JSON.stringify), without sorting each entry's keys again, which
 * cost most of a checkpoint's serialization on 20,000 entries.
 */
export function canonicalSnapshot(s: Snapshot): { bytes: Buffer; digest: Digest } {
  const parts: string[] = new Array(s.entries.length);
  for (let i = 0; i < s.entries.length; i++) parts[i] = canonicalEntryJson(s.entries[i]!);
  const bytes = Buffer.from(`${snapshotHead(s.base)}${parts.join(',')}${snapshotTail(s.excludes)}`, 'utf8');
  return { bytes, digest: sha256Digest(bytes) };
}

/** A Snapshot's canonical bytes up to its first entry, and from its last entry on (`excludes` as sorted). */
export const snapshotHead = (base: Digest | null): string => `{"base":${base === null ? 'null' : JSON.stringify(base)},"entries":[`;
export const snapshotTail = (excludes: readonly string[]): string =>
  `],"excludes":${JSON.stringify(excludes)},"version":${JSON.stringify(SNAPSHOT_VERSION)}}`;

/** One entry's canonical JSON, as it stands in a Snapshot's canonical bytes. */
export function canonicalEntryJson(e: Entry): string {
  switch (e.kind) {
    case 'dir':
      return `{"kind":"dir","path":${JSON.stringify(e.path)}}`;
    case 'file':
      return `{"digest":${JSON.stringify(e.digest)},"exec":${e.exec ? 'true' : 'false'},"kind":"file","path":${JSON.stringify(e.path)},"size":${JSON.stringify(e.size)}}`;
    case 'symlink':
      return `{"kind":"symlink","path":${JSON.stringify(e.path)},"target":${JSON.stringify(e.target)}}`;
    default: {
      const never: never = e;
      throw new Error(`unknown entry ${JSON.stringify(never)}`);
    }
  }
}

/**
 * The canonical bytes of a Snapshot given as its canonical `bytes`, with `base` instead of its
 * own: canonical JSON puts `base` first, so only the head `{"base":...,` changes. Spares parsing
 * and writing every entry again (restore --to base records the base's entries as a checkpoint on it).
 */
export function withSnapshotBase(bytes: Buffer, base: Digest | null): { bytes: Buffer; digest: Digest } {
  const head = /^\{"base":(null|"sha256:[0-9a-f]{64}"),"entries":/.exec(bytes.subarray(0, 96).toString('latin1'));
  if (!head) throw new PdbError('E_OBJECT_CORRUPT', 'not the canonical bytes of a Snapshot', { hint: 'pdb-env verify checks the store.' });
  const out = Buffer.concat([Buffer.from(`{"base":${JSON.stringify(base)}`), bytes.subarray(8 + head[1]!.length)]);
  return { bytes: out, digest: sha256Digest(out) };
}

/** The identity of an entry's content under the contract, for equality checks. */
export function entryKey(e: Entry): string {
  switch (e.kind) {
    case 'dir':
      return 'dir';
    case 'file':
      return `file:${e.digest}:${e.size}:${e.exec ? 'x' : '-'}`;
    case 'symlink':
      return `symlink:${e.target}`;
    default: {
      const never: never = e;
      throw new Error(`unknown entry ${JSON.stringify(never)}`);
    }
  }
}

function classify(before: Entry, after: Entry): ChangeKind | null {
  if (before.kind !== after.kind) return 'retype';
  if (before.kind === 'file' && after.kind === 'file') {
    if (before.digest !== after.digest || before.size !== after.size) return 'modify';
    if (before.exec !== after.exec) return 'mode';
    return null;
  }
  if (before.kind === 'symlink' && after.kind === 'symlink') return before.target === after.target ? null : 'modify';
  return null;
}

/** The change at `path` from `before` to `after` (null: absent), or null when the entries are the same. */
export function changeOf(path: string, before: Entry | null, after: Entry | null): Change | null {
  if (!before) return after ? { path, kind: 'add', before: null, after } : null;
  if (!after) return { path, kind: 'delete', before, after: null };
  const kind = classify(before, after);
  return kind ? { path, kind, before, after } : null;
}

/** The exact sorted path changes from `before` to `after`. */
export function diffEntries(before: Entry[], after: Entry[]): Change[] {
  const a = new Map(before.map((e) => [e.path, e]));
  const b = new Map(after.map((e) => [e.path, e]));
  const changes: Change[] = [];
  for (const [path, e] of a) {
    const other = b.get(path);
    if (!other) changes.push({ path, kind: 'delete', before: e, after: null });
    else {
      const kind = classify(e, other);
      if (kind) changes.push({ path, kind, before: e, after: other });
    }
  }
  for (const [path, e] of b) if (!a.has(path)) changes.push({ path, kind: 'add', before: null, after: e });
  return sortEntries(changes);
}

/**
 * The changes from tree A to tree B when both are described by their Changesets against one base
 * (`a`, `b`: each Changeset's `changes`; the base itself is `[]`). Only the paths either changed can
 * differ: at each, A's entry is A's change's `after`, or, where A did not change it, B's change's
 * `before` (the base's entry), and likewise for B. O(changes), never a pass over the tree; equal to
 * diffEntries of the two whole trees (test/model/snapshot.test.ts checks it on random trees).
 */
export function diffThroughBase(a: readonly Change[], b: readonly Change[]): Change[] {
  const inB = new Map(b.map((c) => [c.path, c]));
  const changes: Change[] = [];
  for (const ca of a) {
    const cb = inB.get(ca.path);
    const c = changeOf(ca.path, ca.after, cb ? cb.after : ca.before);
    if (c) changes.push(c);
  }
  const inA = new Set(a.map((c) => c.path));
  for (const cb of b) {
    if (inA.has(cb.path)) continue;
    const c = changeOf(cb.path, cb.before, cb.after);
    if (c) changes.push(c);
  }
  return sortEntries(changes);
}

export function createChangeset(base: Digest, result: Digest, changes: Change[]): Changeset {
  return { version: SNAPSHOT_VERSION, base, result, changes: sortEntries(changes) };
}

/** Mismatch counts by kind between an expected and an actual entry list (used by oracle checks). */
export interface MismatchCounts {
  content: number;
  mode: number;
  symlink: number;
  missing: number;
  extra: number;
  kind: number;
}

export function countMismatches(expected: Entry[], actual: Entry[]): MismatchCounts {
  const counts: MismatchCounts = { content: 0, mode: 0, symlink: 0, missing: 0, extra: 0, kind: 0 };
  for (const c of diffEntries(expected, actual)) {
    switch (c.kind) {
      case 'add':
        counts.extra++;
        break;
      case 'delete':
        counts.missing++;
        break;
      case 'mode':
        counts.mode++;
        break;
      case 'retype':
        counts.kind++;
        break;
      case 'modify':
        if (c.before?.kind === 'symlink') counts.symlink++;
        else counts.content++;
        break;
      default: {
        const never: never = c.kind;
        throw new Error(`unknown change ${String(never)}`);
      }
    }
  }
  return counts;
}

export function totalMismatches(c: MismatchCounts): number {
  return c.content + c.mode + c.symlink + c.missing + c.extra + c.kind;
}
