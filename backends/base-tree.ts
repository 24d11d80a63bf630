// Shared by the backends that start from a materialized base directory in the store:
// `<store>/bases/<digest-hex>/<family>/`, made once, atomically (built under a temp name in the
// store, then renamed into place), and never written again.
import { existsSync } from 'node:fs';
import { mkdir, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import type { Digest } from '../model/canonical-json.js';
import { PdbError, osErrorCode } from '../model/errors.js';
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

/**
 * Make the base once. `build(tmp)` fills a fresh temp path on the store's filesystem; it is then
 * renamed into place. A concurrent creator that wins the rename is fine: its base is identical.
 * `discard(tmp)` removes a losing or failed temp build (a subvolume needs more than rm).
 */
export async function materializeBaseOnce(
  ctx: BackendContext,
  digest: Digest,
  family: BaseFamily,
  build: (tmp: string) => Promise<void>,
  discard: (tmp: string) => Promise<void>,
  afterRename?: (dir: string) => Promise<void>,
): Promise<string> {
  const dir = baseDir(ctx, digest, family);
  if (existsSync(dir)) return dir;
  await mkdir(dirname(dir), { recursive: true });
  const tmp = tempName(ctx.store.paths, `base-${family}`);
  try {
    await build(tmp);
    try {
      await rename(tmp, dir);
    } catch (err) {
      const code = osErrorCode(err);
      if ((code === 'ENOTEMPTY' || code === 'EEXIST') && existsSync(dir)) {
        await discard(tmp);
        return dir;
      }
      throw err;
    }
  } catch (err) {
    await discard(tmp).catch(() => {});
    throw err;
  }
  await afterRename?.(dir);
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
