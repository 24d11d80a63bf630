// The steps of an apply, each a compare-and-set held to its own rename, and their rollback. Every
// step reads what is at its path right before it acts (every parent lstat'ed: a real directory on
// DIR's device), moves the base's entry aside into the staging and checks the bytes it moved (so an
// edit made between the check and the move is caught, and put back), then links the staged result
// into place (a link never replaces: a path made meanwhile is a conflict, not overwritten).
//
// Both directions are decided by what is there, never by a record of progress, so a crash at any
// moment (or a second run) picks up where things are: forward, a path already as the result is
// done; backward, a path still as the base is done, a path as the result is put back to the base
// (from what was moved aside, or from the store's bytes), and a path someone else changed is left
// as it is and reported.
import { crashPoint } from '../../../model/crash-point.js';
import { PdbError, osErrorCode } from '../../../model/errors.js';
import {
  closeDir,
  linkAt,
  listAt,
  mkdirAt,
  openDirAt,
  renameAt,
  rmdirAt,
  statAt,
  unlinkAt,
  type DirHandle,
} from '../../../model/os/dir-handle.js';
import type { ObjectStore } from '../../../model/store/object-store.js';
import type { Entry } from '../../../model/snapshot.js';
import type { Step } from './plan.js';
import {
  clearStaged,
  copyOut,
  displacedFile,
  handles,
  holds,
  keepAside,
  markPlaced,
  stagedFile,
  wasPlaced,
  type Slot,
  type Staging,
} from './staging.js';
import { entryIn, keyOf, parentAt, recheckTarget, targetError, type PathState, type Target } from './target.js';

export interface StepRun {
  store: ObjectStore;
  t: Target;
  s: Staging;
  steps: Step[];
  /** Paths the apply retypes: below one that is not a directory, nothing exists (see stateAt). */
  retyped: ReadonlySet<string>;
  /** What a rollback left as it is, and why. */
  kept: string[];
}

const same = (a: Entry | null, b: Entry | null) => keyOf(a) === keyOf(b);

const describe = (e: Entry | null) =>
  e === null ? 'absent' : e.kind === 'dir' ? 'a directory' : e.kind === 'file' ? 'a file' : 'a symlink';

const pathOf = (at: Slot) => `${at.h.path}/${at.name}`;

function conflict(run: StepRun, st: Step, why: string): PdbError {
  return new PdbError('E_APPLY_CONFLICT', `${st.path} in ${run.t.dir} changed while the apply ran: ${why}`, {
    path: st.path,
    hint: 'Your edit is kept, and what the apply had written is rolled back. Take the session as a patch instead (pdb-env export NAME --patch FILE), or undo the edit and apply again.',
  });
}

/** Move `from` to `to` unless `to` exists (a link never replaces; renameat2 RENAME_NOREPLACE where links cannot be). False when `to` is there. */
function linkInto(t: Target, from: Slot, to: Slot): boolean {
  // link(2) of a symlink makes a link to the symlink on Linux; elsewhere, a rename that never replaces.
  const viaRename = process.platform !== 'linux' && statAt(from.h, from.name)?.isSymbolicLink();
  if (!viaRename)
    try {
      linkAt(from.h, from.name, to.h, to.name);
      try {
        unlinkAt(from.h, from.name);
      } catch (err) {
        if (osErrorCode(err) !== 'ENOENT') throw targetError(t, err, 'clearing the staging', pathOf(from));
      }
      return true;
    } catch (err) {
      const code = osErrorCode(err) ?? '';
      if (code === 'EEXIST') return false;
      if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EMLINK'].includes(code))
        throw targetError(t, err, 'moving a staged entry into place', pathOf(to));
      // a filesystem without hard links: the rename below
    }
  try {
    renameAt(from.h, from.name, to.h, to.name, { noReplace: true });
    return true;
  } catch (err) {
    if (osErrorCode(err) === 'EEXIST') return false;
    throw targetError(t, err, 'moving a staged entry into place', pathOf(to));
  }
}

/** Keep what is at `from` in DIR/.pdb/kept, and say so. */
async function keep(run: StepRun, from: Slot, st: Step, why: string): Promise<void> {
  run.kept.push(`${st.path}: ${why}; kept as ${await keepAside(run.t, run.s, from, st.index)}`);
}

/** Put a moved-aside entry back at `to`; if something took its place meanwhile, keep it, and say so. */
async function putBack(run: StepRun, from: Slot, to: Slot, st: Step): Promise<void> {
  if (!linkInto(run.t, from, to)) await keep(run, from, st, 'changed twice meanwhile, the version moved aside');
}

/**
 * Free a staging slot before it is used. What is there goes only when it is known: `known`
 * (whose bytes the store has) or another name of what is at the path now (a crash between a
 * link and an unlink). Anything else was moved aside from the path just before a crash (an edit
 * of someone else's): it is kept, never deleted.
 */
async function freeSlot(run: StepRun, slot: Slot, at: Slot | null, st: Step, known: Entry | null): Promise<void> {
  const there = statAt(slot.h, slot.name);
  if (!there) return;
  const now = at && statAt(at.h, at.name);
  const sameFile = !!now && now.dev === there.dev && now.ino === there.ino;
  if (sameFile || (known && (await holds(slot, known)))) await clearStaged(run.t, slot);
  else await keep(run, slot, st, 'found in the staging, not what the apply put there');
}

/** Take the base's entry away: a directory is removed (it must be empty), a file or symlink moved aside and checked. */
async function displace(run: StepRun, st: Step, at: Slot): Promise<void> {
  if (st.pre!.kind === 'dir') {
    try {
      rmdirAt(at.h, at.name);
    } catch (err) {
      const code = osErrorCode(err);
      if (code === 'ENOENT') return;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw targetError(run.t, err, 'removing a directory the changes remove', pathOf(at));
      throw conflict(run, st, `it holds ${namesOf(at).join(', ')}, which the changes do not name`);
    }
    return;
  }
  const d = displacedFile(run.s, st.index);
  await freeSlot(run, d, at, st, st.pre);
  try {
    renameAt(at.h, at.name, d.h, d.name);
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') throw conflict(run, st, 'it was removed just now');
    throw targetError(run.t, err, 'moving a path aside', pathOf(at));
  }
  if (await holds(d, st.pre!)) return;
  await putBack(run, d, at, st);
  throw conflict(run, st, 'it was changed just now');
}

function namesOf(at: Slot): string[] {
  let h: DirHandle | null = null;
  try {
    h = openDirAt(at.h, at.name);
    return listAt(h);
  } catch {
    return ['(something it could not list)'];
  } finally {
    closeDir(h);
  }
}

/** Make the directory; false when something else is there (a directory already there is fine: that is the goal). */
function makeDir(run: StepRun, at: Slot): boolean {
  try {
    mkdirAt(at.h, at.name);
    return true;
  } catch (err) {
    if (osErrorCode(err) !== 'EEXIST') throw targetError(run.t, err, 'making a directory', pathOf(at));
    return statAt(at.h, at.name)?.isDirectory() === true;
  }
}

/** Bring the result's entry: a directory made, a file or symlink linked in from the staging (staged anew when it does not match). */
async function place(run: StepRun, st: Step, at: Slot): Promise<void> {
  const e = st.post!;
  if (e.kind === 'dir') {
    if (!makeDir(run, at)) throw conflict(run, st, 'something was put there just now');
    return;
  }
  // The staged bytes are checked again right before they go in: the staging is in DIR, where anything may touch it.
  const f = stagedFile(run.s, st.index);
  if (!(await holds(f, e))) {
    await freeSlot(run, f, null, st, null);
    await copyOut(run.store, run.t, handles(run.s).files, [{ entry: e, name: String(st.index) }]);
  }
  markPlaced(run.t, run.s, st.index);
  if (!linkInto(run.t, f, at)) throw conflict(run, st, 'something was put there just now');
}

/**
 * Did the apply put its result at this step's path already (marked placed, and its staged file or
 * symlink no longer in the staging)? Then an absent path is one someone removed or renamed since.
 */
function placedAlready(run: StepRun, st: Step): boolean {
  return !!st.post && st.post.kind !== 'dir' && wasPlaced(run.s, st.index);
}

/** Open the step's parent (from DIR's handle, no link followed) and read what is at its path; run `fn` with both, then close the parent. */
async function atStep<T>(run: StepRun, st: Step, fn: (cur: PathState, at: Slot | null) => Promise<T>): Promise<T> {
  const p = parentAt(run.t, st.path, run.retyped);
  if (!('parent' in p)) return fn(p, null);
  try {
    return await fn(entryIn(run.t, p.parent, p.name, st.path), { h: p.parent, name: p.name });
  } finally {
    closeDir(p.parent);
  }
}

/** One step forward; true when it changed something. */
async function forward(run: StepRun, st: Step): Promise<boolean> {
  await recheckTarget(run.t);
  return atStep(run, st, async (cur, at) => {
    if ('blocked' in cur) throw conflict(run, st, cur.blocked);
    if (same(cur.entry, st.final) || same(cur.entry, st.post)) return false;
    if (cur.entry === null && placedAlready(run, st)) {
      throw conflict(run, st, 'it was removed or renamed after the apply put it there');
    } else if (same(cur.entry, st.pre)) {
      if (st.pre) await displace(run, st, at!);
    } else if (!(cur.entry === null && st.pre && (await holds(displacedFile(run.s, st.index), st.pre)))) {
      // (absent, with the base's entry in the staging: moved aside by this apply before a crash)
      throw conflict(run, st, `it is ${describe(cur.entry)} now, where the base had ${describe(st.pre)}`);
    }
    if (st.post) {
      if (cur.entry === null && cur.parentGone) throw conflict(run, st, 'its parent directory is gone');
      await place(run, st, at!);
    }
    return true;
  });
}

/** Every step forward, in order. Throws at the first conflict or failure (the caller rolls back). */
export async function runForward(run: StepRun): Promise<{ written: number; deleted: number }> {
  const counts = { written: 0, deleted: 0 };
  let marked = false;
  for (const st of run.steps) {
    if (st.phase === 'deletes' && !marked) {
      crashPoint('apply:after-renames');
      marked = true;
    }
    if (!(await forward(run, st))) continue;
    if (counts.written + counts.deleted === 0) crashPoint('apply:after-first-rename');
    if (st.post) counts.written++;
    else counts.deleted++;
  }
  if (!marked) crashPoint('apply:after-renames');
  return counts;
}

/** Take the result's entry away again; false when it is not the result any more (left as it is). */
async function unplace(run: StepRun, st: Step, at: Slot): Promise<boolean> {
  if (st.post!.kind === 'dir') {
    try {
      rmdirAt(at.h, at.name);
      return true;
    } catch (err) {
      const code = osErrorCode(err);
      if (code === 'ENOENT') return true;
      if (code === 'ENOTEMPTY' || code === 'EEXIST') return false;
      throw targetError(run.t, err, 'removing a directory the apply made', pathOf(at));
    }
  }
  const f = stagedFile(run.s, st.index);
  await freeSlot(run, f, at, st, st.post);
  try {
    renameAt(at.h, at.name, f.h, f.name);
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') return true;
    throw targetError(run.t, err, 'moving a path aside', pathOf(at));
  }
  if (await holds(f, st.post!)) return true; // the result's bytes are in the store: nothing to keep
  await putBack(run, f, at, st);
  return false;
}

/** Bring the base's entry back: from what was moved aside when it still matches, else from the store's bytes. */
async function restore(run: StepRun, st: Step, at: Slot): Promise<void> {
  const e = st.pre!;
  if (e.kind === 'dir') {
    if (!makeDir(run, at)) run.kept.push(`${st.path}: made by someone else meanwhile, left as it is`);
    return;
  }
  const d = displacedFile(run.s, st.index);
  if (!(await holds(d, e))) {
    await freeSlot(run, d, null, st, null);
    await copyOut(run.store, run.t, handles(run.s).displaced, [{ entry: e, name: String(st.index) }]);
  }
  if (!linkInto(run.t, d, at)) run.kept.push(`${st.path}: made by someone else meanwhile, left as it is`);
}

/** One step back: a compare-and-set per path, so a path is put back only while it holds what the apply put there. */
async function backward(run: StepRun, st: Step): Promise<void> {
  await atStep(run, st, async (cur, at) => {
    if ('blocked' in cur) {
      run.kept.push(`${st.path}: left as it is (${cur.blocked})`);
      return;
    }
    if (same(cur.entry, st.pre)) return;
    if (cur.entry !== null && !(st.post && same(cur.entry, st.post) && (await unplace(run, st, at!)))) {
      run.kept.push(`${st.path}: changed by someone else since, left as it is`);
      return;
    }
    if (!st.pre) return;
    if (cur.entry === null && cur.parentGone) {
      run.kept.push(`${st.path}: its parent directory is gone, so it stays absent`);
      return;
    }
    if (cur.entry === null && placedAlready(run, st)) {
      // A delete (or rename) is an edit: what the user removed after the apply put it there is not brought back.
      run.kept.push(`${st.path}: removed or renamed by someone else after the apply put it there, so it stays absent`);
      return;
    }
    await restore(run, st, at!);
  });
}

/** Every step back, last first: DIR ends as the base had it, except paths someone else changed (returned, with why). */
export async function rollBack(run: StepRun): Promise<string[]> {
  for (const st of [...run.steps].reverse()) {
    await recheckTarget(run.t);
    await backward(run, st);
  }
  return run.kept;
}

/** Did change `index`'s path end as planned: `final` going forward, the base's entry after a rollback? */
export function settledAs(run: StepRun, direction: 'forward' | 'backward'): (index: number) => Promise<boolean> {
  return async (index) => {
    const st = run.steps.find((x) => x.index === index && x.pre !== null);
    if (!st) return false;
    const cur = await atStep(run, st, async (c) => c);
    if ('blocked' in cur) return false;
    return same(cur.entry, direction === 'forward' ? st.final : st.pre);
  };
}
