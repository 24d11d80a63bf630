import { existsSync, lstatSync, readdirSync } from 'node:fs';
import { lstat, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { mountFs, unmountFs } from '../model/os/mounts.js';
import { tempPath } from '../model/os/temp-name.js';
import { PdbError, isPdbError } from '../model/errors.js';
import type { BaseMarker } from './shared/base-tree.js';
import { fsTypeName, fsTypeOf, mountedFsType } from './shared/fs-util.js';
import { baseTree, diskUsage, removeTree } from './shared/lazy.js';
import type { ChangedPaths, LeftOut } from '../model/scan/changed-paths.js';
import type { Backend, BackendContext, BackendState, CreatedSession, ProbeResult } from './types.js';

/**
 * `redirect_dir=on`: without it the kernel answers rename(2) of a directory that exists in the
 * lower layer with EXDEV (measured on 6.18), which `mv` hides by copying but Node's fs.rename
 * and most tools do not.
 */
const OVERLAY_OPTIONS = 'redirect_dir=on';

/**
 * `metacopy=on` besides, where the kernel has it: a chmod or chown of a base file copies up its
 * metadata only (the data stays the lower file's), so it costs no copy of the bytes. A session
 * records the options it was mounted with and is mounted with them again (a metacopy upper dir
 * mounted without it would not read its metacopy files).
 */
const METACOPY_OPTIONS = `${OVERLAY_OPTIONS},metacopy=on`;

/** overlayfs splits its options on ',' and lowerdir on ':'; such paths cannot be passed safely. */
function assertMountablePath(path: string): void {
  if (/[,:\\]/.test(path)) {
    throw new PdbError('E_MOUNT_FAILED', `overlay cannot mount a path containing ",", ":" or "\\": ${path}`, {
      hint: 'Move the store to a path without those characters (--store / PDB_ENV_STORE).',
    });
  }
}

async function mountOverlay(lower: string, upper: string, work: string, target: string, options = OVERLAY_OPTIONS): Promise<void> {
  for (const p of [lower, upper, work, target]) assertMountablePath(p);
  const data = `lowerdir=${lower},upperdir=${upper},workdir=${work},${options}`;
  await mountFs('overlay', target, 'overlay', data, 'E_MOUNT_FAILED', 'mounting the overlay');
}

/** A new session's mount: with metacopy where the kernel takes it, else without; returns the options used. */
async function mountNew(lower: string, upper: string, work: string, target: string): Promise<string> {
  try {
    await mountOverlay(lower, upper, work, target, METACOPY_OPTIONS);
    return METACOPY_OPTIONS;
  } catch (err) {
    if (!isPdbError(err, 'E_MOUNT_FAILED')) throw err;
    await mountOverlay(lower, upper, work, target, OVERLAY_OPTIONS);
    return OVERLAY_OPTIONS;
  }
}

/** The options a session was mounted with (sessions made before metacopy recorded redirect_dir=on alone). */
const optionsOf = (state: BackendState): string => (state.options === METACOPY_OPTIONS ? METACOPY_OPTIONS : OVERLAY_OPTIONS);

async function unmountIfMounted(target: string): Promise<void> {
  if (mountedFsType(target) === 'overlay') await unmountFs(target, 'E_MOUNT_FAILED', 'unmounting the overlay');
}

function sessionPaths(ctx: BackendContext, sessionDir: string, state: BackendState): { lower: string; upper: string; work: string } {
  if (typeof state.lower !== 'string')
    throw new PdbError('E_SESSION_BROKEN', 'the overlay session has no recorded lower directory', {
      hint: 'Discard the session and create it again.',
    });
  return { lower: join(ctx.store.paths.root, state.lower), upper: join(sessionDir, 'upper'), work: join(sessionDir, 'work') };
}

/**
 * Mount a session over the marked base `lower`. A file not copied up keeps the lower file's inode,
 * size, times and mode (overlayfs reports the real inode when all layers share one filesystem), so
 * the base's tree index describes the new root.
 */
async function mountSession(
  ctx: BackendContext,
  lower: string,
  marker: BaseMarker,
  root: string,
  sessionDir: string,
): Promise<CreatedSession> {
  const state: BackendState = { lower: relative(ctx.store.paths.root, lower), options: OVERLAY_OPTIONS };
  const { upper, work } = sessionPaths(ctx, sessionDir, state);
  for (const d of [upper, work, root]) await mkdir(d);
  state.options = await mountNew(lower, upper, work, root);
  return {
    state,
    files: marker.files,
    cloneObserved: mountedFsType(root) === 'overlay',
    clone: { files: marker.files, bytes: marker.bytes },
    index: marker.index,
  };
}

/**
 * What can differ from the base in the merged root: every entry of the upper directory (what was
 * written, copied up, a whiteout, an opaque directory, a metadata-only copy-up), read by a walk of
 * the upper dir alone, so its cost follows the change since the base (not since the last
 * checkpoint: the upper dir keeps everything). Node cannot read the overlay's xattrs, so a
 * renamed directory (redirect_dir) is told by its inode: on one filesystem overlayfs reports a
 * merged directory's lower origin's inode, and one that is neither the upper directory's nor the
 * lower's at the same path came from elsewhere (its subtree is walked whole). One whose inode is
 * the lower's at the same path is a copy-up of that directory (merged: overlayfs gives a directory
 * its origin's inode only when it has one, and an opaque directory is always made new, without an
 * origin, so it reports the upper one), and one whose inode is the upper directory's is new or
 * opaque. Layers on two filesystems report other inodes: then nothing is said and the walk is whole.
 */
async function upperChanges(
  ctx: BackendContext,
  root: string,
  sessionDir: string,
  state: BackendState,
  skip: LeftOut,
): Promise<ChangedPaths> {
  const { lower, upper } = sessionPaths(ctx, sessionDir, state);
  const [lo, up] = await Promise.all([lstat(lower, { bigint: true }), lstat(upper, { bigint: true })]);
  if (lo.dev !== up.dev)
    return {
      paths: null,
      subtrees: null,
      reason: 'the upper and lower dirs are on different filesystems: a renamed directory cannot be told by its inode',
    };
  const paths: string[] = [];
  const subtrees: string[] = [];
  const merged: string[] = [];
  // Synchronous: a walk of the upper dir is many small calls, each of which through libuv's pool
  // cost a round trip (890 upper entries took 90 ms after 60 turns, and the checkpoint with them).
  const inoOf = (path: string): bigint | null => {
    try {
      const st = lstatSync(path, { bigint: true });
      return st.isDirectory() ? st.ino : null;
    } catch {
      return null; // gone, or a file where a parent was (ENOTDIR)
    }
  };
  const walk = (rel: string): void => {
    const here = rel === '' ? upper : join(upper, rel);
    for (const d of readdirSync(here, { withFileTypes: true })) {
      const path = rel === '' ? d.name : `${rel}/${d.name}`;
      paths.push(path);
      if (!d.isDirectory() || skip.names.has(d.name) || skip.paths.has(path)) continue;
      const m = inoOf(join(root, path));
      const l = m === null ? null : inoOf(join(lower, path));
      if (m !== null && m === l) merged.push(path);
      else if (m === null || m !== inoOf(join(upper, path))) {
        subtrees.push(path);
        continue;
      }
      walk(path);
    }
  };
  walk('');
  return { paths, subtrees, merged, reason: null };
}

/** The base tree is the lower directory; each session has its own upper and work dirs, mounted at its root. */
export const overlayBackend: Backend = {
  name: 'overlay',
  experimental: false,
  testOnly: false,
  summary: 'overlayfs mount: shared lower base, private upper per session; O(1) create',
  capabilities: { constantTimeCreate: true, sharesExtents: true, needsRemount: true, carriesFullSnapshot: true, securityIsolation: false },
  async probe(ctx): Promise<ProbeResult> {
    if (process.platform !== 'linux')
      return {
        available: false,
        reason: 'E_UNSUPPORTED_OS',
        detail: `overlayfs needs Linux (this is ${process.platform})`,
        evidence: { platform: process.platform },
      };
    const upperFs = fsTypeName(await fsTypeOf(ctx.probeDir));
    if (typeof process.getuid === 'function' && process.getuid() !== 0) {
      return { available: false, reason: 'E_NOT_ROOT', detail: 'mounting an overlay needs root', evidence: { upperFs, root: false } };
    }
    const dir = tempPath(ctx.probeDir, 'probe-overlay');
    await mkdir(dir);
    const [lower, upper, work, merged] = ['lower', 'upper', 'work', 'merged'].map((n) => join(dir, n)) as [string, string, string, string];
    try {
      for (const d of [join(lower, 'd'), upper, work, merged]) await mkdir(d, { recursive: true });
      await writeFile(join(lower, 'd', 'f'), 'lower');
      await mountOverlay(lower, upper, work, merged);
      try {
        const seen = await readFile(join(merged, 'd', 'f'), 'utf8');
        await writeFile(join(merged, 'd', 'f'), 'upper');
        const lowerAfter = await readFile(join(lower, 'd', 'f'), 'utf8');
        if (seen !== 'lower' || lowerAfter !== 'lower') {
          return {
            available: false,
            reason: 'E_MOUNT_FAILED',
            detail: 'the trial overlay did not keep writes out of the lower directory',
            evidence: { upperFs, trialMount: true, lowerIntact: false },
          };
        }
      } finally {
        await unmountIfMounted(merged);
      }
      return {
        available: true,
        reason: null,
        detail: `trial overlay mounted (upper on ${upperFs}), write stayed out of the lower dir, unmounted`,
        evidence: { upperFs, trialMount: true, lowerIntact: true, options: OVERLAY_OPTIONS },
      };
    } catch (err) {
      const code = isPdbError(err) ? err.code : 'E_MOUNT_FAILED';
      return {
        available: false,
        reason: code,
        detail: `trial overlay mount failed: ${(err as Error).message}`,
        evidence: { upperFs, trialMount: false },
      };
    } finally {
      await unmountIfMounted(merged).catch(() => {});
      await removeTree(dir).catch(() => {});
    }
  },
  async materializeBase(ctx, snapshot, digest, hooks) {
    await (await baseTree()).materializeTreeBase(ctx, snapshot, digest, 'tree', hooks);
  },
  async createSession(ctx, snapshot, digest, root, sessionDir, hooks) {
    const { materializeTreeBase, markedBase } = await baseTree();
    await materializeTreeBase(ctx, snapshot, digest, 'tree', hooks);
    const base = markedBase(ctx, digest, 'tree');
    if (!base) throw new PdbError('E_INTERNAL', `the overlay base of ${digest} has no marker after it was made`);
    return mountSession(ctx, base.dir, base.marker, root, sessionDir);
  },
  async createFromBase(ctx, digest, root, sessionDir) {
    const base = (await baseTree()).markedBase(ctx, digest, 'tree');
    return base ? mountSession(ctx, base.dir, base.marker, root, sessionDir) : null;
  },
  async resume(ctx, root, sessionDir, state) {
    if (mountedFsType(root) === 'overlay') return;
    // After a reboot the mount is gone but upper and work survive: mount them again.
    const { lower, upper, work } = sessionPaths(ctx, sessionDir, state);
    if (!existsSync(lower))
      throw new PdbError('E_SESSION_BROKEN', 'the overlay base (lower directory) is missing from the store', {
        hint: 'Discard the session and create it again.',
      });
    await mkdir(root, { recursive: true });
    await mountOverlay(lower, upper, work, root, optionsOf(state));
  },
  async usage(ctx, _root, sessionDir, state, memo) {
    const { lower, upper, work } = sessionPaths(ctx, sessionDir, state);
    // On btrfs and XFS a copy-up is a clone of the lower file: only FIEMAP sees what it shares.
    const { measureShared, measureTree, measuredUsage, methodFor } = await diskUsage();
    const method = await methodFor(upper);
    const [up, wk] = [await measureTree(upper, method), await measureTree(work, method)];
    const low = await measureShared(memo, lower, 'st_blocks');
    // The upper's shared extents are the lower's own (copy-up clones), counted once, with the lower.
    return measuredUsage(
      {
        exclusiveBytes: up.exclusiveBytes + wk.exclusiveBytes + up.inlineBytes + wk.inlineBytes,
        sharedBytes: low.exclusiveBytes + low.sharedBytes,
        inlineBytes: 0,
        files: up.files,
        method,
      },
      ['root', 'upper', 'work'],
      `the upper and work dirs by ${method === 'fiemap' ? 'FIEMAP extents (a copy-up clones here)' : 'st_blocks'} are its own; the whole lower base, which the mount holds, is shared`,
    );
  },
  async changedPaths(ctx, root, sessionDir, state, skip) {
    if (mountedFsType(root) !== 'overlay') return { paths: null, subtrees: null, reason: 'the session root is not an overlay mount' };
    return upperChanges(ctx, root, sessionDir, state, skip);
  },
  async release(_ctx, root) {
    await unmountIfMounted(root);
  },
};
