// Checkpoint and diff at status speed. A checkpoint is still a complete scan of the visible tree:
// every entry is walked and every file lstat'ed, so adds, deletes and retypes are always found.
// What is spared is reading bytes: a file whose stat signature is the one the session's tree index
// recorded (at create, from the base, or at the last checkpoint) keeps its digest, under git's
// racy-clean rule (model/scan/tree-index.ts); `verify` re-hashes every file. The changes against the
// base are composed from the index's own Changeset and what changed since, so the base's manifest
// is not read either.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Digest } from '../../model/canonical-json.js';
import { crashPoint } from '../../model/crash-point.js';
import { PdbError, isPdbError } from '../../model/errors.js';
import { keepDocument, keptDocument } from '../../model/store/kept-documents.js';
import { writeFileAtomic } from '../../model/store/object-store.js';
import type { ProgressFn } from '../../model/progress.js';
import { exclusion, scanTree, type ScanResult } from '../../model/scan/scan.js';
import { vouchedByChanged } from '../../model/scan/changed-paths.js';
import {
  changeOf,
  createChangeset,
  diffEntries,
  diffThroughBase,
  sortEntries,
  type Change,
  type Changeset,
  type Entry,
  type Snapshot,
} from '../../model/snapshot.js';
import { deltaFileOf, indexDeltaPieces, readTreeIndex, treeIndexPieces, type TreeIndex } from '../../model/scan/tree-index.js';
import { ancestorPids } from '../../model/os/proc.js';
import { keyOf, vouchedRows, watchRecorded } from '../../model/scan/watch.js';
import { openOperation } from '../locks/operation.js';
import type { LockOwner } from '../locks/lock.js';
import {
  appendCheckpointLog,
  readSession,
  sessionIndexFile,
  writeSession,
  type StoreContext,
  type TurnMark,
} from '../records/session-record.js';
import { changeCounts } from '../history/log.js';
import { resumeSession, type OpenSession } from './open.js';

export interface CheckpointOptions {
  /** Re-hash every file instead of trusting recorded signatures. */
  verify?: boolean;
  onProgress?: ProgressFn;
  /** A name for it in the log (`checkpoint --label`, a hook's turn, a run's command line). */
  label?: string;
  /** The agent turn it brackets (pdb-env hook AGENT): recorded in the log beside the label. */
  turn?: TurnMark;
  /**
   * The process the checkpoint is taken for, when not this one: the pdb-env daemon's client
   * (cli/daemon/). Its ancestors are the "own run" (ownCaller), and it is not "something else running".
   */
  caller?: number;
}

/** What only a restore records with its checkpoints: the checkpoint number it brought back. */
export interface RecordOptions extends CheckpointOptions {
  restoredFrom?: number;
}

export interface CheckpointResult {
  session: string;
  base: Digest;
  snapshot: Digest;
  changeset: Digest;
  changes: number;
  files: number;
  bytes: number;
  /** Files read and hashed by this checkpoint; the others kept their recorded digest. */
  filesHashed: number;
  filesTrusted: number;
  /** Directories read (readdir); the others kept their recorded names (the directory rule). */
  dirsRead: number;
  /** The stat walk that ran: the native scanner or the JavaScript one. */
  scanner: 'native' | 'js';
  /**
   * What told the walk which rows to lstat: the daemon's watch, the backend's record of what
   * changed (an overlay's upper dir), or nothing (every row); with why the backend's could not be used.
   */
  walked: { by: 'watch' | 'backend' | 'whole'; reason: string | null };
  /** Its number in the session's log (1 = the first), its label, and the paths added, modified and deleted since the checkpoint before. */
  number: number;
  label: string | null;
  added: number | null;
  modified: number | null;
  deleted: number | null;
}

/** The tree index that describes this session: its own (create or last checkpoint), else its base's. */
function loadIndex(ctx: StoreContext, s: OpenSession): TreeIndex | null {
  const own = readTreeIndex(sessionIndexFile(ctx.store, s.rec.name));
  const base = s.rec.base;
  if (own && (own.header.snapshot === base || (own.header.base === base && own.header.changeset !== null))) return own;
  const shared = s.rec.index ? readTreeIndex(join(ctx.store.paths.root, s.rec.index)) : null;
  return shared && shared.header.snapshot === base ? shared : null;
}

interface SessionScan {
  scan: ScanResult;
  walked: CheckpointResult['walked'];
  index: TreeIndex | null;
  excludes: string[];
  generation: string;
}

async function scanSession(ctx: StoreContext, s: OpenSession, install: boolean, options: CheckpointOptions): Promise<SessionScan> {
  const index = options.verify ? null : loadIndex(ctx, s);
  const excludes = index ? index.header.excludes : ctx.store.getDocument<Snapshot>(s.rec.base, 'Snapshot').excludes;
  const generation = ctx.store.generation();
  // Through a daemon that watches session roots: what no event touched is not lstat'ed (model/scan/watch.ts).
  let vouch = install && watchable(s) ? vouchedRows(s.dir, s.root, index) : null;
  const walked: SessionScan['walked'] = { by: vouch ? 'watch' : 'whole', reason: null };
  if (!vouch && index) ({ vouch, reason: walked.reason } = await backendVouch(s, index, excludes));
  if (vouch && walked.by === 'whole') walked.by = 'backend';
  const scan = await scanTree(s.root, {
    excludes,
    store: install ? ctx.store : undefined,
    trust: index,
    vouch,
    checkObjects: index?.header.generation !== generation,
    onProgress: options.onProgress,
  });
  return { scan, walked, index, excludes, generation };
}

/** The rows the backend's record of what changed since the base vouches for (model/scan/changed-paths.ts), or why none. */
async function backendVouch(
  s: OpenSession,
  index: TreeIndex,
  excludes: string[],
): Promise<{ vouch: Uint8Array | null; reason: string | null }> {
  if (!s.backend.changedPaths || s.rec.backendModule) return { vouch: null, reason: null };
  // The index must describe this session's tree over the base the backend's record starts from.
  if (index.header.snapshot !== s.rec.base && index.header.base !== s.rec.base)
    return { vouch: null, reason: 'the tree index is not of this base' };
  const changed = await s.backend.changedPaths(s.ctx, s.root, s.dir, s.rec.backendState, exclusion(s.root, excludes));
  if (changed.paths === null) return { vouch: null, reason: changed.reason };
  const vouch = vouchedByChanged(index, changed, pathsSinceBase(s, index));
  return vouch ? { vouch, reason: null } : { vouch: null, reason: 'the root is a renamed directory' };
}

/** The paths whose entry in `index` is not the base's (its Changeset's), or null when that cannot be read. */
function pathsSinceBase(s: OpenSession, index: TreeIndex): string[] | null {
  if (index.header.snapshot === s.rec.base) return [];
  try {
    return keptDocument<Changeset>(s.ctx.store, index.header.changeset!, 'Changeset').changes.map((c) => c.path);
  } catch (err) {
    if (isPdbError(err, 'E_OBJECT_MISSING') || isPdbError(err, 'E_OBJECT_CORRUPT')) return null;
    throw err;
  }
}

// Backends whose root is a directory of a local filesystem written in place: every write through
// it reaches inotify's watch of its directory (an overlay's, a FUSE mount's or a user's module's
// root is not known to; theirs are walked whole every time).
const WATCHED_BACKENDS: ReadonlySet<string> = new Set(['full-copy', 'reflink', 'btrfs-snapshot', 'git-worktree']);
const watchable = (s: OpenSession) => WATCHED_BACKENDS.has(s.rec.backend) && !s.rec.backendModule;

/**
 * The changes from the base to the scanned tree. With an index, only the paths that changed since
 * it are looked at: each one's entry in the base is its `before` in the index's Changeset, or else
 * its entry in the index (unchanged since the base). Without one, the base's manifest is diffed.
 */
function changesSinceBase(ctx: StoreContext, s: OpenSession, { scan, index }: SessionScan): Change[] {
  const diffWithBase = () => diffEntries(ctx.store.getDocument<Snapshot>(s.rec.base, 'Snapshot').entries, scan.entries);
  if (!index) return diffWithBase();
  const prev = new Map<string, Change>();
  if (index.header.snapshot !== s.rec.base) {
    try {
      for (const c of keptDocument<Changeset>(ctx.store, index.header.changeset!, 'Changeset').changes) prev.set(c.path, c);
    } catch (err) {
      if (!isPdbError(err, 'E_OBJECT_MISSING') && !isPdbError(err, 'E_OBJECT_CORRUPT')) throw err;
      return diffWithBase();
    }
  }
  const changed = scan.changedEntries!;
  if (changed.size === 0) return [...prev.values()];
  const inIndex = (path: string): Entry | null => {
    const i = index.position(path);
    return i === undefined ? null : index.entry(i);
  };
  for (const [path, after] of changed) {
    const c = changeOf(path, prev.has(path) ? prev.get(path)!.before : inIndex(path), after);
    if (c) prev.set(path, c);
    else prev.delete(path);
  }
  return sortEntries([...prev.values()]);
}

/**
 * From inside the session's own run or enter, that run (an ancestor of this process) waits for an
 * exclusive operation (checkpoint, restore): its lease does not block, but anything else of the
 * session still running does; and no such operation starts while a restore is unfinished.
 */
export function ownCaller(
  ctx: StoreContext,
  name: string,
  caller = process.pid,
): { tolerate: (owner: LockOwner) => boolean; check: () => Promise<void> } {
  // A daemon's client is itself one of the caller's (this process is not its ancestor).
  const ancestors = ancestorPids(caller);
  if (caller !== process.pid) ancestors.add(caller);
  let inside = false;
  return {
    tolerate: (owner) => {
      const mine = ancestors.has(owner.pid);
      inside ||= mine;
      return mine;
    },
    check: async () => {
      if (inside) await assertOnlyAncestors(ctx, name, ancestors);
      await assertNoUnfinishedRestore(ctx, name);
    },
  };
}

/** Complete scan of the quiesced session root: installs objects, records Snapshot + Changeset. Publishes nothing. */
export async function checkpointSession(ctx: StoreContext, name: string, options: CheckpointOptions = {}): Promise<CheckpointResult> {
  const s = await resumeSession(ctx, name);
  const caller = ownCaller(ctx, name, options.caller);
  const op = await openOperation(ctx, {
    session: { name, dir: s.dir },
    lease: { kind: 'exclusive', purpose: 'checkpoint', tolerate: caller.tolerate },
    check: caller.check,
    objects: `checkpoint ${name}`,
    // Not synced: the intent only lets doctor report a checkpoint that died; the objects such a
    // checkpoint leaves are immutable and gc collects what nothing reaches. The record that
    // commits the checkpoint (writeSession) is synced.
    intent: { op: 'checkpoint', session: name, sync: false },
  });
  try {
    crashPoint('checkpoint:after-intent');
    return await recordCheckpoint(ctx, s, name, options);
  } finally {
    // A checkpoint changes nothing but immutable objects and one atomic record write: done or
    // failed, its intent goes.
    await op.finish();
  }
}

/** E_SESSION_BUSY while a restore of the session that was killed is not finished: the root may be half restored. */
export async function assertNoUnfinishedRestore(ctx: StoreContext, name: string): Promise<void> {
  const left = (await ctx.journal.list()).find((i) => i.op === 'restore' && i.session === name);
  if (left)
    throw new PdbError('E_SESSION_BUSY', `session "${name}" has an unfinished restore (intent ${left.id}): its root may be half restored`, {
      hint: left.live ? 'Wait for it to finish.' : "pdb-env gc finishes it (the root becomes the restore's target); then try again.",
    });
}

/** E_SESSION_BUSY naming what of the session runs besides this process and its ancestors. */
export async function assertOnlyAncestors(ctx: StoreContext, name: string, ancestors: ReadonlySet<number>): Promise<void> {
  const { trackedProcesses, describe } = await import('../runtime/processes.js');
  const others = (await trackedProcesses(ctx.store, name))
    .map((t) => ({ ...t, procs: t.procs.filter((p) => !ancestors.has(p.pid) && p.pid !== process.pid) }))
    .filter((t) => t.procs.length > 0);
  if (others.length)
    throw new PdbError(
      'E_SESSION_BUSY',
      `session "${name}" is busy: still running besides this shell: ${describe(others)}; checkpoint was refused`,
      {
        hint: 'Wait for them to finish (or end them), then checkpoint again.',
      },
    );
}

/** Paths added, modified and deleted since the checkpoint before (or the base); null when that Snapshot is gone. */
function countsSincePrevious(
  ctx: StoreContext,
  s: OpenSession,
  last: { snapshot: Digest; changeset: Digest } | null,
  { scan, index }: SessionScan,
  sinceBase: Change[] | null,
) {
  const prev = last?.snapshot ?? s.rec.base;
  if (index && index.header.snapshot === prev && scan.changedEntries) {
    const inIndex = (path: string): Entry | null => {
      const i = index.position(path);
      return i === undefined ? null : index.entry(i);
    };
    const changes: Change[] = [];
    for (const [path, after] of scan.changedEntries) {
      const c = changeOf(path, inIndex(path), after);
      if (c) changes.push(c);
    }
    return changeCounts(changes);
  }
  // The index is not the previous checkpoint's (a restore recorded its target after it): the two
  // Changesets from the base give the difference, O(changes), as restore finds it.
  if (sinceBase) {
    if (prev === s.rec.base) return changeCounts(sinceBase);
    try {
      const cs = ctx.store.getDocument<Changeset>(last!.changeset, 'Changeset');
      if (cs.base === s.rec.base && cs.result === prev) return changeCounts(diffThroughBase(cs.changes, sinceBase));
    } catch (err) {
      if (!isPdbError(err, 'E_OBJECT_MISSING') && !isPdbError(err, 'E_OBJECT_CORRUPT')) throw err;
    }
  }
  if (!ctx.store.has(prev)) return { added: null, modified: null, deleted: null };
  return changeCounts(diffEntries(ctx.store.getDocument<Snapshot>(prev, 'Snapshot').entries, scan.entries));
}

/**
 * Scan and record a checkpoint of a session whose operation handle the caller holds (checkpoint's
 * own, or restore's: its safety checkpoint and the one of the tree it restored).
 */
export async function recordCheckpoint(ctx: StoreContext, s: OpenSession, name: string, options: RecordOptions): Promise<CheckpointResult> {
  const scanned = await scanSession(ctx, s, true, options);
  const { scan, index } = scanned;
  const h = index?.header;
  // Nothing changed since the last checkpoint: its Snapshot and Changeset are this one's.
  const again =
    h &&
    h.snapshot !== s.rec.base &&
    h.changes !== undefined &&
    scan.changedPaths!.length === 0 &&
    ctx.store.has(h.snapshot!) &&
    ctx.store.has(h.changeset!);
  let snapshot: Digest;
  let changeset: Digest;
  let changes: number;
  let list: Change[] | null = null;
  if (again) [snapshot, changeset, changes] = [h.snapshot!, h.changeset!, h.changes!];
  else {
    // The result's canonical bytes straight from the scanned tree's columns (no entry objects).
    // Each shares most chunks with the one recorded last (model/store/chunks.ts).
    snapshot = await scan.installSnapshot(ctx.store, s.rec.base, h?.snapshot ?? s.rec.base);
    list = changesSinceBase(ctx, s, scanned);
    const cs = createChangeset(s.rec.base, snapshot, list);
    changeset = await ctx.store.putDocument(cs, h?.changeset ?? null);
    // The next checkpoint starts from this one's changes (kept frozen: model/store/kept-documents.ts).
    keepDocument(changeset, cs);
    changes = list.length;
  }
  // --verify trusts nothing in the store either: the two documents read back whole (each chunk
  // they share with the ones before is read and hashed), or the checkpoint refuses, typed
  // (E_OBJECT_CORRUPT, E_OBJECT_MISSING), before its record or log is written. A plain checkpoint
  // trusts a chunk already stored (model/store/chunks.ts installChunked says why).
  if (options.verify) for (const d of [snapshot, changeset]) ctx.store.getBytes(d);
  crashPoint('checkpoint:after-objects');
  const rec = await readSession(ctx.store, name);
  const counts = countsSincePrevious(ctx, s, rec.lastCheckpoint ?? null, scanned, list);
  rec.lastCheckpoint = { snapshot, changeset, at: new Date().toISOString() };
  const label = options.label ?? null;
  const number = await appendCheckpointLog(ctx.store, name, {
    ...rec.lastCheckpoint,
    ...(label === null ? {} : { label }),
    ...(options.turn ?? {}),
    ...Object.fromEntries(Object.entries(counts).filter(([, v]) => v !== null)),
    ...(options.restoredFrom === undefined ? {} : { restoredFrom: options.restoredFrom }),
  });
  await writeSession(ctx.store, rec);
  crashPoint('checkpoint:after-record');
  const written = await writeSessionIndex(ctx, s, scanned, { snapshot, changeset, changes });
  if (watchable(s)) {
    const key = written
      ? keyOf({ snapshot, changeset, recordedAtMs: scan.raw.startedAtMs }, scan.columns().n)
      : index
        ? keyOf(index.header, index.cols.n)
        : null;
    if (key) watchRecorded(s.dir, key, scan.raw);
  }
  return {
    session: name,
    base: s.rec.base,
    snapshot,
    changeset,
    changes,
    files: scan.files,
    bytes: scan.bytes,
    filesHashed: scan.filesHashed,
    filesTrusted: scan.filesTrusted,
    dirsRead: scan.raw.dirsRead,
    scanner: scan.raw.scanner,
    walked: scanned.walked,
    number,
    label,
    ...counts,
  };
}

/** Record the tree as this checkpoint saw it, unless the session's own index already says exactly that. */
async function writeSessionIndex(
  ctx: StoreContext,
  s: OpenSession,
  scanned: SessionScan,
  cp: { snapshot: Digest; changeset: Digest; changes: number },
) {
  const file = sessionIndexFile(ctx.store, s.rec.name);
  const old = scanned.index;
  // The session's own index, nothing changed, every row as recorded: it already says exactly this.
  const own = old !== null && old.header.snapshot === cp.snapshot && old.header.generation === scanned.generation;
  if (own && scanned.scan.stale === 0 && old.header.extraExcludes?.length === 0) return false;
  const next = scanned.scan.nextIndex({ ...cp, base: s.rec.base, generation: scanned.generation, source: null });
  // Only what some rows of the session's own index hold changed: a delta of it (git's split
  // index, model/scan/index-file.ts) instead of the whole index again.
  const delta = old?.source?.path === file ? indexDeltaPieces(old, next, scanned.scan.restatedRows()) : null;
  if (delta) {
    await writeFileAtomic(ctx.store.paths, deltaFileOf(file), delta, 0o644, { sync: false });
    return true;
  }
  await writeFileAtomic(ctx.store.paths, file, treeIndexPieces(next), 0o644, { sync: false });
  // A delta of the index before applies to nothing now (it names that file's checksum): tidied
  // away, and one that cannot be removed is left, as the checkpoint is recorded already.
  try {
    rmSync(deltaFileOf(file), { force: true });
  } catch {
    // ignored (see above)
  }
  return true;
}

/** Changes since the base, by relative path (read-only; installs nothing, records nothing). */
export async function diffSession(
  ctx: StoreContext,
  name: string,
  options: CheckpointOptions = {},
): Promise<{ session: string; base: Digest; changes: Change[] }> {
  const s = await resumeSession(ctx, name);
  const scanned = await scanSession(ctx, s, false, options);
  return { session: name, base: s.rec.base, changes: changesSinceBase(ctx, s, scanned) };
}
