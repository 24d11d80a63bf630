// The staging of an apply: DIR/.pdb/apply-<intent id>/, on DIR's filesystem so that every move
// into place is a link or rename within one device. It holds bytes only, never instructions:
// `files/<i>` the result's entry of change i, copied out of the store and hashed on the way (the
// model's verified copy); `displaced/<i>` the base's entry moved aside, kept until the apply
// commits so a rollback can put it back; `DIR/.pdb/kept/` what could not be put back and is
// not known bytes (a user's edit moved aside just before a crash), kept and reported, never
// deleted. Every staging directory is lstat'ed before use: a link,
// a file or another device in its place is refused, never followed. What recovery finds there is
// checked against the Changeset again, and staged anew from the store when it does not match.
import { mkdir, readlink, rename, rmdir, symlink, unlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { PdbError, isPdbError, osErrorCode } from '../../../model/errors.js';
import { removeTree } from '../../../model/os/remove-tree.js';
import { hashPaths } from '../../../model/scan/scan.js';
import type { ProgressFn } from '../../../model/progress.js';
import type { ObjectStore } from '../../../model/store/object-store.js';
import type { Entry } from '../../../model/snapshot.js';
import { copyObjectsOut, type ObjectCopy } from '../copy-out.js';
import { lstatOr, targetError, type Target } from './target.js';

export const STAGING_ROOT = '.pdb';

export interface Staging {
  /** DIR/.pdb, DIR/.pdb/apply-<id>, and its two halves. */
  root: string;
  dir: string;
  files: string;
  displaced: string;
  /** DIR/.pdb/kept: what an apply moved aside and could not put back (never deleted by pdb-env). */
  kept: string;
}

export function stagingOf(t: Target, intentId: string): Staging {
  const root = join(t.dir, STAGING_ROOT);
  const dir = join(root, `apply-${intentId}`);
  return { root, dir, files: join(dir, 'files'), displaced: join(dir, 'displaced'), kept: join(root, 'kept') };
}

export const stagedFile = (s: Staging, index: number) => join(s.files, String(index));
export const displacedFile = (s: Staging, index: number) => join(s.displaced, String(index));

/**
 * Check each staging directory is a real directory on DIR's device (E_BAD_PATH for a link or a
 * file, E_CROSS_DEVICE for a mount); with `make`, make the missing ones. False when one is missing.
 */
export async function openStaging(t: Target, s: Staging, make: boolean): Promise<boolean> {
  return realDirs(t, [s.root, s.dir, s.files, s.displaced], make);
}

async function realDirs(t: Target, dirs: string[], make: boolean): Promise<boolean> {
  for (const d of dirs) {
    let st = await lstatOr(d);
    if (!st && make) {
      await mkdir(d).catch((err: unknown) => {
        if (osErrorCode(err) !== 'EEXIST') throw targetError(t, err, 'making the staging of the apply', d);
      });
      st = await lstatOr(d);
    }
    if (!st) return false;
    if (!st.isDirectory())
      throw new PdbError(
        'E_BAD_PATH',
        `${d} is ${st.isSymbolicLink() ? 'a symlink' : 'not a directory'}: apply stages only in a directory of its own and never follows a link`,
        {
          path: d,
          hint: `Move ${d} away (pdb-env's staging: nothing else belongs in ${STAGING_ROOT}), then apply again; pdb-env gc then finishes an interrupted apply.`,
        },
      );
    if (st.dev !== t.dev)
      throw new PdbError('E_CROSS_DEVICE', `${d} is on another filesystem than ${t.dir}: staged files could not be renamed into place`, {
        path: d,
        hint: `Unmount or move ${d} away, then apply again (pdb-env gc finishes an interrupted apply).`,
      });
  }
  return true;
}

/** Move `from` into DIR/.pdb/kept under a name of its own (apply-<id>.<change index>[.n]); where it went. */
export async function keepAside(t: Target, s: Staging, from: string, index: number): Promise<string> {
  await realDirs(t, [s.root, s.kept], true);
  for (let n = 0; ; n++) {
    const to = join(s.kept, `${basename(s.dir)}.${index}${n ? `.${n}` : ''}`);
    if (await lstatOr(to)) continue;
    await rename(from, to).catch((err: unknown) => {
      throw targetError(t, err, 'keeping an entry the apply moved aside', from);
    });
    return to;
  }
}

/** Remove the staging (when it is still ours: real directories of DIR), and DIR/.pdb once it is empty. */
export async function removeStaging(t: Target, s: Staging): Promise<void> {
  if (await realDirs(t, [s.root, s.dir], false)) await removeTree(s.dir);
  await rmdir(s.root).catch(() => undefined); // not empty (another apply, a user's file) or gone: left as it is
}

/** Does `file` hold `e` (kind, bytes, exec bit; a symlink's target)? Never follows a link. */
export async function holds(file: string, e: Entry): Promise<boolean> {
  const st = await lstatOr(file);
  if (!st) return false;
  if (e.kind === 'symlink') return st.isSymbolicLink() && (await readlink(file)) === e.target;
  if (e.kind !== 'file' || !st.isFile() || Number(st.size) !== e.size || ((st.mode & 0o111n) !== 0n) !== e.exec) return false;
  return (await hashPaths([file]))[0] === e.digest;
}

/** Remove whatever is at a staging path (a stale or tampered copy), never following it. */
export async function clearStaged(t: Target, file: string): Promise<void> {
  const st = await lstatOr(file);
  if (!st) return;
  await (st.isDirectory() ? removeTree(file) : unlink(file)).catch((err: unknown) => {
    if (osErrorCode(err) !== 'ENOENT') throw targetError(t, err, 'clearing the staging', file);
  });
}

/**
 * Copy the bytes of `items` (files and symlinks) out of the store into their staging paths; files
 * hashed on the way (copy-out.ts): E_OBJECT_CORRUPT or E_OBJECT_MISSING names the path.
 */
export async function copyOut(
  store: ObjectStore,
  t: Target,
  dir: string,
  items: Array<{ entry: Entry; name: string }>,
  onProgress?: ProgressFn,
): Promise<void> {
  const files: ObjectCopy[] = [];
  for (const { entry: e, name } of items) {
    const dst = join(dir, name);
    if (e.kind === 'symlink')
      await symlink(e.target, dst).catch((err: unknown) => {
        throw targetError(t, err, `staging ${e.path}`, dst);
      });
    else if (e.kind === 'file') files.push({ path: e.path, digest: e.digest, size: e.size, exec: e.exec, name });
  }
  await copyObjectsOut(store, dir, files, onProgress).catch((err: unknown) => {
    throw isPdbError(err, 'E_OBJECT_CORRUPT') || isPdbError(err, 'E_OBJECT_MISSING')
      ? err
      : targetError(t, err, 'staging the changes', dir);
  });
}
