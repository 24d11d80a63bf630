// Shared by the backends that start from a materialized base directory in the store:
// `<store>/bases/<digest-hex>/<family>/`, made once, atomically (built under a temp name in the
// store, then renamed into place), and never written again.
//
// A base is verified when it is built: it is filled by materializeTree, which hashes every byte it
// copies against the Snapshot. Once in place it is marked (`<store>/bases/.verified/<hex>.<family>`).
// Sessions cloned or snapshotted from a marked base need no second hash: a clone shares the base's
// verified extents, and the base is never written again (btrfs bases are read-only subvolumes). A
// base without a mark (made by an older pdb-env, or a crash between rename and mark) is hashed once
// against the Snapshot before its first use and marked then.
import { existsSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import type { Digest } from '../model/canonical-json.js';
import { PdbError, osErrorCode, toPdbError } from '../model/errors.js';
import { sharedFsPool } from '../model/fs-pool.js';
import { materializeTree } from '../model/materialize.js';
import { tempName } from '../model/object-store.js';
import type { Snapshot } from '../model/snapshot.js';
import { removeTreeForce } from './fs-util.js';
import type { BackendContext } from './types.js';

/** Base families: backends of one family share one materialized base. */
export type BaseFamily = 'tree' | 'btrfs-subvolume' | 'hardlink-farm';

export function baseDir(ctx: BackendContext, digest: Digest, family: BaseFamily): string {
  return join(ctx.store.paths.bases, digest.slice('sha256:'.length), family);
}

function verifiedMark(ctx: BackendContext, digest: Digest, family: BaseFamily): string {
  return join(ctx.store.paths.bases, '.verified', `${digest.slice('sha256:'.length)}.${family}`);
}

async function markVerified(ctx: BackendContext, digest: Digest, family: BaseFamily): Promise<void> {
  const mark = verifiedMark(ctx, digest, family);
  try {
    await mkdir(dirname(mark), { recursive: true });
    await writeFile(mark, '');
  } catch (err) {
    throw toPdbError(err, 'E_IO', { action: 'marking a verified base', path: mark });
  }
}

/** Hash an unmarked base's files against the Snapshot once; E_OBJECT_CORRUPT naming the first file that differs. */
async function verifyBase(ctx: BackendContext, dir: string, snapshot: Snapshot, digest: Digest, family: BaseFamily): Promise<void> {
  const files = snapshot.entries.filter((e) => e.kind === 'file');
  const got = await sharedFsPool().map(
    files.map((f) => join(dir, f.path)),
    (paths) => ({ op: 'hash', paths }),
  );
  const bad = files.find((f, i) => `sha256:${got[i]!.digest}` !== f.digest);
  if (bad)
    throw new PdbError('E_OBJECT_CORRUPT', `the materialized ${family} base of ${digest} holds wrong bytes in ${bad.path}`, {
      path: bad.path,
      hint: `Discard the sessions made from it, remove ${dir}, and create again (or use --backend full-copy).`,
    });
  await markVerified(ctx, digest, family);
}

/**
 * Make the base once. `build(tmp)` fills a fresh temp path on the store's filesystem; it is then
 * renamed into place and marked verified. A concurrent creator that wins the rename is fine: its
 * base is identical. `discard(tmp)` removes a losing or failed temp build (a subvolume needs more
 * than rm). `snapshot` is what an unmarked base found in place is checked against.
 */
export async function materializeBaseOnce(
  ctx: BackendContext,
  snapshot: Snapshot,
  digest: Digest,
  family: BaseFamily,
  build: (tmp: string) => Promise<void>,
  discard: (tmp: string) => Promise<void>,
  afterRename?: (dir: string) => Promise<void>,
): Promise<string> {
  const dir = baseDir(ctx, digest, family);
  if (existsSync(dir)) {
    if (!existsSync(verifiedMark(ctx, digest, family))) await verifyBase(ctx, dir, snapshot, digest, family);
    return dir;
  }
  const tmp = tempName(ctx.store.paths, `base-${family}`);
  try {
    await mkdir(dirname(dir), { recursive: true });
    await build(tmp);
    try {
      await rename(tmp, dir);
    } catch (err) {
      const code = osErrorCode(err);
      if ((code === 'ENOTEMPTY' || code === 'EEXIST') && existsSync(dir)) {
        await discard(tmp);
        return materializeBaseOnce(ctx, snapshot, digest, family, build, discard, afterRename);
      }
      throw err;
    }
  } catch (err) {
    await discard(tmp).catch(() => {}); // rollback: the build's own temp tree; the error below is what matters
    throw toPdbError(err, 'E_IO', { action: `materializing the ${family} base` });
  }
  await afterRename?.(dir);
  await markVerified(ctx, digest, family);
  return dir;
}

/** A plain directory base filled with explicit byte copies from the object store. */
export async function materializeTreeBase(
  ctx: BackendContext,
  snapshot: Snapshot,
  digest: Digest,
  family: BaseFamily = 'tree',
): Promise<string> {
  return materializeBaseOnce(
    ctx,
    snapshot,
    digest,
    family,
    async (tmp) => {
      await materializeTree(ctx.store, snapshot, tmp);
    },
    removeTreeForce,
  );
}

/** Run a tool; a missing binary is E_TOOL_MISSING, a failure the given code with its stderr. */
export async function runTool(
  cmd: string,
  args: string[],
  failCode: 'E_MOUNT_FAILED' | 'E_IO' | 'E_NOT_GIT_REPO' | 'E_NOT_BTRFS' | 'E_TOOL_MISSING',
  what: string,
  options: { cwd?: string } = {},
): Promise<string> {
  const r = await execa(cmd, args, { reject: false, cwd: options.cwd, stdin: 'ignore', env: { LC_ALL: 'C' } });
  if (r.failed) {
    const errno = (r.cause as NodeJS.ErrnoException | undefined)?.code;
    if (errno === 'ENOENT' && r.exitCode === undefined) {
      throw new PdbError('E_TOOL_MISSING', `${cmd} is not installed, so ${what} cannot run`, {
        hint: `Install it (for example apt-get install ${TOOL_PACKAGES[cmd] ?? cmd}).`,
      });
    }
    const stderr = String(r.stderr ?? '')
      .trim()
      .split('\n')
      .slice(-3)
      .join(' ');
    throw new PdbError(failCode, `${what} failed: ${cmd} exited ${r.exitCode ?? r.signal}: ${stderr}`, { cause: r.cause ?? undefined });
  }
  return String(r.stdout ?? '');
}

const TOOL_PACKAGES: Record<string, string> = { btrfs: 'btrfs-progs', filefrag: 'e2fsprogs', mount: 'mount', umount: 'mount', git: 'git' };
