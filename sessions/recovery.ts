// Recovery: what a crash or a reboot left behind (doctor), finishing or undoing it (gc), and
// re-hashing every object (verify).
import { lstat, readdir, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { getBackend } from '../backends/registry.js';
import type { Digest } from '../model/canonical-json.js';
import { removeTree } from '../model/remove-tree.js';
import type { Intent } from './journal.js';
import { liveLeases } from './lease.js';
import { isProcessAlive } from './process-identity.js';
import { SESSION_NAME_PATTERN, backendContext, readSession, sessionDir, type StoreContext } from './records.js';

export interface Finding {
  kind: 'abandoned-intent' | 'orphan-session-dir' | 'unfinished-session' | 'temp-file' | 'active-lease';
  id: string;
  session: string | null;
  detail: string;
  /** 'gc' when `pdb-env gc` can finish or remove it. */
  fix: 'gc' | null;
}

/** Findings about each session directory: unreadable, unfinished, or leased by a live process. */
async function sessionFindings(ctx: StoreContext, liveSessions: Set<string | undefined>): Promise<Finding[]> {
  const findings: Finding[] = [];
  for (const name of (await readdir(ctx.store.paths.sessions).catch(() => [] as string[])).sort()) {
    const rec = SESSION_NAME_PATTERN.test(name) ? await readSession(ctx.store, name).catch(() => null) : null;
    if (!rec) {
      findings.push({
        kind: 'orphan-session-dir',
        id: name,
        session: name,
        detail: 'a directory without a readable session.json',
        fix: 'gc',
      });
      continue;
    }
    if (rec.state !== 'ready' && !liveSessions.has(name))
      findings.push({ kind: 'unfinished-session', id: name, session: name, detail: `state is ${rec.state}`, fix: 'gc' });
    for (const l of await liveLeases(join(sessionDir(ctx.store, name), 'lease')))
      findings.push({
        kind: 'active-lease',
        id: `${name}:${l.pid}`,
        session: name,
        detail: `${l.kind} lease held by live process ${l.pid} (${l.purpose})`,
        fix: null,
      });
  }
  return findings;
}

/** What a crash or a reboot left behind. Lists; changes nothing. */
export async function doctor(ctx: StoreContext): Promise<Finding[]> {
  const findings: Finding[] = [];
  const intents = await ctx.journal.list();
  for (const i of intents) {
    if (!i.live)
      findings.push({
        kind: 'abandoned-intent',
        id: i.id,
        session: i.session ?? null,
        detail: `${i.op} started ${i.startedAt} by process ${i.pid}, which is gone`,
        fix: 'gc',
      });
  }
  findings.push(...(await sessionFindings(ctx, new Set(intents.filter((i) => i.live && i.session).map((i) => i.session)))));
  for (const t of await readdir(ctx.store.paths.tmp).catch(() => [] as string[])) {
    const pid = Number(t.split('-')[1]);
    if (!Number.isInteger(pid) || !isProcessAlive(pid, null))
      findings.push({ kind: 'temp-file', id: t, session: null, detail: 'temporary file of a process that is gone', fix: 'gc' });
  }
  return findings;
}

/** Finish or remove what `doctor` found. With dryRun, only report. */
export async function gc(ctx: StoreContext, options: { dryRun?: boolean } = {}): Promise<{ actions: string[] }> {
  const actions: string[] = [];
  for (const f of await doctor(ctx)) {
    if (f.fix !== 'gc') continue;
    switch (f.kind) {
      case 'abandoned-intent': {
        const intent = (await ctx.journal.list()).find((i) => i.id === f.id);
        if (intent) actions.push(...(await recover(ctx, intent, options.dryRun ?? false)));
        break;
      }
      case 'orphan-session-dir':
      case 'unfinished-session':
        actions.push(`remove session ${f.session}`);
        if (!options.dryRun) await forceRemoveSession(ctx, f.session!);
        break;
      case 'temp-file':
        actions.push(`remove temp ${f.id}`);
        if (!options.dryRun) await rm(join(ctx.store.paths.tmp, f.id), { recursive: true, force: true });
        break;
      case 'active-lease':
        break;
      default: {
        const never: never = f.kind;
        throw new Error(`unknown finding ${String(never)}`);
      }
    }
  }
  return { actions: [...new Set(actions)] };
}

async function recover(ctx: StoreContext, intent: Intent, dryRun: boolean): Promise<string[]> {
  const actions: string[] = [];
  switch (intent.op) {
    case 'create':
    case 'discard':
      // A create that never reached "ready" is undone; a discard is finished. Both remove the session.
      if (intent.session) {
        const rec = await readSession(ctx.store, intent.session).catch(() => null);
        if (intent.op === 'discard' || !rec || rec.state !== 'ready') {
          actions.push(`remove session ${intent.session} (${intent.op} interrupted)`);
          if (!dryRun) await forceRemoveSession(ctx, intent.session);
        }
      }
      break;
    case 'checkpoint':
    case 'publish':
      // Objects are immutable and the env head is written atomically: nothing to undo.
      break;
    default: {
      const never: never = intent.op;
      throw new Error(`unknown intent ${String(never)}`);
    }
  }
  actions.push(`drop intent ${intent.id} (${intent.op})`);
  if (!dryRun) await ctx.journal.remove(intent.id);
  return actions;
}

async function forceRemoveSession(ctx: StoreContext, name: string): Promise<void> {
  const dir = sessionDir(ctx.store, name);
  const rec = await readSession(ctx.store, name).catch(() => null);
  if (rec) {
    const backend = getBackend(rec.backend, { allowTestOnly: true });
    await backend.release(backendContext(ctx.store, rec.sourceDir ?? undefined), join(dir, 'root'), dir, rec.backendState).catch(() => {});
  }
  const st = await lstat(dir).catch(() => null);
  if (st?.isDirectory()) await removeTree(dir);
  else if (st) await unlink(dir);
}

export async function verify(ctx: StoreContext): Promise<{ checked: number; corrupt: Digest[] }> {
  return ctx.store.verifyAll();
}
