// The staging of an apply: DIR/.pdb/apply-<intent id>/, on DIR's filesystem so that every move
// into place is a link or rename within one device. It holds bytes only, never instructions:
// `files/<i>` the result's entry of change i, copied out of the store and hashed on the way (the
// model's verified copy); `displaced/<i>` the base's entry moved aside, kept until the apply
// commits so a rollback can put it back; `DIR/.pdb/kept/` what could not be put back and is
// not known bytes (a user's edit moved aside just before a crash), kept and reported, never
// deleted. Each staging directory is opened from DIR's handle without following a link and held
// open (model/os/dir-handle.ts): a link, a file or another device in its place is refused, and a
// link swapped in later is never written through. What recovery finds there is checked against
// the Changeset again, and staged anew from the store when it does not match. A base entry moved
// aside is deleted only once its path ended as planned; otherwise it is kept. `nonce` holds the
// intent's nonce, written first (right after DIR/.pdb/apply-<id> is made) and removed last: the
// target's corroboration of the intent (issue 41), without which recovery never acts on DIR.
import { closeSync, constants, readSync } from 'node:fs';
import { join } from 'node:path';
import type { Digest } from '../../../model/canonical-json.js';
import { crashPoint } from '../../../model/crash-point.js';
import { PdbError, isPdbError, osErrorCode } from '../../../model/errors.js';
import {
  closeDir,
  handlePath,
  hashFileAt,
  listAt,
  mkdirAt,
  openDirAt,
  openFileAt,
  readlinkAt,
  renameAt,
  rmdirAt,
  rmTreeAt,
  statAt,
  symlinkAt,
  writeFileAt,
  type DirHandle,
} from '../../../model/os/dir-handle.js';
import type { ProgressFn } from '../../../model/progress.js';
import type { ObjectStore } from '../../../model/store/object-store.js';
import type { Entry } from '../../../model/snapshot.js';
import { copyObjectsOut, type ObjectCopy } from '../copy-out.js';
import { targetError, type Target } from './target.js';

export const STAGING_ROOT = '.pdb';

/** The handles of an open staging. */
interface StagingHandles {
  root: DirHandle;
  dir: DirHandle;
  files: DirHandle;
  displaced: DirHandle;
  /** `placed/<i>`: an empty mark made before change i's staged entry is linked into place (absent in a staging made before it was kept). */
  placed: DirHandle | null;
}

export interface Staging {
  /** DIR/.pdb, DIR/.pdb/apply-<id>, and its two halves (paths: for messages). */
  root: string;
  dir: string;
  files: string;
  displaced: string;
  /** DIR/.pdb/kept: what an apply moved aside and could not put back (never deleted by pdb-env). */
  kept: string;
  /** The name of DIR/.pdb/apply-<id>. */
  name: string;
  /** Set by openStaging; closeStaging lets them go. */
  h: StagingHandles | null;
}

export function stagingOf(t: Target, intentId: string): Staging {
  const root = join(t.dir, STAGING_ROOT);
  const name = `apply-${intentId}`;
  const dir = join(root, name);
  return { root, dir, name, files: join(dir, 'files'), displaced: join(dir, 'displaced'), kept: join(root, 'kept'), h: null };
}

/**
 * Mark change i as linked into place (before the link: a crash after the mark and before the link
 * leaves the staged entry, which says it was not).
 */
export function markPlaced(t: Target, s: Staging, index: number): void {
  const h = handles(s).placed;
  if (!h) return;
  try {
    writeFileAt(h, String(index), '');
  } catch (err) {
    if (osErrorCode(err) !== 'EEXIST') throw targetError(t, err, 'marking a change as placed', join(s.dir, 'placed', String(index)));
  }
}

/** Was change i's staged entry linked into place (its mark made and the staged entry gone)? */
export function wasPlaced(s: Staging, index: number): boolean {
  const h = handles(s);
  return !!h.placed && statAt(h.placed, String(index)) !== null && statAt(h.files, String(index)) === null;
}

/** A slot of the staging: a directory handle and a name in it. */
export interface Slot {
  h: DirHandle;
  name: string;
}

/** The handles of an open staging (openStaging first). */
export function handles(s: Staging): StagingHandles {
  if (!s.h) throw new PdbError('E_INTERNAL', `the staging ${s.dir} is not open`);
  return s.h;
}

export const stagedFile = (s: Staging, index: number): Slot => ({ h: handles(s).files, name: String(index) });
export const displacedFile = (s: Staging, index: number): Slot => ({ h: handles(s).displaced, name: String(index) });

function badPath(d: string, what: string): PdbError {
  return new PdbError('E_BAD_PATH', `${d} is ${what}: apply stages only in a directory of its own and never follows a link`, {
    path: d,
    hint: `Move ${d} away (pdb-env's staging: nothing else belongs in ${STAGING_ROOT}), then apply again; pdb-env gc then finishes an interrupted apply.`,
  });
}

/**
 * Open (with `make`, make) the directory `name` in `parent` as a real directory on DIR's device,
 * never following a link: E_BAD_PATH for a link or a file, E_CROSS_DEVICE for a mount. Null when
 * it is missing (and not made).
 */
function realDir(t: Target, parent: DirHandle, name: string, path: string, make: boolean): DirHandle | null {
  if (make)
    try {
      mkdirAt(parent, name);
    } catch (err) {
      if (osErrorCode(err) !== 'EEXIST') throw targetError(t, err, 'making the staging of the apply', path);
    }
  const st = statAt(parent, name);
  if (!st) return null;
  if (!st.isDirectory()) throw badPath(path, st.isSymbolicLink() ? 'a symlink' : 'not a directory');
  let h: DirHandle;
  try {
    h = openDirAt(parent, name);
  } catch (err) {
    const code = osErrorCode(err);
    if (code === 'ENOENT') return null;
    if (code === 'ELOOP' || code === 'ENOTDIR') throw badPath(path, 'a symlink or file now');
    throw targetError(t, err, 'opening the staging of the apply', path);
  }
  if (h.dev !== t.dev) {
    closeDir(h);
    throw new PdbError('E_CROSS_DEVICE', `${path} is on another filesystem than ${t.dir}: staged files could not be renamed into place`, {
      path,
      hint: `Unmount or move ${path} away, then apply again (pdb-env gc finishes an interrupted apply).`,
    });
  }
  return h;
}

/**
 * Open each staging directory from DIR's handle (E_BAD_PATH for a link or a file, E_CROSS_DEVICE
 * for a mount); with `make`, make the missing ones. False when one is missing. Open already: true.
 * With `nonce` (a new apply), the marker is written into DIR/.pdb/apply-<id> right after it is
 * made, before its halves: a staging is never more than an empty directory without its marker.
 */
export async function openStaging(t: Target, s: Staging, make: boolean, nonce?: string): Promise<boolean> {
  if (s.h) return true;
  const got: DirHandle[] = [];
  try {
    const root = realDir(t, t.root, STAGING_ROOT, s.root, make);
    if (root) got.push(root);
    const dir = root && realDir(t, root, s.name, s.dir, make);
    if (dir) got.push(dir);
    if (dir && nonce !== undefined) writeNonce(t, dir, s, nonce);
    const files = dir && realDir(t, dir, 'files', s.files, make);
    if (files) got.push(files);
    const displaced = dir && realDir(t, dir, 'displaced', s.displaced, make);
    if (displaced) got.push(displaced);
    if (!root || !dir || !files || !displaced) {
      got.forEach(closeDir);
      return false;
    }
    const placed = realDir(t, dir, 'placed', join(s.dir, 'placed'), make);
    s.h = { root, dir, files, displaced, placed };
    return true;
  } catch (err) {
    got.forEach(closeDir);
    throw err;
  }
}

const NONCE_FILE = 'nonce';

/** Write the intent's nonce into the staging's marker (in `dir`, DIR/.pdb/apply-<id>): before any change to DIR. */
function writeNonce(t: Target, dir: DirHandle, s: Staging, nonce: string): void {
  try {
    writeFileAt(dir, NONCE_FILE, nonce, { exclusive: false });
  } catch (err) {
    throw targetError(t, err, 'marking the staging as this apply', join(s.dir, NONCE_FILE));
  }
}

/**
 * Why DIR (its handle) does not corroborate an apply intent (null: it does). DIR/.pdb/apply-<id>/nonce
 * is read through handles opened without following a link and must hold the intent's nonce. A
 * staging that is not there corroborates only an intent that has nothing left to do in DIR (its
 * phase `staging` or `done`): recovery then writes nothing there. So does, for such an intent, a
 * staging that holds nothing but its marker not yet whole (empty, or the first bytes of the nonce)
 * or not even that: the apply was killed right after making it, or while removing it (the marker
 * goes last); recovery then removes that empty directory, and nothing else.
 */
export function uncorroborated(root: DirHandle, intentId: string, nonce: string | null, phase: string): string | null {
  const marker = `${STAGING_ROOT}/apply-${intentId}/${NONCE_FILE}`;
  const idle = phase === 'staging' || phase === 'done';
  let dir: DirHandle;
  try {
    dir = openDirAt(root, `${STAGING_ROOT}/apply-${intentId}`, { sameDevice: true });
  } catch (err) {
    const code = osErrorCode(err);
    if (code === 'ENOENT' && idle) return null;
    return `its staging ${marker.slice(0, -NONCE_FILE.length - 1)} in the directory is ${code === 'ENOENT' ? 'missing' : `not a real directory of it (${code})`}, so nothing there says this apply ran`;
  }
  try {
    if (!nonce) return 'the intent holds no nonce (written before pdb-env recorded one), so nothing in the directory can confirm it';
    const bare = () => idle && listAt(dir).every((n) => n === NONCE_FILE);
    let fd: number;
    try {
      fd = openFileAt(dir, NONCE_FILE, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (err) {
      if (osErrorCode(err) === 'ENOENT' && bare()) return null;
      return `the staging's marker ${marker} cannot be read (${osErrorCode(err) ?? (err as Error).message})`;
    }
    const buf = Buffer.alloc(64);
    let n: number;
    try {
      n = readSync(fd, buf, 0, buf.length, 0);
    } finally {
      closeSync(fd);
    }
    const got = buf.subarray(0, n).toString('utf8');
    if (got === nonce || (nonce.startsWith(got) && bare())) return null;
    return `the staging's marker ${marker} does not hold the intent's nonce`;
  } finally {
    closeDir(dir);
  }
}

/** Let go of the staging's handles. */
export function closeStaging(s: Staging): void {
  if (!s.h) return;
  for (const h of Object.values(s.h)) closeDir(h as DirHandle | null);
  s.h = null;
}

/** Move the slot into DIR/.pdb/kept under a name of its own (apply-<id>.<change index>[.n]); where it went. */
export async function keepAside(t: Target, s: Staging, from: Slot, index: number): Promise<string> {
  return keepIn(t, s, handles(s).root, from, index);
}

/** keepAside, with DIR/.pdb's handle. */
function keepIn(t: Target, s: Staging, root: DirHandle, from: Slot, index: number): string {
  const kept = realDir(t, root, 'kept', s.kept, true)!;
  try {
    for (let n = 0; ; n++) {
      const name = `${s.name}.${index}${n ? `.${n}` : ''}`;
      if (statAt(kept, name)) continue;
      try {
        renameAt(from.h, from.name, kept, name, { noReplace: true });
      } catch (err) {
        if (osErrorCode(err) === 'EEXIST') continue;
        throw targetError(t, err, 'keeping an entry the apply moved aside', join(from.h.path, from.name));
      }
      return join(s.kept, name);
    }
  } finally {
    closeDir(kept);
  }
}

/**
 * Remove the staging (when it is still ours: real directories of DIR), and DIR/.pdb once it is
 * empty. `settled(i)` says whether change i's path ended as planned: a base entry moved aside for
 * one that did not is kept in DIR/.pdb/kept (with why in `kept`), never deleted. A staging left
 * part made or part removed (a kill) is removed too. The marker goes last, just before the empty
 * directory: a kill at any moment leaves a staging that corroborates its intent (uncorroborated),
 * so the next gc removes it.
 */
export async function removeStaging(
  t: Target,
  s: Staging,
  settled: (index: number) => Promise<boolean> = async () => true,
  kept: string[] = [],
): Promise<void> {
  const own: DirHandle[] = [];
  try {
    let root = s.h?.root ?? null;
    let dir = s.h?.dir ?? null;
    if (!s.h) {
      root = realDir(t, t.root, STAGING_ROOT, s.root, false);
      if (root) own.push(root);
      dir = root && realDir(t, root, s.name, s.dir, false);
      if (dir) own.push(dir);
    }
    if (!root || !dir) return;
    const displaced = s.h?.displaced ?? realDir(t, dir, 'displaced', s.displaced, false);
    if (displaced && !s.h) own.push(displaced);
    for (const name of displaced ? listAt(displaced) : []) {
      const index = Number(name);
      if (Number.isInteger(index) && String(index) === name && (await settled(index))) continue;
      kept.push(
        `change ${name}: the base's entry moved aside, its path not as planned; kept as ${keepIn(t, s, root, { h: displaced!, name }, Number.isInteger(index) ? index : -1)}`,
      );
    }
    for (const name of listAt(dir)) if (name !== NONCE_FILE) rmTreeAt(dir, name);
    rmTreeAt(dir, NONCE_FILE);
    rmdirAt(root, s.name);
    crashPoint('apply:after-staging');
  } finally {
    // Also when this staging is gone already (an apply killed after removing it, finished by gc):
    // only an empty DIR/.pdb goes, and rmdir follows no link.
    try {
      rmdirAt(t.root, STAGING_ROOT);
    } catch {
      // not empty (another apply, kept entries, a user's file), not a directory, or gone: left as it is
    }
    own.forEach(closeDir);
    closeStaging(s);
  }
}

/** Does the slot hold `e` (kind, bytes, exec bit; a symlink's target)? Never follows a link. */
export async function holds(slot: Slot, e: Entry): Promise<boolean> {
  const st = statAt(slot.h, slot.name);
  if (!st) return false;
  if (e.kind === 'symlink') return st.isSymbolicLink() && readlinkAt(slot.h, slot.name) === e.target;
  if (e.kind !== 'file' || !st.isFile() || st.size !== e.size || ((st.mode & 0o111) !== 0) !== e.exec) return false;
  const hex = hashFileAt(slot.h, slot.name);
  return hex !== null && (`sha256:${hex}` as Digest) === e.digest;
}

/** Remove whatever is at a staging slot (a stale or tampered copy), never following it. */
export async function clearStaged(t: Target, slot: Slot): Promise<void> {
  try {
    rmTreeAt(slot.h, slot.name);
  } catch (err) {
    if (osErrorCode(err) !== 'ENOENT') throw targetError(t, err, 'clearing the staging', join(slot.h.path, slot.name));
  }
}

/**
 * Copy the bytes of `items` (files and symlinks) out of the store into the staging directory
 * `dir`; files hashed on the way (copy-out.ts), written through the directory's handle:
 * E_OBJECT_CORRUPT or E_OBJECT_MISSING names the path.
 */
export async function copyOut(
  store: ObjectStore,
  t: Target,
  dir: DirHandle,
  items: Array<{ entry: Entry; name: string }>,
  onProgress?: ProgressFn,
): Promise<void> {
  const files: ObjectCopy[] = [];
  for (const { entry: e, name } of items) {
    if (e.kind === 'symlink')
      try {
        symlinkAt(e.target, dir, name);
      } catch (err) {
        throw targetError(t, err, `staging ${e.path}`, join(dir.path, name));
      }
    else if (e.kind === 'file') files.push({ path: e.path, digest: e.digest, size: e.size, exec: e.exec, name });
  }
  await copyObjectsOut(store, handlePath(dir), files, onProgress).catch((err: unknown) => {
    throw isPdbError(err, 'E_OBJECT_CORRUPT') || isPdbError(err, 'E_OBJECT_MISSING')
      ? err
      : targetError(t, err, 'staging the changes', dir.path);
  });
}
