// The plan of an apply, derived from its Changeset alone: the store holds the Changeset (hashed,
// immutable), and the intent in the store's journal names it, the target directory (path, device,
// inode) and the phase. Nothing of the plan is ever read from the target, so recovery runs only
// what the store itself wrote, and checks every path of it again as a contract path.
//
// One step per path and part: a `remove` (the base's entry goes), an `add` (the result's entry
// comes) or a `replace` (a file or symlink changes in place). Removals at or below a retyped path
// come first, deepest first (a directory empties before it goes); then adds and replaces,
// shallowest first (a directory before what it holds); then the remaining deletes, deepest first.
import { isDigest, type Digest } from '../../../model/canonical-json.js';
import { PdbError, isPdbError } from '../../../model/errors.js';
import { ADMIN_ROOTS } from '../../../model/scan/scan.js';
import { assertContractPath, entryKey, type Change, type Changeset, type Entry } from '../../../model/snapshot.js';
import type { Intent } from '../../records/journal.js';

export type StepOp = 'remove' | 'add' | 'replace';

export interface Step {
  /** The change's index in the Changeset: names its staged and displaced files. */
  index: number;
  op: StepOp;
  path: string;
  /** What the path holds before the step (null: absent), after it, and once the whole change is done. */
  pre: Entry | null;
  post: Entry | null;
  final: Entry | null;
  /** Which part of the apply the step belongs to (a crash point marks the end of the adds). */
  phase: 'first' | 'adds' | 'deletes';
}

const depth = (p: string) => p.split('/').length;

/** Throws unless `c` is a change the contract allows: a contract path, entries of that path, digests where files are. */
function assertChange(c: Change, i: number): void {
  assertContractPath(c.path);
  const top = c.path.split('/')[0]!;
  if ((ADMIN_ROOTS as readonly string[]).includes(top))
    throw new PdbError(
      'E_BAD_PATH',
      `change ${i} names ${c.path}, inside the admin root ${top}, which no scan records and apply never writes`,
      {
        path: c.path,
      },
    );
  for (const e of [c.before, c.after]) {
    if (e === null) continue;
    const ok =
      e.path === c.path &&
      (e.kind === 'dir' ||
        (e.kind === 'symlink' && typeof e.target === 'string') ||
        (e.kind === 'file' && isDigest(e.digest) && Number.isInteger(e.size) && typeof e.exec === 'boolean'));
    if (!ok) throw new PdbError('E_RECORD_CORRUPT', `change ${i} (${c.path}) of the Changeset is not a contract entry`);
  }
  const same = c.before && c.after && entryKey(c.before) === entryKey(c.after);
  if ((c.before === null && c.after === null) || same) throw new PdbError('E_RECORD_CORRUPT', `change ${i} (${c.path}) changes nothing`);
}

/** The steps of applying `changes`, in order. Throws E_BAD_PATH or E_RECORD_CORRUPT for a change the contract does not allow. */
export function applySteps(changes: readonly Change[]): Step[] {
  const seen = new Set<string>();
  changes.forEach((c, i) => {
    assertChange(c, i);
    if (seen.has(c.path)) throw new PdbError('E_RECORD_CORRUPT', `the Changeset names ${c.path} twice`);
    seen.add(c.path);
  });
  const retyped = changes.filter((c) => c.before && c.after && c.before.kind !== c.after.kind).map((c) => c.path);
  const underRetype = (p: string) => retyped.some((r) => p === r || p.startsWith(`${r}/`));
  const first: Step[] = [];
  const adds: Step[] = [];
  const deletes: Step[] = [];
  changes.forEach((c, index) => {
    const base = { index, path: c.path, final: c.after };
    const inPlace = c.before && c.after && c.before.kind === c.after.kind && c.after.kind !== 'dir';
    if (inPlace) {
      adds.push({ ...base, op: 'replace', pre: c.before, post: c.after, phase: 'adds' });
      return;
    }
    if (c.before) (underRetype(c.path) ? first : deletes).push({ ...base, op: 'remove', pre: c.before, post: null, phase: 'first' });
    if (c.after) adds.push({ ...base, op: 'add', pre: null, post: c.after, phase: 'adds' });
  });
  const deepest = (a: Step, b: Step) => depth(b.path) - depth(a.path);
  for (const d of deletes) d.phase = 'deletes';
  return [...first.sort(deepest), ...adds.sort((a, b) => depth(a.path) - depth(b.path)), ...deletes.sort(deepest)];
}

// done: every change settled (forward or back), only the staging left to remove.
export const APPLY_PHASES = ['staging', 'applying', 'rolling-back', 'done'] as const;
export type ApplyPhase = (typeof APPLY_PHASES)[number];

/** What an apply intent records (strings, as every intent's detail). */
export interface ApplyDetail {
  dir: string;
  dev: string;
  ino: string;
  changeset: Digest;
  phase: ApplyPhase;
  /**
   * 32 hex digits of randomness, also written into the staging's marker in DIR before the first
   * change there: recovery acts only where DIR corroborates the intent (staging.ts). Null in an
   * intent written before there was one.
   */
  nonce: string | null;
}

/** The nonce an apply intent records (32 hex digits), or null: none, or not one apply writes. */
export function applyNonce(d: Record<string, unknown>): string | null {
  return typeof d.nonce === 'string' && /^[0-9a-f]{32}$/.test(d.nonce) ? d.nonce : null;
}

/** The detail an apply intent is written with. */
export function applyDetail(d: ApplyDetail): Record<string, string> {
  return { dir: d.dir, dev: d.dev, ino: d.ino, changeset: d.changeset, phase: d.phase, ...(d.nonce ? { nonce: d.nonce } : {}) };
}

/** An apply intent's detail and the changes of its Changeset (read from the store), or why it is not one this store wrote. */
export function readApplyIntent(
  store: { getDocument<T>(d: Digest, what?: string): T },
  intent: Intent,
): { detail: ApplyDetail; changes: Change[]; steps: Step[] } | { foreign: string } {
  const d = intent.detail;
  if (typeof d.dir !== 'string' || !d.dir.startsWith('/')) return { foreign: 'it names no absolute target directory' };
  if (!/^[0-9]+$/.test(d.dev ?? '') || !/^[0-9]+$/.test(d.ino ?? '')) return { foreign: 'it names no device and inode of its target' };
  if (!isDigest(d.changeset)) return { foreign: 'it names no Changeset' };
  if (!APPLY_PHASES.includes(d.phase as ApplyPhase)) return { foreign: `unknown phase ${JSON.stringify(d.phase)}` };
  try {
    const doc = store.getDocument<Partial<Changeset>>(d.changeset, 'Changeset');
    if (!doc || !Array.isArray(doc.changes)) return { foreign: `${d.changeset} is not a Changeset` };
    const changes = doc.changes;
    const steps = applySteps(changes);
    const detail = { dir: d.dir, dev: d.dev!, ino: d.ino!, changeset: d.changeset, phase: d.phase as ApplyPhase, nonce: applyNonce(d) };
    return { detail, changes, steps };
  } catch (err) {
    // A missing or corrupt object is the store's damage, not a foreign plan: reported, the intent kept.
    if (isPdbError(err, 'E_OBJECT_MISSING') || isPdbError(err, 'E_OBJECT_CORRUPT') || isPdbError(err, 'E_IO')) throw err;
    return { foreign: `its Changeset cannot be used (${(err as Error).message})` };
  }
}
