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
import { link, mkdir, readdir, rename, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { crashPoint } from '../../../model/crash-point.js';
import { PdbError, osErrorCode } from '../../../model/errors.js';
import type { ObjectStore } from '../../../model/store/object-store.js';
import type { Entry } from '../../../model/snapshot.js';
import type { Step } from './plan.js';
import { clearStaged, copyOut, displacedFile, holds, keepAside, stagedFile, type Staging } from './staging.js';
import { keyOf, lstatOr, recheckTarget, stateAt, targetError, type Target } from './target.js';

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

function conflict(run: StepRun, st: Step, why: string): PdbError {
  return new PdbError('E_APPLY_CONFLICT', `${st.path} in ${run.t.dir} changed while the apply ran: ${why}`, {
    path: st.path,
    hint: 'Your edit is kept, and what the apply had written is rolled back. Take the session as a patch instead (pdb-env export NAME --patch FILE), or undo the edit and apply again.',
  });
}

/** Look, then rename: where link(2) cannot be used (the one window left is between the two). */
async function renameIfAbsent(t: Target, from: string, to: string): Promise<boolean> {
  if (await lstatOr(to)) return false;
  await rename(from, to).catch((e: unknown) => {
    throw targetError(t, e, 'moving a staged entry into place', to);
  });
  return true;
}

/** Move `from` to `to` unless `to` exists (a link never replaces). False when `to` is there. */
async function linkInto(t: Target, from: string, to: string): Promise<boolean> {
  // link(2) of a symlink makes a link to the symlink on Linux only; elsewhere it may follow it.
  if (process.platform !== 'linux' && (await lstatOr(from))?.isSymbolicLink()) return renameIfAbsent(t, from, to);
  try {
    await link(from, to);
  } catch (err) {
    const code = osErrorCode(err) ?? '';
    if (code === 'EEXIST') return false;
    if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EMLINK'].includes(code)) throw targetError(t, err, 'moving a staged entry into place', to);
    return renameIfAbsent(t, from, to); // a filesystem without hard links
  }
  await unlink(from).catch((err: unknown) => {
    if (osErrorCode(err) !== 'ENOENT') throw targetError(t, err, 'clearing the staging', from);
  });
  return true;
}

/** Keep what is at `from` in DIR/.pdb/kept, and say so. */
async function keep(run: StepRun, from: string, st: Step, why: string): Promise<void> {
  run.kept.push(`${st.path}: ${why}; kept as ${await keepAside(run.t, run.s, from, st.index)}`);
}

/** Put a moved-aside entry back at `to`; if something took its place meanwhile, keep it, and say so. */
async function putBack(run: StepRun, from: string, to: string, st: Step): Promise<void> {
  if (!(await linkInto(run.t, from, to))) await keep(run, from, st, 'changed twice meanwhile, the version moved aside');
}

/**
 * Free a staging slot before it is used. What is there goes only when it is known: `known`
 * (whose bytes the store has) or another name of what is at the path now (a crash between a
 * link and an unlink). Anything else was moved aside from the path just before a crash (an edit
 * of someone else's): it is kept, never deleted.
 */
async function freeSlot(run: StepRun, slot: string, st: Step, known: Entry | null): Promise<void> {
  const there = await lstatOr(slot);
  if (!there) return;
  const at = await lstatOr(join(run.t.dir, st.path));
  const sameFile = at !== null && at.dev === there.dev && at.ino === there.ino;
  if (sameFile || (known && (await holds(slot, known)))) await clearStaged(run.t, slot);
  else await keep(run, slot, st, 'found in the staging, not what the apply put there');
}

/** Take the base's entry away: a directory is removed (it must be empty), a file or symlink moved aside and checked. */
async function displace(run: StepRun, st: Step): Promise<void> {
  const p = join(run.t.dir, st.path);
  if (st.pre!.kind === 'dir') {
    try {
      await rmdir(p);
    } catch (err) {
      const code = osErrorCode(err);
      if (code === 'ENOENT') return;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw targetError(run.t, err, 'removing a directory the changes remove', p);
      throw conflict(run, st, `it holds ${(await readdir(p)).join(', ')}, which the changes do not name`);
    }
    return;
  }
  const d = displacedFile(run.s, st.index);
  await freeSlot(run, d, st, st.pre);
  try {
    await rename(p, d);
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') throw conflict(run, st, 'it was removed just now');
    throw targetError(run.t, err, 'moving a path aside', p);
  }
  if (await holds(d, st.pre!)) return;
  await putBack(run, d, p, st);
  throw conflict(run, st, 'it was changed just now');
}

/** Make the directory `p`; false when something else is there (a directory already there is fine: that is the goal). */
async function makeDir(run: StepRun, p: string): Promise<boolean> {
  try {
    await mkdir(p);
    return true;
  } catch (err) {
    if (osErrorCode(err) !== 'EEXIST') throw targetError(run.t, err, 'making a directory', p);
    return (await lstatOr(p))?.isDirectory() === true;
  }
}

/** Bring the result's entry: a directory made, a file or symlink linked in from the staging (staged anew when it does not match). */
async function place(run: StepRun, st: Step): Promise<void> {
  const p = join(run.t.dir, st.path);
  const e = st.post!;
  if (e.kind === 'dir') {
    if (!(await makeDir(run, p))) throw conflict(run, st, 'something was put there just now');
    return;
  }
  // The staged bytes are checked again right before they go in: the staging is in DIR, where anything may touch it.
  const f = stagedFile(run.s, st.index);
  if (!(await holds(f, e))) {
    await freeSlot(run, f, st, null);
    await copyOut(run.store, run.t, run.s.files, [{ entry: e, name: String(st.index) }]);
  }
  if (!(await linkInto(run.t, f, p))) throw conflict(run, st, 'something was put there just now');
}

/** One step forward; true when it changed something. */
async function forward(run: StepRun, st: Step): Promise<boolean> {
  await recheckTarget(run.t);
  const cur = await stateAt(run.t, st.path, run.retyped);
  if ('blocked' in cur) throw conflict(run, st, cur.blocked);
  if (same(cur.entry, st.final) || same(cur.entry, st.post)) return false;
  if (same(cur.entry, st.pre)) {
    if (st.pre) await displace(run, st);
  } else if (!(cur.entry === null && st.pre && (await holds(displacedFile(run.s, st.index), st.pre)))) {
    // (absent, with the base's entry in the staging: moved aside by this apply before a crash)
    throw conflict(run, st, `it is ${describe(cur.entry)} now, where the base had ${describe(st.pre)}`);
  }
  if (st.post) {
    if (cur.parentGone) throw conflict(run, st, 'its parent directory is gone');
    await place(run, st);
  }
  return true;
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
async function unplace(run: StepRun, st: Step): Promise<boolean> {
  const p = join(run.t.dir, st.path);
  if (st.post!.kind === 'dir') {
    try {
      await rmdir(p);
      return true;
    } catch (err) {
      const code = osErrorCode(err);
      if (code === 'ENOENT') return true;
      if (code === 'ENOTEMPTY' || code === 'EEXIST') return false;
      throw targetError(run.t, err, 'removing a directory the apply made', p);
    }
  }
  const f = stagedFile(run.s, st.index);
  await freeSlot(run, f, st, st.post);
  try {
    await rename(p, f);
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') return true;
    throw targetError(run.t, err, 'moving a path aside', p);
  }
  if (await holds(f, st.post!)) return true; // the result's bytes are in the store: nothing to keep
  await putBack(run, f, p, st);
  return false;
}

/** Bring the base's entry back: from what was moved aside when it still matches, else from the store's bytes. */
async function restore(run: StepRun, st: Step): Promise<void> {
  const p = join(run.t.dir, st.path);
  const e = st.pre!;
  if (e.kind === 'dir') {
    if (!(await makeDir(run, p))) run.kept.push(`${st.path}: made by someone else meanwhile, left as it is`);
    return;
  }
  const d = displacedFile(run.s, st.index);
  if (!(await holds(d, e))) {
    await freeSlot(run, d, st, null);
    await copyOut(run.store, run.t, run.s.displaced, [{ entry: e, name: String(st.index) }]);
  }
  if (!(await linkInto(run.t, d, p))) run.kept.push(`${st.path}: made by someone else meanwhile, left as it is`);
}

/** One step back. */
async function backward(run: StepRun, st: Step): Promise<void> {
  const cur = await stateAt(run.t, st.path, run.retyped);
  if ('blocked' in cur) {
    run.kept.push(`${st.path}: left as it is (${cur.blocked})`);
    return;
  }
  if (same(cur.entry, st.pre)) return;
  if (cur.entry !== null && !(st.post && same(cur.entry, st.post) && (await unplace(run, st)))) {
    run.kept.push(`${st.path}: changed by someone else since, left as it is`);
    return;
  }
  if (!st.pre) return;
  if (cur.parentGone && cur.entry === null) {
    run.kept.push(`${st.path}: its parent directory is gone, so it stays absent`);
    return;
  }
  await restore(run, st);
}

/** Every step back, last first: DIR ends as the base had it, except paths someone else changed (returned, with why). */
export async function rollBack(run: StepRun): Promise<string[]> {
  for (const st of [...run.steps].reverse()) {
    await recheckTarget(run.t);
    await backward(run, st);
  }
  return run.kept;
}
