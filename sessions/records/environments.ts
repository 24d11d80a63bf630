// Environments: named lineages whose head is a Snapshot. A head file is replaced atomically, and
// every change to it (the first import's `main`, a publish: sessions/way-back/publish.ts) happens
// under the environment's lock, which a second publisher waits for (bounded), so parallel
// publishes with one --expect give one winner and E_HEAD_MOVED for the rest.
import { existsSync } from 'node:fs';
import { appendFile, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isDigest, type Digest } from '../../model/canonical-json.js';
import { PdbError, isPdbError, osErrorCode, toPdbError } from '../../model/errors.js';
import type { Changeset, Snapshot } from '../../model/snapshot.js';
import { writeFileAtomic, type ObjectStore } from '../../model/store/object-store.js';
import { SHORT_LOCK_WAIT_MS, tryLock } from '../locks/lock.js';
import { assertEnvName } from './names.js';

export function envFile(store: ObjectStore, env: string): string {
  assertEnvName(env);
  return join(store.paths.environments, `${env}.json`);
}

/**
 * Every head an environment ever had, one JSON line each (`{head, previous, at}`), appended before
 * the head file is replaced. gc keeps all of them: published work is never collected.
 */
export function historyFile(store: ObjectStore, env: string): string {
  assertEnvName(env);
  return join(store.paths.environments, `${env}.history.jsonl`);
}

async function appendHistory(store: ObjectStore, env: string, head: Digest, previous: Digest | null): Promise<void> {
  const file = historyFile(store, env);
  await appendFile(file, `${JSON.stringify({ head, previous, at: new Date().toISOString() })}\n`).catch((err: unknown) => {
    throw toPdbError(err, 'E_IO', { action: `recording the history of environment ${env}`, path: file });
  });
}

export async function envHead(store: ObjectStore, env: string): Promise<Digest> {
  const file = envFile(store, env);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT')
      throw new PdbError('E_ENV_NOT_FOUND', `no environment named "${env}"`, {
        hint: 'An environment "main" is made by the first pdb-env create from a source.',
      });
    throw toPdbError(err, 'E_IO', { action: `reading environment ${env}`, path: file });
  }
  let head: unknown;
  try {
    head = (JSON.parse(text) as { head?: unknown } | null)?.head;
  } catch {
    head = undefined;
  }
  if (typeof head !== 'string' || !isDigest(head))
    throw new PdbError('E_RECORD_CORRUPT', `the environment file of "${env}" is damaged: no head digest in ${file}`, {
      path: file,
      hint: `Its head is lost from this file: pdb-env list --json and checkpoints show candidate Snapshots; write {"name":"${env}","head":"sha256:..."} to ${file}, or remove it and create from a source again.`,
    });
  return head as Digest;
}

/**
 * Why `digest` cannot be an environment head: it names a Changeset, a file object or another
 * document, not a Snapshot. Null when it is a Snapshot, and when it is missing or corrupt (the
 * object checks report those).
 */
export function snapshotProblem(store: ObjectStore, digest: Digest): string | null {
  let doc: Partial<Snapshot & Changeset> | null;
  try {
    doc = store.getDocument<Partial<Snapshot & Changeset>>(digest, 'Snapshot');
  } catch (err) {
    if (isPdbError(err, 'E_USAGE')) return `names ${digest}, which is not a Snapshot (a file object, not a document)`;
    return null;
  }
  if (doc && typeof doc === 'object' && doc.version === 1 && Array.isArray(doc.entries) && Array.isArray(doc.excludes)) return null;
  const what = doc && typeof doc === 'object' && Array.isArray(doc.changes) ? 'a Changeset' : 'another document';
  return `names ${digest}, which is not a Snapshot (${what})`;
}

/** How to give an environment a Snapshot head again. */
export function headRepair(store: ObjectStore, env: string): string {
  return `Every head it had is listed in ${historyFile(store, env)}: write one of them (a Snapshot) as {"name":"${env}","head":"sha256:..."} to ${envFile(store, env)}.`;
}

export async function listEnvs(store: ObjectStore): Promise<Array<{ name: string; head: Digest }>> {
  const out = [];
  for (const f of (await readdir(store.paths.environments).catch(() => [] as string[])).sort()) {
    if (!f.endsWith('.json')) continue;
    const name = f.slice(0, -5);
    out.push({ name, head: await envHead(store, name) });
  }
  return out;
}

/** Make `env` with `head` unless it exists (the first import makes `main`). */
export async function initEnv(store: ObjectStore, env: string, head: Digest): Promise<void> {
  if (existsSync(envFile(store, env))) return;
  await withEnvLock(store, env, async () => {
    if (!existsSync(envFile(store, env))) await writeEnv(store, env, head, null);
  });
}

/** Append `head` to the history, then make it the head (the caller holds the environment's lock). */
export async function writeEnv(store: ObjectStore, env: string, head: Digest, previous: Digest | null): Promise<void> {
  // History first: a crash between the two leaves a head in the history that never became current (kept, harmless).
  await appendHistory(store, env, head, previous);
  await writeFileAtomic(
    store.paths,
    envFile(store, env),
    `${JSON.stringify({ name: env, head, previous, updatedAt: new Date().toISOString() }, null, 2)}\n`,
  );
}

/** Run `fn` holding the environment's update lock; waits for another holder (bounded), then E_LEASE_BUSY. */
export async function withEnvLock<T>(store: ObjectStore, env: string, fn: () => Promise<T>): Promise<T> {
  const taken = await tryLock(`${envFile(store, env)}.lock`, {
    kind: 'update',
    purpose: `update environment ${env}`,
    wait: { timeoutMs: SHORT_LOCK_WAIT_MS },
  });
  if (!taken.lock)
    throw new PdbError('E_LEASE_BUSY', `environment "${env}" is being updated by process ${taken.holder?.pid ?? '?'}`, {
      hint: 'Try again in a moment.',
    });
  try {
    return await fn();
  } finally {
    await taken.lock.release();
  }
}
