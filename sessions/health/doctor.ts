// Doctor: what a crash, a reboot or damage left in the store, each finding with what fixes it
// (`gc`, or a command for a person to run). It lists; it changes nothing.
import { lstat, readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { isPdbError } from '../../model/errors.js';
import { REPAIR_HINT } from '../../model/store/object-store.js';
import { parseTempName, tempOwnerAlive } from '../../model/os/temp-name.js';
import { isProcessAlive } from '../../model/os/proc.js';
import { envHead, headRepair, snapshotProblem } from '../records/environments.js';
import { checkReachable } from './integrity.js';
import { untrustedIntent, untrustedRepair } from './intent-trust.js';
import type { Intent } from '../records/journal.js';
import { GARBAGE_GRACE_MS, inspectLock } from '../locks/lock.js';
import { objectLeaseDir } from '../locks/object-lease.js';
import { readSession, recordFile, recoverHint, type StoreContext } from '../records/session-record.js';
import { SESSION_NAME_PATTERN } from '../records/names.js';

export type FindingKind =
  | 'abandoned-intent'
  | 'bad-intent'
  | 'untrusted-intent'
  | 'unfinished-session'
  | 'damaged-session'
  | 'orphan-session-dir'
  | 'foreign-entry'
  | 'damaged-env'
  | 'temp-file'
  | 'unknown-temp'
  | 'stale-lock'
  | 'unreadable-lock'
  | 'active-lease'
  | 'corrupt-object'
  | 'missing-object'
  | 'stray-process'
  | 'ended-process-record';

export interface Finding {
  kind: FindingKind;
  id: string;
  session: string | null;
  detail: string;
  /** 'gc' when `pdb-env gc` can finish or remove it. */
  fix: 'gc' | null;
  /** What a person does when gc cannot repair it (or after gc). */
  repair: string | null;
}

/** An unknown name in the store's tmp is removed by gc only once it is clearly old. */
export const UNKNOWN_TEMP_AGE_MS = 24 * 60 * 60 * 1000;

type Live = Array<Intent & { live: boolean }>;

/** Environment files (`main.json`) share their directory with their locks (`main.json.lock`): only the latter are locks. */
const isLockName = (name: string) => name.endsWith('.lock');

function finding(kind: FindingKind, id: string, detail: string, fix: 'gc' | null, extra: Partial<Finding> = {}): Finding {
  return { kind, id, session: null, detail, fix, repair: null, ...extra };
}

/** Does the directory hold any file, link or other non-directory entry (anything a person could lose)? */
async function holdsFiles(dir: string): Promise<boolean> {
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (!e.isDirectory()) return true;
    if (await holdsFiles(join(dir, e.name))) return true;
  }
  return false;
}

async function journalFindings(ctx: StoreContext, intents: Live, bad: Array<{ file: string; reason: string }>): Promise<Finding[]> {
  const out = bad.map((b) =>
    finding('bad-intent', b.file, `journal entry ${b.file} is not a usable intent (${b.reason}); it is never followed`, 'gc', {
      repair: 'pdb-env gc moves it to the quarantine',
    }),
  );
  for (const i of intents) {
    if (i.live) continue;
    const untrusted = await untrustedIntent(ctx, i);
    if (untrusted) {
      out.push(
        finding(
          'untrusted-intent',
          i.id,
          `${i.op} intent ${i.id} does not match what the store did (${untrusted}); it is never run`,
          'gc',
          {
            session: i.session ?? null,
            repair: untrustedRepair(ctx, i),
          },
        ),
      );
      continue;
    }
    // gc tried and failed: say why, and what to fix before gc can finish it.
    const stuck = i.failure ? `; gc could not finish it: ${i.failure.code} ${i.failure.message}` : '';
    out.push(
      finding('abandoned-intent', i.id, `${i.op} started ${i.startedAt} by process ${i.pid}, which is gone${stuck}`, 'gc', {
        session: i.session ?? null,
        repair: i.failure ? `${i.failure.hint ?? 'Fix what the message names.'} Then run pdb-env gc again.` : null,
      }),
    );
  }
  return out;
}

/** One session directory: damaged, unfinished, orphaned; plus its leases and lock leftovers. */
async function sessionFinding(ctx: StoreContext, name: string, intents: Live): Promise<Finding[]> {
  const live = intents.some((i) => i.live && i.session === name);
  const deadCreate = intents.some((i) => !i.live && i.op === 'create' && i.session === name);
  try {
    const rec = await readSession(ctx.store, name);
    // A dead discard's intent finishes it (or, untrusted, is quarantined first and this is reported next time).
    const deadDiscard = intents.some((i) => !i.live && i.op === 'discard' && i.session === name);
    if (rec.state !== 'ready' && !live && !(rec.state === 'discarding' && deadDiscard))
      return [finding('unfinished-session', name, `state is ${rec.state} and no live process works on it`, 'gc', { session: name })];
    return [];
  } catch (err) {
    if (!isPdbError(err, 'E_RECORD_CORRUPT')) throw err;
    if (live || deadCreate) return []; // being created; or an interrupted create that gc undoes through its intent
    const dir = join(ctx.store.paths.sessions, name);
    const hasRecord = (await lstat(recordFile(ctx.store, name)).catch(() => null)) !== null;
    if (!hasRecord && !(await holdsFiles(dir)))
      return [finding('orphan-session-dir', name, 'a session directory without a record or any file', 'gc', { session: name })];
    return [
      finding('damaged-session', name, err.message, hasRecord ? 'gc' : null, {
        session: name,
        repair: `${hasRecord ? 'pdb-env gc moves the record to the quarantine (the files stay). ' : ''}${recoverHint(ctx.store, name)}`,
      }),
    ];
  }
}

/** Lock files and lock leftovers in `dir`: stale or unreadable locks, live leases, temp files of dead lock takers. */
async function lockFindings(ctx: StoreContext, dir: string, session: string | null, isLock: (name: string) => boolean): Promise<Finding[]> {
  const out: Finding[] = [];
  if (!(await lstat(dir).catch(() => null))?.isDirectory()) return out;
  for (const name of (await readdir(dir).catch(() => [] as string[])).sort()) {
    const path = join(dir, name);
    const id = relative(ctx.store.paths.root, path);
    if (name.startsWith('.')) {
      // The lock primitive's temp and set-aside files: `.<lock>.<kind>.<pid>.<start>.<random>`.
      const alive = tempOwnerAlive(name.split('.').slice(-4).join('.'));
      if (alive === false) out.push(finding('temp-file', id, 'a lock temp file of a process that is gone', 'gc', { session }));
      continue;
    }
    if (!isLock(name)) continue;
    const found = await inspectLock(path);
    if (found.state === 'stale')
      out.push(
        finding(
          'stale-lock',
          id,
          `a lock left by ${found.owner ? `process ${found.owner.pid}, which is gone` : 'a crash (unreadable)'}`,
          'gc',
          { session },
        ),
      );
    else if (found.state === 'held' && !found.owner)
      out.push(
        finding('unreadable-lock', id, `an unreadable lock; gc breaks it once it is older than ${GARBAGE_GRACE_MS / 1000} s`, null, {
          session,
        }),
      );
    else if (found.state === 'held' && session)
      out.push(
        finding(
          'active-lease',
          `${session}:${found.owner!.pid}`,
          `${found.owner!.kind} lease held by live process ${found.owner!.pid} (${found.owner!.purpose})`,
          null,
          { session },
        ),
      );
  }
  return out;
}

async function sessionsFindings(ctx: StoreContext, intents: Live): Promise<Finding[]> {
  const out: Finding[] = [];
  for (const name of (await readdir(ctx.store.paths.sessions).catch(() => [] as string[])).sort()) {
    const path = join(ctx.store.paths.sessions, name);
    const st = await lstat(path).catch(() => null);
    if (!st) continue;
    if (!SESSION_NAME_PATTERN.test(name) || !st.isDirectory()) {
      const link = st.isSymbolicLink();
      out.push(
        finding(
          'foreign-entry',
          `sessions/${name}`,
          link ? 'a symlink where a session belongs (never followed)' : 'not a session directory',
          link ? 'gc' : null,
          {
            repair: link ? 'pdb-env gc removes the link itself' : `Move ${path} out of the store.`,
          },
        ),
      );
      continue;
    }
    out.push(...(await sessionFinding(ctx, name, intents)));
    out.push(...(await lockFindings(ctx, join(path, 'lease'), name, () => true)));
  }
  return out;
}

async function tempFindings(ctx: StoreContext): Promise<Finding[]> {
  const out: Finding[] = [];
  for (const name of (await readdir(ctx.store.paths.tmp).catch(() => [] as string[])).sort()) {
    const owner = parseTempName(name);
    if (owner) {
      if (!isProcessAlive(owner.pid, owner.pidStart))
        out.push(finding('temp-file', name, `temporary ${owner.kind} of process ${owner.pid}, which is gone`, 'gc'));
      continue;
    }
    const st = await lstat(join(ctx.store.paths.tmp, name)).catch(() => null);
    if (!st) continue;
    const old = Date.now() - st.mtimeMs > UNKNOWN_TEMP_AGE_MS;
    out.push(
      old
        ? finding('temp-file', name, 'a temporary file with an unknown name, older than a day', 'gc')
        : finding('unknown-temp', name, 'a temporary file with an unknown name (no owner to ask); kept until it is a day old', null),
    );
  }
  return out;
}

async function envFindings(ctx: StoreContext): Promise<Finding[]> {
  const out: Finding[] = [];
  for (const f of (await readdir(ctx.store.paths.environments).catch(() => [] as string[])).sort()) {
    const env = f.endsWith('.json') ? f.slice(0, -5) : '';
    if (!SESSION_NAME_PATTERN.test(env)) continue;
    const head = await envHead(ctx.store, env).catch((err: unknown) => {
      if (!isPdbError(err)) throw err;
      out.push(finding('damaged-env', env, err.message, null, { repair: err.hint ?? null }));
      return null;
    });
    const problem = head && snapshotProblem(ctx.store, head);
    if (problem)
      out.push(finding('damaged-env', env, `the head of environment ${env} ${problem}`, null, { repair: headRepair(ctx.store, env) }));
  }
  out.push(...(await lockFindings(ctx, ctx.store.paths.environments, null, isLockName)));
  return out;
}

async function objectFindings(ctx: StoreContext): Promise<Finding[]> {
  const out: Finding[] = [];
  const { missing, corrupt } = await checkReachable(ctx);
  const quarantined = new Set(await ctx.store.quarantinedObjects());
  for (const d of quarantined)
    if (!ctx.store.has(d))
      out.push(
        finding('corrupt-object', d, `object ${d} was corrupt and is in the quarantine; still missing`, null, { repair: REPAIR_HINT }),
      );
  for (const c of corrupt)
    out.push(
      finding('corrupt-object', c.digest, `document ${c.digest} (${c.ref}) does not match its digest`, null, { repair: REPAIR_HINT }),
    );
  for (const m of missing)
    if (!quarantined.has(m.digest))
      out.push(finding('missing-object', m.digest, `object ${m.digest} is missing (${m.ref})`, null, { repair: REPAIR_HINT }));
  return out;
}

/**
 * Processes a session's runs left: alive though their run has ended (a daemon, a server started
 * with &), or alive though the session is gone. Records whose processes and run have all ended
 * are gc's to remove.
 */
async function processFindings(ctx: StoreContext): Promise<Finding[]> {
  const { trackedProcesses, runnerAlive, describe } = await import('../runtime/processes.js');
  const out: Finding[] = [];
  for (const t of await trackedProcesses(ctx.store)) {
    const id = relative(ctx.store.paths.root, t.file);
    const name = t.record.session;
    const running = runnerAlive(t.record);
    if (t.procs.length === 0) {
      if (!running) out.push(finding('ended-process-record', id, `a record of ${name}'s run of ${t.record.pid}, all ended`, 'gc'));
      continue;
    }
    const gone = !(await lstat(recordFile(ctx.store, name)).catch(() => null));
    if (!gone && running) continue; // a live run: ps shows it
    const why = gone ? `session ${name} is gone, yet processes its runs started live` : `the run that started them has ended`;
    out.push(
      finding('stray-process', id, `${why}: ${describe([t])}`, null, {
        session: name,
        repair: `pdb-env stop ${name}`,
      }),
    );
  }
  return out;
}

/** What a crash, a reboot or damage left behind. Lists; changes nothing. `objects: false` skips the object walk (gc). */
export async function doctor(ctx: StoreContext, options: { objects?: boolean } = {}): Promise<Finding[]> {
  const { intents, bad } = await ctx.journal.scan();
  return [
    ...(await journalFindings(ctx, intents, bad)),
    ...(await sessionsFindings(ctx, intents)),
    ...(await envFindings(ctx)),
    ...(await lockFindings(ctx, ctx.store.paths.locks, null, isLockName)),
    ...(await lockFindings(ctx, objectLeaseDir(ctx.store), null, () => true)),
    ...(await tempFindings(ctx)),
    ...(await processFindings(ctx)),
    ...(options.objects === false ? [] : await objectFindings(ctx)),
  ];
}
