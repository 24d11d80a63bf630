// Work on an existing session: open it, run in it under a writer lease, checkpoint it under an
// exclusive one, diff and scan it. (Discard is in discard.ts.)
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { getBackend } from '../backends/registry.js';
import type { Backend, BackendContext } from '../backends/types.js';
import type { Digest } from '../model/canonical-json.js';
import { crashPoint } from '../model/crash-point.js';
import { PdbError, osErrorCode } from '../model/errors.js';
import { scanTree, type ScanResult } from '../model/scan.js';
import { createChangeset, createSnapshot, diffEntries, type Change, type Entry, type Snapshot } from '../model/snapshot.js';
import { acquireLease } from './lease.js';
import { backendContext, readSession, sessionDir, sessionRoot, writeSession, type SessionRecord, type StoreContext } from './records.js';

export interface CheckpointResult {
  session: string;
  base: Digest;
  snapshot: Digest;
  changeset: Digest;
  changes: number;
  files: number;
  bytes: number;
}

export interface OpenSession {
  rec: SessionRecord;
  backend: Backend;
  root: string;
  dir: string;
  ctx: BackendContext;
}

/** A ready session with its backend; E_SESSION_BROKEN when it is not ready. */
export async function openSession(ctx: StoreContext, name: string): Promise<OpenSession> {
  const rec = await readSession(ctx.store, name);
  if (rec.state !== 'ready') {
    throw new PdbError('E_SESSION_BROKEN', `session "${name}" is ${rec.state}, not ready`, {
      hint: 'pdb-env doctor explains; pdb-env gc cleans up; pdb-env discard removes it.',
    });
  }
  const backend = getBackend(rec.backend, { allowTestOnly: true });
  return {
    rec,
    backend,
    root: sessionRoot(ctx.store, name),
    dir: sessionDir(ctx.store, name),
    ctx: backendContext(ctx.store, rec.sourceDir ?? undefined),
  };
}

/** A ready session, re-activated (re-mounted) if its backend needs it. */
export async function resumeSession(ctx: StoreContext, name: string): Promise<OpenSession> {
  const s = await openSession(ctx, name);
  await s.backend.resume(s.ctx, s.root, s.dir, s.rec.backendState);
  return s;
}

function signalNumber(signal: string | undefined): number {
  return (signal && osConstants.signals[signal as NodeJS.Signals]) || 1;
}

export interface RunOptions {
  stdio?: 'inherit' | 'pipe';
  env?: Record<string, string>;
  purpose?: string;
}

/**
 * Run a command in the session root under a shared writer lease, stdio passed through.
 * Returns the child's exit code (128 + signal number when it was killed by a signal).
 */
export async function runInSession(
  ctx: StoreContext,
  name: string,
  command: string,
  args: string[],
  options: RunOptions = {},
): Promise<{ exitCode: number; stdout?: string; stderr?: string }> {
  const s = await resumeSession(ctx, name);
  const lease = await acquireLease(join(s.dir, 'lease'), name, 'writer', options.purpose ?? `run ${command}`);
  try {
    const child = execa(command, args, {
      cwd: s.root,
      stdio: options.stdio ?? 'inherit',
      reject: false,
      env: { ...options.env, PDB_ENV_SESSION: name },
      windowsHide: true,
    });
    const forward = (sig: NodeJS.Signals) => child.kill(sig);
    process.on('SIGINT', forward).on('SIGTERM', forward).on('SIGHUP', forward);
    const result = await child;
    process.off('SIGINT', forward).off('SIGTERM', forward).off('SIGHUP', forward);
    if (result.failed && result.exitCode === undefined && !result.signal) throw startFailure(command, result.cause);
    const exitCode = result.exitCode ?? 128 + signalNumber(result.signal);
    return {
      exitCode,
      stdout: typeof result.stdout === 'string' ? result.stdout : undefined,
      stderr: typeof result.stderr === 'string' ? result.stderr : undefined,
    };
  } finally {
    await lease.release();
  }
}

async function scanSession(ctx: StoreContext, s: OpenSession, install: boolean): Promise<{ base: Snapshot; scan: ScanResult }> {
  const base = ctx.store.getDocument<Snapshot>(s.rec.base);
  const scan = await scanTree(s.root, { excludes: base.excludes, store: install ? ctx.store : undefined });
  return { base, scan };
}

/** Complete scan of the quiesced session root: installs objects, records Snapshot + Changeset. Publishes nothing. */
export async function checkpointSession(ctx: StoreContext, name: string): Promise<CheckpointResult> {
  const s = await resumeSession(ctx, name);
  const lease = await acquireLease(join(s.dir, 'lease'), name, 'exclusive', 'checkpoint');
  try {
    const intent = await ctx.journal.begin('checkpoint', { session: name });
    try {
      crashPoint('checkpoint:after-intent');
      return await recordCheckpoint(ctx, s, name);
    } finally {
      // A checkpoint changes nothing but immutable objects and one atomic record write: done or
      // failed, its intent goes.
      await ctx.journal.end(intent);
    }
  } finally {
    await lease.release();
  }
}

async function recordCheckpoint(ctx: StoreContext, s: OpenSession, name: string): Promise<CheckpointResult> {
  const { base, scan } = await scanSession(ctx, s, true);
  const result = createSnapshot(scan.entries, base.excludes, s.rec.base);
  const snapshot = await ctx.store.putDocument(result);
  const changes = diffEntries(base.entries, result.entries);
  const changeset = await ctx.store.putDocument(createChangeset(s.rec.base, snapshot, changes));
  crashPoint('checkpoint:after-objects');
  const rec = await readSession(ctx.store, name);
  rec.lastCheckpoint = { snapshot, changeset, at: new Date().toISOString() };
  await writeSession(ctx.store, rec);
  crashPoint('checkpoint:after-record');
  return {
    session: name,
    base: s.rec.base,
    snapshot,
    changeset,
    changes: changes.length,
    files: scan.entries.filter((e) => e.kind === 'file').length,
    bytes: scan.bytes,
  };
}

/** Changes since the base, by relative path (read-only; installs nothing). */
export async function diffSession(ctx: StoreContext, name: string): Promise<{ session: string; base: Digest; changes: Change[] }> {
  const s = await resumeSession(ctx, name);
  const { base, scan } = await scanSession(ctx, s, false);
  return { session: name, base: s.rec.base, changes: diffEntries(base.entries, scan.entries) };
}

/** Entries of the session root right now (hash only). Used by oracle checks. */
export async function scanSessionEntries(ctx: StoreContext, name: string): Promise<Entry[]> {
  const s = await resumeSession(ctx, name);
  return (await scanSession(ctx, s, false)).scan.entries;
}

/** A program that could not start fails like a shell would: not found (127) or not executable (126), never a usage error. */
function startFailure(command: string, cause: unknown): PdbError {
  const errno = osErrorCode(cause);
  if (errno === 'ENOENT' || errno === 'ENOTDIR')
    return new PdbError('E_COMMAND_NOT_FOUND', `command not found: "${command}"`, {
      cause,
      hint: command.includes('/') ? 'A command with a / is a path from the session root.' : 'Check the command name and PATH.',
    });
  return new PdbError('E_COMMAND_NOT_EXECUTABLE', `cannot execute "${command}": ${errno ?? String(cause)}`, {
    cause,
    hint: 'Make it executable (chmod +x) or run it through its interpreter, e.g. sh FILE.',
  });
}
