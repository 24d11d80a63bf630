// gc's mark and sweep: objects and materialized bases that no root reaches (sessions/health/roots.ts)
// leave the store. It runs under the exclusive object lease (sessions/locks/object-lease.ts), so no
// create, checkpoint or import is between installing an object and recording it; it bumps the
// object generation before anything leaves, so tree indexes check their digests again; objects are
// moved aside under the lease and deleted after it is released. A base is removed marker first, so
// nothing ever finds a marker without its base.
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readdir, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { baseDir, baseIndexFile, deleteSubvolume, verifiedMark, type BaseFamily } from '../../backends/shared/base-tree.js';
import { allocatedBytes } from '../../backends/shared/disk-usage.js';
import { isDigest, type Digest } from '../../model/canonical-json.js';
import { osErrorCode, toPdbError } from '../../model/errors.js';
import { tempName } from '../../model/store/object-store.js';
import { removeTree } from '../../model/os/remove-tree.js';
import { checkReachable } from './integrity.js';
import { SHORT_LOCK_WAIT_MS } from '../locks/lock.js';
import { trySweepLease } from '../locks/object-lease.js';
import type { StoreContext } from '../records/session-record.js';
import { collectRoots } from './roots.js';

export interface SweepResult {
  /** Unreachable objects removed (or, dry run, that would be), and their bytes on disk. */
  objects: number;
  objectBytes: number;
  /** Materialized bases removed, and their bytes on disk. */
  bases: number;
  baseBytes: number;
  /** Why nothing was swept, or null. */
  skipped: string | null;
}

const FAMILIES: readonly BaseFamily[] = ['tree', 'btrfs-subvolume', 'hardlink-farm'];

/** Mark from the roots and sweep what nothing reaches. With dryRun, only count. */
export async function sweep(ctx: StoreContext, dryRun: boolean): Promise<SweepResult> {
  const result: SweepResult = { objects: 0, objectBytes: 0, bases: 0, baseBytes: 0, skipped: null };
  const taken = await trySweepLease(ctx.store, SHORT_LOCK_WAIT_MS);
  if (!taken.lease) {
    result.skipped = `process ${taken.holder?.pid ?? '?'} is adding objects (${taken.holder?.purpose ?? 'a create or checkpoint'}); run gc again when it is done`;
    return result;
  }
  let trash: string | null = null;
  try {
    const roots = await collectRoots(ctx);
    if (roots.incomplete.length > 0) {
      result.skipped = `${roots.incomplete.join('; ')}: what it refers to is unknown, so nothing is swept (recover or discard it first)`;
      return result;
    }
    const { reached } = await checkReachable(ctx, roots.roots);
    const keepBases = new Set(roots.roots.filter((r) => r.keepsBases).map((r) => r.digest));
    const doomed = unreachedObjects(ctx, reached);
    result.objects = doomed.length;
    for (const path of doomed) result.objectBytes += allocatedBytes(path);
    const bases = unkeptBases(ctx, keepBases);
    for (const b of bases) result.baseBytes += allocatedBytes(join(ctx.store.paths.bases, b.hex));
    result.bases = bases.reduce((n, b) => n + b.families.length, 0);
    if (dryRun) return result;
    // From here on, no tree index may vouch for an object without checking it.
    ctx.store.bumpGeneration();
    trash = tempName(ctx.store.paths, 'gc-trash');
    await mkdir(trash);
    for (const [i, path] of doomed.entries()) await moveAside(path, join(trash, String(i)));
    for (const b of bases) await removeBase(ctx, b.hex, b.families);
    for (const f of roots.orphanIndexes) await unlink(f).catch(() => {}); // a cache of a source that is gone
    for (const f of strayBaseFiles(ctx)) await unlink(f).catch(() => {}); // nothing to vouch for any more
  } finally {
    await taken.lease.release();
  }
  if (trash) await removeTree(trash); // outside the lease: a create need not wait for the deletes
  return result;
}

/** The files of objects in the store that no root reaches: whole objects, deflated chunks, and records of documents stored as chunks. */
function unreachedObjects(ctx: StoreContext, reached: ReadonlySet<Digest>): string[] {
  const out: string[] = [];
  for (const dir of [ctx.store.paths.objects, ctx.store.paths.deflated, ctx.store.paths.chunked]) {
    const prefixes = existsSync(dir) ? readdirSync(dir).sort() : [];
    for (const prefix of prefixes) {
      if (!/^[0-9a-f]{2}$/.test(prefix)) continue;
      for (const rest of readdirSync(join(dir, prefix)).sort()) {
        const d = `sha256:${prefix}${rest}`;
        if (isDigest(d) && !reached.has(d)) out.push(join(dir, prefix, rest));
      }
    }
  }
  return out;
}

/** Materialized bases (by digest hex, with their families) whose Snapshot is no longer a kept root. */
function unkeptBases(ctx: StoreContext, keep: ReadonlySet<Digest>): Array<{ hex: string; families: BaseFamily[] }> {
  const out: Array<{ hex: string; families: BaseFamily[] }> = [];
  for (const hex of readdirSync(ctx.store.paths.bases).sort()) {
    if (!/^[0-9a-f]{64}$/.test(hex) || keep.has(`sha256:${hex}`)) continue;
    const names = readdirSync(join(ctx.store.paths.bases, hex));
    out.push({ hex, families: FAMILIES.filter((f) => names.includes(f)) });
  }
  return out;
}

async function moveAside(path: string, to: string): Promise<void> {
  await rename(path, to).catch((err: unknown) => {
    if (osErrorCode(err) !== 'ENOENT') throw toPdbError(err, 'E_IO', { action: 'moving an unreachable object aside', path });
  });
}

/** Remove a base: its marker first (a create then builds it anew rather than trust a half-removed one), then its index and tree. */
async function removeBase(ctx: StoreContext, hex: string, families: BaseFamily[]): Promise<void> {
  const bctx = { store: ctx.store, probeDir: ctx.store.paths.tmp };
  const digest = `sha256:${hex}` as Digest;
  for (const family of families) {
    await unlink(verifiedMark(bctx, digest, family)).catch(() => {}); // absent is the goal
    await unlink(baseIndexFile(bctx, digest, family)).catch(() => {});
    const dir = baseDir(bctx, digest, family);
    // A base subvolume is read-only and cannot be moved; it is deleted where it is.
    if (family === 'btrfs-subvolume') await deleteSubvolume(dir);
    else await removeTree(dir);
  }
  const left = await readdir(join(ctx.store.paths.bases, hex)).catch(() => [] as string[]);
  if (left.length === 0) await removeTree(join(ctx.store.paths.bases, hex));
}

/** Markers and base indexes whose base is gone (a base removed by hand, or a crash mid-removal). */
export function strayBaseFiles(ctx: StoreContext): string[] {
  const out: string[] = [];
  for (const dir of ['.verified', '.index']) {
    const names = (() => {
      try {
        return readdirSync(join(ctx.store.paths.bases, dir));
      } catch {
        return [] as string[];
      }
    })();
    for (const name of names) {
      const [hex, family] = name.split('.');
      if (hex && family && !existsSync(join(ctx.store.paths.bases, hex, family))) out.push(join(ctx.store.paths.bases, dir, name));
    }
  }
  return out;
}
