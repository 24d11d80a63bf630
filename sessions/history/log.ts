// A session's history: the checkpoint log (`checkpoints.jsonl`, one JSON line per checkpoint,
// appended when the checkpoint is recorded) read back as numbered checkpoints, and a REF (a number,
// a Snapshot or Changeset digest prefix, `base`) resolved against it. Lines written before labels
// and counts existed ({snapshot, changeset, at}) read as checkpoints without them; a line cut short
// by a crash is skipped (its checkpoint, if it finished, is also in session.json).
import type { Digest } from '../../model/canonical-json.js';
import { PdbError } from '../../model/errors.js';
import type { ObjectStore } from '../../model/store/object-store.js';
import { keptDocument } from '../../model/store/kept-documents.js';
import { diffEntries, diffThroughBase, type Change, type Changeset, type Snapshot } from '../../model/snapshot.js';
import { diffSnapshotBytes } from '../../model/snapshot-diff.js';
import { MIN_DIGEST_PREFIX } from '../records/digests.js';
import { SESSION_NAME_PATTERN } from '../records/names.js';
import { readLogLines, readSession, type CheckpointLine, type StoreContext, type TurnMark } from '../records/session-record.js';

export { readLogLines, type CheckpointLine, type TurnMark };

/**
 * The turn a hook's checkpoint brackets. The agent's own id when its payload has one (Codex's
 * turn-id, Cursor's generation_id); else, before a turn, the next ordinal of this agent's turns in
 * the session's log, and after one, the turn of this agent's last "before".
 */
export function turnMark(lines: CheckpointLine[], agent: string, phase: TurnMark['phase'], id: string | null): TurnMark {
  if (id) return { agent, turn: id.slice(0, 40), phase };
  const befores = lines.filter((l) => l.agent === agent && l.phase === 'before' && l.turn);
  if (phase === 'after' && befores.length) return { agent, turn: befores.at(-1)!.turn!, phase };
  return { agent, turn: String(lines.filter((l) => l.agent === agent && l.phase === 'before').length + 1), phase };
}

/** A checkpoint of the log with its number (1 = the first) and whether gc has collected its Snapshot. */
export interface Checkpoint extends CheckpointLine {
  number: number;
  collected: boolean;
}

/** Every checkpoint of the session, oldest first, numbered from 1. */
export async function sessionLog(ctx: StoreContext, name: string): Promise<{ session: string; base: Digest; checkpoints: Checkpoint[] }> {
  const rec = await readSession(ctx.store, name);
  const checkpoints = readLogLines(ctx.store, name).map((l, i) => ({ ...l, number: i + 1, collected: !ctx.store.has(l.snapshot) }));
  return { session: name, base: rec.base, checkpoints };
}

/** What a REF names: a Snapshot of the session (with its checkpoint number; 0 for the base). */
export interface ResolvedRef {
  ref: string;
  snapshot: Digest;
  /** Its checkpoint's number, 0 for the base. */
  number: number;
  /** Its checkpoint's Changeset (against the base it was taken on); null for the base. */
  changeset: Digest | null;
}

/** Resolve REF against the session's history: a checkpoint number, `base`, or a digest prefix of one of its Snapshots or Changesets. */
export async function resolveRef(ctx: StoreContext, name: string, ref: string): Promise<ResolvedRef> {
  // The log's lines without asking the store about each (sessionLog's `collected`): a REF names one line.
  const base = (await readSession(ctx.store, name)).base;
  const checkpoints = readLogLines(ctx.store, name).map((l, i) => ({ ...l, number: i + 1 }));
  const hint = `pdb-env log ${name} lists the checkpoints; REF is a number, base, label:LABEL, or a digest prefix of ${MIN_DIGEST_PREFIX}+ hex characters.`;
  if (ref === 'base') return { ref, snapshot: base, number: 0, changeset: null };
  if (ref.startsWith('label:')) {
    // A turn's label (pdb-env hook AGENT writes "AGENT before turn ID: PROMPT"): the newest checkpoint with exactly that label.
    const want = ref.slice('label:'.length);
    const cp = [...checkpoints].reverse().find((c) => c.label === want);
    if (!cp) throw new PdbError('E_DIGEST_UNKNOWN', `session "${name}" has no checkpoint labelled "${want}"`, { hint });
    return { ref, snapshot: cp.snapshot, number: cp.number, changeset: cp.changeset };
  }
  if (/^[0-9]+$/.test(ref) && ref.length < MIN_DIGEST_PREFIX) {
    const n = Number(ref);
    const cp = checkpoints[n - 1];
    if (!cp) throw new PdbError('E_DIGEST_UNKNOWN', `session "${name}" has no checkpoint ${ref} (it has ${checkpoints.length})`, { hint });
    return { ref, snapshot: cp.snapshot, number: n, changeset: cp.changeset };
  }
  const hex = (ref.startsWith('sha256:') ? ref.slice(7) : ref).toLowerCase();
  if (!/^[0-9a-f]+$/.test(hex) || hex.length < MIN_DIGEST_PREFIX)
    throw new PdbError('E_USAGE', `"${ref}" is not a checkpoint number, base, or a digest prefix of ${MIN_DIGEST_PREFIX}+ hex characters`, {
      hint,
    });
  const found = new Map<Digest, [number, Digest | null]>();
  const starts = (d: Digest) => d.slice(7).startsWith(hex);
  if (starts(base)) found.set(base, [0, null]);
  // The newest checkpoint that has it: a Snapshot taken again (nothing changed) has one number per take.
  checkpoints.forEach((cp) => {
    if (starts(cp.snapshot) || starts(cp.changeset)) found.set(cp.snapshot, [cp.number, cp.changeset]);
  });
  if (found.size === 0)
    throw new PdbError('E_DIGEST_UNKNOWN', `no checkpoint of session "${name}" has a digest starting with ${hex}`, { hint });
  if (found.size > 1)
    throw new PdbError('E_DIGEST_AMBIGUOUS', `${hex} names ${found.size} Snapshots of session "${name}": ${[...found.keys()].join(', ')}`, {
      hint: 'Give more hex characters, or the checkpoint number.',
    });
  const [snapshot, [number, changeset]] = [...found][0]!;
  return { ref, snapshot, number, changeset };
}

/** E_OBJECT_MISSING, saying gc collected the checkpoint, unless its Snapshot is in the store (read nothing). */
export function assertInHistory(ctx: StoreContext, name: string, r: ResolvedRef): void {
  if (!ctx.store.has(r.snapshot))
    throw new PdbError('E_OBJECT_MISSING', `the Snapshot of ${r.ref} (${r.snapshot}) of session "${name}" is no longer in the store`, {
      hint: 'gc keeps the last history.keep checkpoints of a session (pdb-env.json; default 100) and pinned ones: pdb-env pin DIGEST keeps one.',
    });
}

/** The Snapshot `digest`, or E_OBJECT_MISSING saying gc collected the checkpoint. */
export function historySnapshot(ctx: StoreContext, name: string, r: ResolvedRef): Snapshot {
  assertInHistory(ctx, name, r);
  return ctx.store.getDocument<Snapshot>(r.snapshot, 'Snapshot');
}

/** The canonical bytes of the Snapshot `digest` (checked against it), or E_OBJECT_MISSING as historySnapshot. */
function historyBytes(ctx: StoreContext, name: string, r: ResolvedRef): Buffer {
  assertInHistory(ctx, name, r);
  return ctx.store.getBytes(r.snapshot);
}

/** A point of history as its changes against a base: the base itself (none), or its checkpoint's Changeset; null when that is gone. */
export function changesFromBase(ctx: StoreContext, r: ResolvedRef): { base: Digest; changes: Change[] } | null {
  if (r.changeset === null) return { base: r.snapshot, changes: [] };
  if (!ctx.store.has(r.changeset)) return null;
  // The session's last checkpoints' Changesets are kept by the checkpoints that wrote them (frozen).
  const cs = keptDocument<Changeset>(ctx.store, r.changeset, 'Changeset');
  return cs.result === r.snapshot ? { base: cs.base, changes: cs.changes } : null;
}

/**
 * The changes from A to B, two points of a session's history. When both are described against one
 * base (every checkpoint's Changeset is cumulative from the session's base), only the paths their
 * Changesets name can differ: O(changes), no Snapshot is read. Otherwise (one was taken before a
 * publish --rebase moved the session's base, a fork's history, a Changeset gone) the two whole
 * Snapshots are diffed.
 */
export function diffHistory(ctx: StoreContext, name: string, a: ResolvedRef, b: ResolvedRef, nameOfB = name): Change[] {
  assertInHistory(ctx, name, a);
  assertInHistory(ctx, nameOfB, b);
  if (a.snapshot === b.snapshot) return [];
  // Two sessions made from one base (two agents' sessions of one head) share it too: O(changes) still.
  const [ca, cb] = [changesFromBase(ctx, a), changesFromBase(ctx, b)];
  if (ca && cb && ca.base === cb.base) return diffThroughBase(ca.changes, cb.changes);
  // Merged from the two documents' bytes, not parsed into entries (model/snapshot-diff.ts).
  return diffSnapshotBytes(historyBytes(ctx, name, a), historyBytes(ctx, nameOfB, b), () =>
    diffEntries(historySnapshot(ctx, name, a).entries, historySnapshot(ctx, nameOfB, b).entries),
  );
}

export interface CheckpointDiff {
  session: string;
  /** Each side with the session it is of (SESSION@REF names another session's checkpoint). */
  from: ResolvedRef & { session: string };
  to: ResolvedRef & { session: string };
  changes: Change[];
}

/**
 * A REF of `name`, or `SESSION@REF`: REF of another session (session names have no "@", and no
 * REF of one session starts with a session name and "@": a label REF starts with "label:").
 */
export function qualifiedRef(name: string, ref: string): { session: string; ref: string } {
  const at = ref.indexOf('@');
  return at > 0 && SESSION_NAME_PATTERN.test(ref.slice(0, at))
    ? { session: ref.slice(0, at), ref: ref.slice(at + 1) }
    : { session: name, ref };
}

/** The changes from checkpoint FROM to checkpoint TO of a session, or of two (SESSION@REF on either side; read-only). */
export async function diffCheckpoints(ctx: StoreContext, name: string, from: string, to: string): Promise<CheckpointDiff> {
  const [qa, qb] = [qualifiedRef(name, from), qualifiedRef(name, to)];
  const a = { ...(await resolveRef(ctx, qa.session, qa.ref)), session: qa.session };
  const b = { ...(await resolveRef(ctx, qb.session, qb.ref)), session: qb.session };
  return { session: name, from: a, to: b, changes: diffHistory(ctx, qa.session, a, b, qb.session) };
}

/** Added, modified and deleted paths among `changes`. */
export function changeCounts(changes: Iterable<Pick<Change, 'before' | 'after'>>): { added: number; modified: number; deleted: number } {
  const c = { added: 0, modified: 0, deleted: 0 };
  for (const ch of changes) {
    if (!ch.before) c.added++;
    else if (!ch.after) c.deleted++;
    else c.modified++;
  }
  return c;
}
