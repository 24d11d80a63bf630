// Environments: named lineages whose head is a Snapshot. A head file is replaced atomically, and
// every change to it (the first import's `main`, a publish) happens under the environment's lock.
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isDigest, type Digest } from '../model/canonical-json.js';
import { PdbError, osErrorCode } from '../model/errors.js';
import { writeFileAtomic, type ObjectStore } from '../model/object-store.js';
import { tryLock } from './lock.js';
import { assertEnvName, readSession, type StoreContext } from './records.js';

function envFile(store: ObjectStore, env: string): string {
  assertEnvName(env);
  return join(store.paths.environments, `${env}.json`);
}

export async function envHead(store: ObjectStore, env: string): Promise<Digest> {
  try {
    const doc = JSON.parse(await readFile(envFile(store, env), 'utf8')) as { head: Digest };
    return doc.head;
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT')
      throw new PdbError('E_ENV_NOT_FOUND', `no environment named "${env}"`, {
        hint: 'An environment "main" is made by the first pdb-env create from a source.',
      });
    throw err;
  }
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

async function writeEnv(store: ObjectStore, env: string, head: Digest, previous: Digest | null): Promise<void> {
  await writeFileAtomic(
    store.paths,
    envFile(store, env),
    `${JSON.stringify({ name: env, head, previous, updatedAt: new Date().toISOString() }, null, 2)}\n`,
  );
}

/** Run `fn` holding the environment's update lock; E_LEASE_BUSY at once when another process holds it. */
async function withEnvLock<T>(store: ObjectStore, env: string, fn: () => Promise<T>): Promise<T> {
  const taken = await tryLock(`${envFile(store, env)}.lock`, { kind: 'update', purpose: `update environment ${env}` });
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

/** Expected-head compare-and-set: advance `env` from `expect` to the session's last checkpoint. */
export async function publish(
  ctx: StoreContext,
  name: string,
  env: string,
  expect: string,
): Promise<{ env: string; previous: Digest; head: Digest }> {
  if (!isDigest(expect))
    throw new PdbError('E_USAGE', `--expect must be a digest like sha256:<64 hex>, got "${expect}"`, {
      hint: 'pdb-env envs shows each head.',
    });
  const rec = await readSession(ctx.store, name);
  if (!rec.lastCheckpoint)
    throw new PdbError('E_USAGE', `session "${name}" has no checkpoint to publish`, { hint: `Run pdb-env checkpoint ${name} first.` });
  const head = rec.lastCheckpoint.snapshot;
  return withEnvLock(ctx.store, env, async () => {
    const current = await envHead(ctx.store, env);
    if (current !== expect) {
      throw new PdbError('E_HEAD_MOVED', `environment "${env}" is at ${current}, not the expected ${expect}`, {
        hint: 'Re-base your work on the new head, then publish with the new --expect.',
      });
    }
    const intent = await ctx.journal.begin('publish', { session: name, env, detail: { from: current, to: head } });
    await writeEnv(ctx.store, env, head, current);
    await ctx.journal.end(intent);
    return { env, previous: current, head };
  });
}
