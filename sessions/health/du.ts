// `pdb-env du`: each session's true disk cost and the store's. A session's backend measures its
// tree (backends' usage(): st_blocks or FIEMAP extents, never an estimate) and says what of the
// session directory that covered; the rest of the directory (record, tree index, private temp
// dir) is the session's own too, by st_blocks. The store's objects and materialized bases are
// counted by st_blocks, and what gc would free is gc's own dry-run sweep.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { allocatedBytes, measureBlocks } from '../../backends/shared/disk-usage.js';
import type { SessionUsage, UsageMemo, UsageMethod } from '../../backends/types.js';
import { isDigest, type Digest } from '../../model/canonical-json.js';
import { PdbError, osErrorCode, toPdbError, type PdbErrorCode } from '../../model/errors.js';
import { sessionBackend } from '../lifecycle/backend-of.js';
import { sweep } from './sweep.js';
import {
  backendContext,
  listSessions,
  sessionDir,
  sessionRoot,
  type SessionInfo,
  type SessionRecord,
  type StoreContext,
} from '../records/session-record.js';
import { writeUsageCache } from './usage-cache.js';
import { historyUsage, type HistoryUsage } from '../history/keep.js';

/** One session's disk cost. The figures are null when it could not be measured (`reason` says why). */
export interface SessionDiskUsage {
  name: string;
  backend: string | null;
  /** ready, creating, discarding or damaged. */
  state: string;
  /** Bytes only this session holds: what discarding it frees. Physical (allocated blocks, extents), not apparent sizes. */
  exclusiveBytes: number | null;
  /** Bytes it holds with its base or other sessions (shared extents counted once; an overlay's whole lower base). */
  sharedBytes: number | null;
  /** Part of exclusiveBytes: pdb-env's files for it beside the root (record, tree index) and its private temp dir. */
  adminBytes: number | null;
  /** btrfs small-file data inline in metadata that FIEMAP cannot call shared or not: in neither figure. */
  inlineBytes: number | null;
  /** Regular files measured. */
  files: number | null;
  method: UsageMethod | null;
  measured: boolean;
  /** Why it could not be measured, or null. */
  reason: PdbErrorCode | null;
  /** What was measured and how, or why not, in one sentence. */
  detail: string;
  measuredAt: string;
  /** Its checkpoint history (sessions/history/keep.ts): checkpoints, how many gc keeps, the objects only they hold; null when not measured. */
  history?: HistoryUsage | null;
}

/** The materialized bases of one Snapshot. */
export interface BaseDiskUsage {
  digest: Digest;
  bytes: number;
  /** One tree per backend family: tree (reflink, overlay, agentfs), btrfs-subvolume, hardlink-farm. */
  families: Array<{ family: string; bytes: number }>;
  /** Sessions made from this Snapshot (whichever backend). */
  sessions: string[];
}

export interface StoreDiskUsage {
  root: string;
  objects: number;
  objectBytes: number;
  bases: BaseDiskUsage[];
  baseBytes: number;
  /** Everything else the store holds outside sessions: journal, temp files, source indexes, quarantine, environments. */
  otherBytes: number;
  /** What `pdb-env gc` would free now: its dry-run sweep of unreachable objects and bases. */
  gc: { freeBytes: number; objects: number; bases: number; skipped: string | null };
}

export interface DuResult {
  sessions: SessionDiskUsage[];
  store: StoreDiskUsage;
}

function unmeasured(s: SessionInfo, reason: PdbErrorCode, detail: string, at: string): SessionDiskUsage {
  const figures = { exclusiveBytes: null, sharedBytes: null, adminBytes: null, inlineBytes: null, files: null, method: null };
  return { name: s.name, backend: s.backend, state: s.state, ...figures, measured: false, reason, detail, measuredAt: at };
}

/** What the session's backend measures of it, or why it cannot. */
async function backendUsage(ctx: StoreContext, s: SessionRecord, memo: UsageMemo): Promise<SessionUsage> {
  try {
    const backend = await sessionBackend(s);
    if (!backend.usage)
      return {
        measured: false,
        reason: 'E_USAGE_UNMEASURABLE',
        detail: `the ${backend.name} backend does not measure its sessions (no usage())`,
      };
    const bctx = backendContext(ctx.store, s.sourceDir ?? undefined);
    return await backend.usage(bctx, sessionRoot(ctx.store, s.name), sessionDir(ctx.store, s.name), s.backendState, memo);
  } catch (err) {
    const e = toPdbError(err, 'E_IO');
    return { measured: false, reason: e.code, detail: e.message };
  }
}

async function measureSession(ctx: StoreContext, s: SessionInfo, memo: UsageMemo): Promise<SessionDiskUsage> {
  const at = new Date().toISOString();
  if (s.state === 'damaged') return unmeasured(s, 'E_RECORD_CORRUPT', s.damage, at);
  if (s.state !== 'ready') return unmeasured(s, 'E_SESSION_BROKEN', `the session is ${s.state}, not ready`, at);
  const u = await backendUsage(ctx, s, memo);
  if (!u.measured) return unmeasured(s, u.reason, u.detail, at);
  const own = measureBlocks(sessionDir(ctx.store, s.name), new Set(u.covered));
  const adminBytes = own.exclusiveBytes + own.sharedBytes;
  const out: SessionDiskUsage = {
    name: s.name,
    backend: s.backend,
    state: s.state,
    exclusiveBytes: u.exclusiveBytes + adminBytes,
    sharedBytes: u.sharedBytes,
    adminBytes,
    inlineBytes: u.inlineBytes,
    files: u.files,
    method: u.method,
    measured: true,
    reason: null,
    detail: u.detail,
    measuredAt: at,
    history: historyUsage(ctx, s),
  };
  await writeUsageCache(ctx.store, s.name, { exclusiveBytes: out.exclusiveBytes!, sharedBytes: u.sharedBytes, measuredAt: at });
  return out;
}

function readdirOrNone(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') return []; // nothing materialized yet
    throw toPdbError(err, 'E_IO', { action: 'listing the materialized bases', path: dir });
  }
}

/** Materialized bases by Snapshot and family, with the sessions made from each Snapshot. */
function baseUsage(ctx: StoreContext, sessions: SessionInfo[]): BaseDiskUsage[] {
  const out: BaseDiskUsage[] = [];
  for (const hex of readdirOrNone(ctx.store.paths.bases)) {
    const digest = `sha256:${hex}`;
    if (!isDigest(digest)) continue;
    const dir = join(ctx.store.paths.bases, hex);
    const families = readdirSync(dir)
      .sort()
      .map((family) => ({ family, bytes: allocatedBytes(join(dir, family)) }));
    const users = sessions.filter((s) => s.base === digest).map((s) => s.name);
    out.push({ digest, bytes: allocatedBytes(dir), families, sessions: users });
  }
  return out;
}

async function storeUsage(ctx: StoreContext, sessions: SessionInfo[]): Promise<StoreDiskUsage> {
  const { paths } = ctx.store;
  const whole = measureBlocks(paths.objects);
  // Records of documents stored as chunks count with the objects (their chunks are objects already).
  // So do deflated chunks (model/store/deflated.ts).
  const none = { files: 0, exclusiveBytes: 0, sharedBytes: 0 };
  const parts = [whole, ...[paths.chunked, paths.deflated].map((d) => (existsSync(d) ? measureBlocks(d) : none))];
  const objects = {
    files: parts.reduce((n, p) => n + p.files, 0),
    exclusiveBytes: parts.reduce((n, p) => n + p.exclusiveBytes, 0),
    sharedBytes: parts.reduce((n, p) => n + p.sharedBytes, 0),
  };
  const bases = baseUsage(ctx, sessions);
  const hexDirs = new Set(bases.map((b) => b.digest.slice('sha256:'.length)));
  const other = measureBlocks(paths.root, new Set(['objects', 'bases', 'sessions']));
  const swept = await sweep(ctx, true);
  return {
    root: paths.root,
    objects: objects.files,
    objectBytes: objects.exclusiveBytes + objects.sharedBytes,
    bases,
    baseBytes: bases.reduce((n, b) => n + b.bytes, 0),
    // The sessions directory itself and the bases' markers and indexes belong to no one session or base.
    otherBytes: other.exclusiveBytes + other.sharedBytes + allocatedBytes(paths.bases, hexDirs),
    gc: { freeBytes: swept.objectBytes + swept.baseBytes, objects: swept.objects, bases: swept.bases, skipped: swept.skipped },
  };
}

/** Every session's disk cost (or only `name`'s) and the store's. */
export async function du(ctx: StoreContext, name?: string): Promise<DuResult> {
  const all = await listSessions(ctx.store, process.cwd());
  const chosen = name === undefined ? all : all.filter((s) => s.name === name);
  if (name !== undefined && chosen.length === 0)
    throw new PdbError('E_SESSION_NOT_FOUND', `no session named "${name}" in this store`, {
      hint: 'pdb-env list shows the sessions; pdb-env du without a name measures them all.',
    });
  const memo: UsageMemo = new Map();
  const sessions: SessionDiskUsage[] = [];
  for (const s of chosen) sessions.push(await measureSession(ctx, s, memo));
  return { sessions, store: await storeUsage(ctx, all) };
}
