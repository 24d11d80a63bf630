// One handle for what a session operation holds: the session's lease, the store's object lease
// and the journal intent, taken in that order and let go together (jj's LockedLocalWorkingCopy).
// `finish()` is the commit: the intent goes (nothing is left for gc to finish or undo), then the
// leases. `release()` lets go of the leases and leaves an intent that was not finished where gc
// finds it, as a crash would. An operation whose intent comes after some work of its own (create:
// after the import, under the store lock) opens the handle first and writes the intent with
// `begin()`. Either way the intent is written before the operation makes anything, and the
// operation writes its final state before it finishes.
import { join } from 'node:path';
import type { Intent, IntentOp } from '../records/journal.js';
import type { StoreContext } from '../records/session-record.js';
import { acquireDiscardLease, acquireLease, type Lease } from './lease.js';
import type { LockOwner } from './lock.js';
import { acquireObjectLease } from './object-lease.js';

/** What the intent says: its operation, whom it concerns, the facts recovery needs. */
export interface IntentSpec {
  op: IntentOp;
  session?: string;
  env?: string;
  detail?: Record<string, string | null>;
  /** false: not fsynced (checkpoint: its intent only lets doctor report a crash; see Journal.begin). */
  sync?: boolean;
}

export interface OperationSpec {
  /** The session whose lease is taken: its name and directory (`<store>/sessions/<name>`). */
  session?: { name: string; dir: string };
  /**
   * The session lease and its purpose (what a refused caller is told holds it); none without.
   * `writer` (run) and `exclusive` (checkpoint) refuse a busy session at once (E_LEASE_BUSY naming
   * the holder); `discard` is exclusive but waits out a peer discarding the same session, and its
   * lease file goes with the session directory. A session gone meanwhile is E_SESSION_NOT_FOUND.
   */
  lease?: { kind: 'exclusive' | 'writer'; purpose: string; tolerate?: (owner: LockOwner) => boolean } | { kind: 'discard' } | null;
  /** Runs once the session lease is held, before anything else is taken (checkpoint: nothing else of the session runs). */
  check?: () => Promise<void>;
  /** Hold the store's object writer lease for this purpose: gc sweeps nothing the operation installs. */
  objects?: string;
  /** Write this intent once the leases are held. */
  intent?: IntentSpec;
}

export interface Operation extends AsyncDisposable {
  /** The intent written, null before `begin()` (or for an operation that records none). */
  readonly intent: Intent | null;
  /** Write the intent, when it was not given to openOperation. */
  begin(spec: IntentSpec): Promise<Intent>;
  /** Done (or undone without a trace): the intent goes, then the leases. */
  finish(): Promise<void>;
  /** Let go of the leases; an intent not finished stays for gc. Safe to call again (and after finish). */
  release(): Promise<void>;
}

/** Release every lease, the last taken first; the first failure is thrown after all were tried. */
async function releaseAll(leases: Lease[]): Promise<void> {
  let failure: { err: unknown } | null = null;
  for (const lease of leases.splice(0).reverse()) {
    try {
      await lease.release();
    } catch (err) {
      failure ??= { err };
    }
  }
  if (failure) throw failure.err;
}

async function sessionLease(spec: OperationSpec): Promise<Lease | null> {
  const { session, lease } = spec;
  if (!lease || !session) return null;
  if (lease.kind !== 'discard') return acquireLease(join(session.dir, 'lease'), session.name, lease.kind, lease.purpose, lease.tolerate);
  const taken = await acquireDiscardLease(session.dir, session.name);
  // The lease file went with the directory: releasing finds it gone, and a failure there is no news.
  return { kind: taken.kind, release: () => taken.release().catch(() => {}) };
}

/** Take what `spec` asks for, in order (session lease, check, object lease, intent); on a failure, let go of what was taken. */
export async function openOperation(ctx: StoreContext, spec: OperationSpec): Promise<Operation> {
  const leases: Lease[] = [];
  let intent: Intent | null = null;
  let finished = false;
  const begin = async (what: IntentSpec): Promise<Intent> => {
    const { op, sync, ...fields } = what;
    intent = await ctx.journal.begin(op, fields, sync === undefined ? {} : { sync });
    return intent;
  };
  const release = () => releaseAll(leases);
  try {
    const lease = await sessionLease(spec);
    if (lease) leases.push(lease);
    await spec.check?.();
    if (spec.objects !== undefined) leases.push(await acquireObjectLease(ctx.store, spec.objects));
    if (spec.intent) await begin(spec.intent);
  } catch (err) {
    await release();
    throw err;
  }
  return {
    get intent() {
      return intent;
    },
    begin,
    async finish() {
      try {
        if (intent && !finished) await ctx.journal.end(intent);
        finished = true;
      } finally {
        await release();
      }
    },
    release,
    [Symbol.asyncDispose]: release,
  };
}
