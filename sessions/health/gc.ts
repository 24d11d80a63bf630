// gc: finish or undo what doctor found, safely next to live work. It decides under the store lock
// (so no create is between its intent and its directory), touches only what belongs to a process
// that is gone, takes a session's exclusive lease before removing it, and moves what it removes
// into the store's tmp under its own name, deleting it there after the lock is released. It never
// deletes a session whose record it cannot read: the record goes to the quarantine, the files stay.
// Then it marks from the roots and sweeps the objects and materialized bases nothing reaches
// (sessions/health/sweep.ts); the quarantine is never emptied. A step that fails is reported with
// what it was about and skipped: gc goes on with the rest (the sweep included) and its result lists
// every failure, so one stuck recovery never wedges the others; a failed intent keeps why in the
// journal for doctor.
import { assertNoForeignMount } from './root-mount.js';
import { lstat, mkdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { sessionBackend } from '../lifecycle/backend-of.js';
import { isPdbError, toPdbError, type PdbErrorCode } from '../../model/errors.js';
import { tempName } from '../../model/store/object-store.js';
import { formatBytes } from '../../model/progress.js';
import { removeTree } from '../../model/os/remove-tree.js';
import { makeReserve, releaseReserve } from '../../model/store/reserve.js';
import { doctor, type Finding } from './doctor.js';
import type { Intent } from '../records/journal.js';
import { tryAcquireLease } from '../locks/lease.js';
import { breakStale, inspectLock } from '../locks/lock.js';
import {
  backendContext,
  readSession,
  recordFile,
  recoverHint,
  sessionDir,
  type SessionRecord,
  type StoreContext,
} from '../records/session-record.js';
import { removeEntry } from '../locks/safe-fs.js';
import { withStoreLock } from '../locks/store-lock.js';
import { sweep } from './sweep.js';

export interface GcResult {
  /** What was done (or, with dryRun, would be done), one line each. */
  actions: string[];
  /** What a person still has to do: damaged sessions to recover, busy sessions skipped. */
  notes: string[];
  /** What the sweep freed (dry run: would free): unreachable objects and materialized bases, in bytes on disk. */
  freed: { objects: number; bases: number; bytes: number };
  /** Steps that failed and were skipped (gc did everything else); the CLI exits 1 when there are any. */
  failed: GcFailure[];
}

export interface GcFailure {
  /** What the step was about: the finding (kind, id, session) or the tree being deleted. */
  what: string;
  code: PdbErrorCode;
  message: string;
  hint: string | null;
  path: string | null;
}

interface Pass {
  ctx: StoreContext;
  dryRun: boolean;
  actions: string[];
  notes: string[];
  /** Session trees moved aside, deleted after the store lock is released. */
  trash: string[];
  intents: Array<Intent & { live: boolean }>;
  failed: GcFailure[];
  freed: GcResult['freed'];
}

/** Run one step; a failure is recorded (and kept in its intent, for doctor) and gc goes on. */
async function attempt(pass: Pass, what: string, step: () => Promise<void>, intent?: Intent): Promise<void> {
  try {
    await step();
  } catch (err) {
    const e = toPdbError(err, 'E_IO');
    pass.failed.push({ what, code: e.code, message: e.message, hint: e.hint ?? null, path: e.path ?? null });
    if (intent && !pass.dryRun) await pass.ctx.journal.recordFailure(intent, e);
  }
}

const findingName = (f: Finding) => `${f.kind} ${f.id}${f.session && f.session !== f.id ? ` (session ${f.session})` : ''}`;

/** Finish or remove what `doctor` found. With dryRun, only report. */
export async function gc(ctx: StoreContext, options: { dryRun?: boolean } = {}): Promise<GcResult> {
  const pass: Pass = {
    ctx,
    dryRun: options.dryRun ?? false,
    actions: [],
    notes: [],
    trash: [],
    intents: [],
    failed: [],
    freed: { objects: 0, bases: 0, bytes: 0 },
  };
  // Room first: on a full filesystem the lock, the sweep lease and the generation need the inodes
  // and blocks the reserve kept aside (model/store/reserve.ts); it is made again once gc has swept.
  if (!pass.dryRun) releaseReserve(ctx.store.paths.root);
  try {
    await collect(pass);
  } finally {
    if (!pass.dryRun) makeReserve(ctx.store.paths.root);
  }
  return {
    actions: [...new Set(pass.actions)],
    notes: pass.notes,
    freed: pass.freed,
    failed: pass.failed,
  };
}

async function collect(pass: Pass): Promise<void> {
  const { ctx } = pass;
  await withStoreLock(ctx.store, 'gc', async () => {
    pass.intents = await ctx.journal.list();
    for (const f of await doctor(ctx, { objects: false }))
      if (f.fix === 'gc')
        await attempt(
          pass,
          findingName(f),
          () => fix(pass, f),
          f.kind === 'abandoned-intent' ? pass.intents.find((i) => i.id === f.id) : undefined,
        );
  });
  // Outside the lock: a create need not wait for a large delete.
  for (const t of pass.trash) await attempt(pass, `deleting ${t}`, () => removeTree(t));
  let swept: Awaited<ReturnType<typeof sweep>> = { objects: 0, objectBytes: 0, bases: 0, baseBytes: 0, skipped: null };
  await attempt(pass, 'the sweep of unreachable objects and bases', async () => {
    swept = await sweep(ctx, pass.dryRun);
  });
  if (swept.skipped) pass.notes.push(`nothing swept: ${swept.skipped}`);
  if (swept.objects > 0) pass.actions.push(`remove ${swept.objects} unreachable objects (${formatBytes(swept.objectBytes)})`);
  if (swept.bases > 0) pass.actions.push(`remove ${swept.bases} materialized bases no root uses (${formatBytes(swept.baseBytes)})`);
  pass.freed = { objects: swept.objects, bases: swept.bases, bytes: swept.objectBytes + swept.baseBytes };
}

async function fix(pass: Pass, f: Finding): Promise<void> {
  const { ctx } = pass;
  switch (f.kind) {
    case 'abandoned-intent': {
      const intent = pass.intents.find((i) => i.id === f.id);
      if (intent) await recover(pass, intent);
      break;
    }
    case 'bad-intent':
      pass.actions.push(`quarantine journal entry ${f.id}`);
      if (!pass.dryRun) await ctx.journal.quarantine(f.id);
      break;
    case 'untrusted-intent':
      // Never run: what it names is not what the store did (sessions/health/intent-trust.ts).
      pass.actions.push(`quarantine intent ${f.id}, not run`);
      pass.notes.push(`intent ${f.id} was not run: ${f.detail}; it is in ${ctx.store.paths.quarantine}/journal`);
      if (!pass.dryRun) await ctx.journal.quarantine(`${f.id}.json`);
      break;
    case 'unfinished-session':
    case 'orphan-session-dir':
      await removeSession(pass, f.session!, `${f.kind === 'orphan-session-dir' ? 'empty, without a record' : f.detail}`);
      break;
    case 'damaged-session':
      await quarantineRecord(pass, f.session!);
      break;
    case 'foreign-entry':
    case 'temp-file':
    case 'ended-process-record':
      pass.actions.push(`remove ${f.kind === 'temp-file' ? 'temp ' : ''}${f.id}`);
      if (!pass.dryRun)
        await removeEntry(
          f.kind === 'temp-file' && !f.id.includes('/') ? join(ctx.store.paths.tmp, f.id) : join(ctx.store.paths.root, f.id),
        );
      break;
    case 'stale-lock': {
      pass.actions.push(`break stale lock ${f.id}`);
      const path = join(ctx.store.paths.root, f.id);
      const found = await inspectLock(path);
      if (!pass.dryRun && found.state === 'stale') await breakStale(path, found.fingerprint);
      break;
    }
    default:
      break; // reported only: live leases, unknown temps, damaged environments, objects
  }
}

/** Finish or undo an operation whose process is gone. */
async function recover(pass: Pass, intent: Intent): Promise<void> {
  const name = intent.session;
  const otherLive = pass.intents.some((i) => i.live && i.session === name);
  if (name && !otherLive && (intent.op === 'create' || intent.op === 'discard')) await undoOrFinish(pass, intent, name);
  // checkpoint and publish: objects are immutable and heads are written atomically; nothing to undo.
  // apply: finish it in the target directory, roll it back, or remove its staging (sessions/way-back/apply/).
  if (intent.op === 'apply') {
    const r = await (await import('../way-back/apply/recover.js')).recoverApply(pass.ctx, intent, pass.dryRun);
    pass.actions.push(r.action);
    if (r.note) pass.notes.push(r.note);
    if (r.quarantine) {
      pass.notes.push(`apply intent ${intent.id} was not run: ${r.quarantine}; it is in ${pass.ctx.store.paths.quarantine}`);
      if (!pass.dryRun) await pass.ctx.journal.quarantine(`${intent.id}.json`);
      return;
    }
  }
  // restore: roll forward to its target (sessions/history/restore.ts); one that wrote nothing is dropped.
  if (intent.op === 'restore')
    pass.actions.push(await (await import('../history/restore.js')).recoverRestore(pass.ctx, intent, pass.dryRun));
  if (intent.op === 'export') pass.actions.push(await (await import('../way-back/patch.js')).recoverExport(intent, pass.dryRun));
  pass.actions.push(`drop intent ${intent.id} (${intent.op})`);
  if (!pass.dryRun) await pass.ctx.journal.remove(intent.id);
}

/**
 * A create that never reached "ready" is undone; a discard is finished. Each acts only on the
 * session as that operation left it: a session made after a discard's intent (the name freed and
 * taken again) is left alone, and a record that cannot be read is quarantined, not deleted, unless
 * the user asked for the session to go (discard).
 */
async function undoOrFinish(pass: Pass, intent: Intent, name: string): Promise<void> {
  if (!(await lstat(sessionDir(pass.ctx.store, name)).catch(() => null))?.isDirectory()) return;
  let rec: SessionRecord;
  try {
    rec = await readSession(pass.ctx.store, name);
  } catch (err) {
    if (!isPdbError(err, 'E_RECORD_CORRUPT')) throw err;
    const hasRecordFile = (await lstat(recordFile(pass.ctx.store, name)).catch(() => null)) !== null;
    if (hasRecordFile && intent.op === 'create') await quarantineRecord(pass, name);
    else await removeSession(pass, name, `${intent.op} interrupted${hasRecordFile ? '' : ' before its record was written'}`);
    return;
  }
  if (intent.op === 'create' ? rec.state !== 'ready' : rec.createdAt <= intent.startedAt)
    await removeSession(pass, name, `${intent.op} interrupted`);
}

/**
 * Remove a session nobody works on: take its exclusive lease (skip it when a live process holds
 * one), release its backend (unmount, delete a subvolume) and move its directory aside.
 */
async function removeSession(pass: Pass, name: string, why: string): Promise<void> {
  const { ctx } = pass;
  pass.actions.push(`remove session ${name} (${why})`);
  if (pass.dryRun) return;
  const dir = sessionDir(ctx.store, name);
  const attempt = await tryAcquireLease(join(dir, 'lease'), 'exclusive', 'gc');
  if (!attempt.lease && attempt.gone) return;
  if (!attempt.lease) {
    pass.notes.push(`session ${name} skipped: process ${attempt.holder?.pid ?? '?'} holds a ${attempt.kind} lease on it`);
    return;
  }
  const trash = tempName(ctx.store.paths, 'gc-trash');
  try {
    const rec = await readSession(ctx.store, name).catch(() => null);
    assertNoForeignMount(ctx.store, name, rec?.backend ?? null, 'gc');
    if (rec) {
      const backend = await sessionBackend(rec);
      await backend.release(backendContext(ctx.store, rec.sourceDir ?? undefined), join(dir, 'root'), dir, rec.backendState);
    }
    await rename(dir, trash);
  } catch (err) {
    await attempt.lease.release().catch(() => {}); // rollback: the session stays as it was, free for the next try
    throw toPdbError(err, 'E_IO', { action: `removing session ${name}`, path: dir });
  }
  pass.trash.push(trash);
}

/** Move an unreadable session record to `<store>/quarantine/records/`; the session's files stay where they are. */
async function quarantineRecord(pass: Pass, name: string): Promise<void> {
  const { ctx } = pass;
  const to = join(ctx.store.paths.quarantine, 'records', `${name}.session.json.${new Date().toISOString().replace(/[:.]/g, '')}`);
  pass.actions.push(`quarantine the damaged record of session ${name} (kept as ${to}); its files stay`);
  pass.notes.push(`session ${name}: ${recoverHint(ctx.store, name)}`);
  if (pass.dryRun) return;
  try {
    await mkdir(join(ctx.store.paths.quarantine, 'records'), { recursive: true });
    await rename(recordFile(ctx.store, name), to);
  } catch (err) {
    throw toPdbError(err, 'E_IO', {
      action: `moving the damaged record of session ${name} to the quarantine`,
      path: recordFile(ctx.store, name),
    });
  }
}
