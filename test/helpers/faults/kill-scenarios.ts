// One random kill of each operation of the campaign (kill-campaign.ts), with what must hold after
// gc: the target untouched or fully applied (and a user's edit kept), a patch file absent or
// whole, a branch absent or at the right tree with the user's repository untouched, a head before
// or exactly the merge, and the store whole (gc, doctor and verify clean).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { CRASH_POINTS } from '../../../model/crash-point.js';
import type { Digest } from '../../../model/canonical-json.js';
import { diffEntries, sortEntries, type Entry } from '../../../model/snapshot.js';
import { assertStoreWhole, assertUntouchedOrApplied, runKilled, targetCopy, type Campaign, type Op } from './kill-campaign.js';
import { pdbAsync } from './fault-helpers.js';
import { gitRun } from '../way-back-fixture.js';

/**
 * A moment in the operation's run, from how long it takes uncrashed (learnt from the runs that
 * ended): half the time uniform over the whole run, half the time over its last part, where the
 * commits happen (a rename into place, a ref moved, a head written, the staging removed).
 */
const delayFor = (c: Campaign, op: Op) =>
  Math.round((c.random.next() < 0.5 ? c.random.next() * 1.1 : 0.6 + c.random.next() * 0.5) * c.took[op]);

function count(c: Campaign, op: Op, r: { killed: boolean; ms: number }): string {
  c.counts[op][r.killed ? 'killed' : 'finished']++;
  if (!r.killed) c.took[op] = Math.round((c.took[op] + r.ms) / 2);
  return r.killed ? 'killed' : 'ran to its end';
}

async function applyKill(c: Campaign, i: number): Promise<string> {
  const target = targetCopy(c, `apply-${i}`);
  const delay = delayFor(c, 'apply');
  const r = await runKilled(c.store, ['apply', 's', '--to', target], delay);
  const where = `apply #${i} (${delay} ms)`;
  if (!r.killed) assert.is(r.code, 0, `${where}: ${r.stdout}${r.stderr}`);
  // Half the time, the user tries again before any gc: refused while a plan is unfinished, never harmful.
  if (r.killed && c.random.next() < 0.5) {
    const again = await pdbAsync(c.store, ['apply', 's', '--to', target, '--json']);
    if (again.code !== 0)
      assert.match(JSON.parse(again.stdout).error.code, /^(E_APPLY_CONFLICT|E_LEASE_BUSY)$/, `${where}: ${again.stdout}`);
  }
  await assertStoreWhole(c, where);
  const state = await assertUntouchedOrApplied(c, target, where);
  const retry = await pdbAsync(c.store, ['apply', 's', '--to', target, '--json']);
  assert.is(retry.code, 0, `${where}: apply after gc: ${retry.stdout}${retry.stderr}`);
  assert.is(await assertUntouchedOrApplied(c, target, `${where}, applied again`), 'applied');
  rmSync(target, { recursive: true });
  return `${where}: ${count(c, 'apply', r)}, ${state}`;
}

async function applyEditKill(c: Campaign, i: number): Promise<string> {
  const target = targetCopy(c, `edit-${i}`);
  const killAt = delayFor(c, 'apply-edit');
  const editAt = Math.round(c.random.next() * killAt);
  const edited = { path: `pkg${c.random.int(6)}/mod${c.random.int(15)}.ts`, bytes: `the user, run ${i}\n` };
  let edit!: Promise<void>;
  const r = await runKilled(c.store, ['apply', 's', '--to', target, '--json'], killAt, () => {
    edit = new Promise((resolve) => setTimeout(() => resolve(writeFileSync(join(target, edited.path), edited.bytes)), editAt));
  });
  await edit;
  const where = `apply with an edit of ${edited.path} at ${editAt} ms (#${i}, killed at ${killAt} ms)`;
  if (!r.killed && r.code !== 0) assert.is(JSON.parse(r.stdout).error.code, 'E_APPLY_CONFLICT', `${where}: ${r.stdout}`);
  await assertStoreWhole(c, where, true);
  const state = await assertUntouchedOrApplied(c, target, where, edited);
  rmSync(target, { recursive: true });
  return `${where}: ${count(c, 'apply-edit', r)}, ${state} around the edit`;
}

async function patchKill(c: Campaign, i: number): Promise<string> {
  mkdirSync(join(c.dir, 'patches'), { recursive: true });
  const file = join(c.dir, 'patches', `${i}.patch`);
  const delay = delayFor(c, 'export-patch');
  const r = await runKilled(c.store, ['export', 's', '--patch', file], delay);
  const where = `export --patch #${i} (${delay} ms)`;
  if (!r.killed) assert.is(r.code, 0, `${where}: ${r.stderr}`);
  await assertStoreWhole(c, where);
  if (!r.killed) assert.ok(existsSync(file), `${where}: no patch`);
  const partial = readdirSync(join(c.dir, 'patches')).filter((n) => n.startsWith(`.${i}.patch.pdb-`));
  assert.equal(partial, [], `${where}: a partial patch was left beside the file`);
  const whole = existsSync(file);
  if (whole) assert.ok(readFileSync(file).equals(c.patch), `${where}: the patch file is not the whole patch`);
  return `${where}: ${count(c, 'export-patch', r)}, ${whole ? 'whole patch' : 'no patch'}`;
}

const userState = (src: string) => ({
  head: gitRun(src, ['rev-parse', 'HEAD']),
  status: gitRun(src, ['status', '--porcelain', '--ignored']),
  index: readFileSync(join(src, '.git/index')).toString('base64'),
});

async function gitKill(c: Campaign, i: number): Promise<string> {
  const branch = `kill-${i}`;
  const before = userState(c.src);
  const delay = delayFor(c, 'export-git');
  const r = await runKilled(c.store, ['export', 's', '--git', '--branch', branch], delay);
  const where = `export --git #${i} (${delay} ms)`;
  if (!r.killed) assert.is(r.code, 0, `${where}: ${r.stderr}`);
  await assertStoreWhole(c, where);
  assert.equal(userState(c.src), before, `${where}: the user's HEAD, index or status changed`);
  const ref = spawnSync('git', ['-C', c.src, 'rev-parse', '-q', '--verify', `refs/heads/${branch}`], { encoding: 'utf8' });
  if (!r.killed) assert.is(ref.status, 0, `${where}: no branch`);
  if (ref.status === 0) {
    assert.is(gitRun(c.src, ['rev-parse', `${branch}^{tree}`]).trim(), c.tree, `${where}: the branch's tree is not the export's`);
    assert.is(gitRun(c.src, ['rev-parse', `${branch}^`]), before.head, `${where}: the branch's parent`);
  }
  return `${where}: ${count(c, 'export-git', r)}, ${ref.status === 0 ? 'branch whole' : 'no branch'}`;
}

/** What publishing b's changes onto `onto` must give: onto's entries with every path b changed (they do not overlap). */
function merged(onto: Entry[], changes: ReturnType<typeof diffEntries>): string {
  const m = new Map(onto.map((e) => [e.path, e]));
  for (const ch of changes)
    if (ch.after) m.set(ch.path, ch.after);
    else m.delete(ch.path);
  return JSON.stringify(sortEntries([...m.values()]));
}

async function publishKill(c: Campaign, i: number): Promise<string> {
  const { svc } = c;
  const h0 = await svc.envHead('main');
  const a = await svc.create(`pa${i}`, { env: 'main' });
  const b = await svc.create(`pb${i}`, { env: 'main' });
  writeFileSync(join(a.root, `from-a-${i}.txt`), 'a\n');
  mkdirSync(join(b.root, `from-b-${i}`));
  for (let k = 0; k < 100; k++) writeFileSync(join(b.root, `from-b-${i}/${k}.txt`), `b ${k}\n`);
  rmSync(join(b.root, 'docs/45.md'), { force: true });
  await svc.checkpoint(`pa${i}`);
  await svc.publish(`pa${i}`, 'main', h0);
  const cpB = await svc.checkpoint(`pb${i}`);
  const onto = await svc.envHead('main');
  const expected = merged(
    svc.readSnapshot(onto).entries,
    diffEntries(svc.readSnapshot(h0).entries, svc.readSnapshot(cpB.snapshot).entries),
  );
  const delay = delayFor(c, 'publish-rebase');
  const r = await runKilled(c.store, ['publish', `pb${i}`, '--env', 'main', '--expect', onto, '--rebase'], delay);
  const where = `publish --rebase #${i} (${delay} ms)`;
  if (!r.killed) assert.is(r.code, 0, `${where}: ${r.stderr}`);
  await assertStoreWhole(c, where);
  const head = await svc.envHead('main');
  if (!r.killed) assert.is.not(head, onto, `${where}: not published`);
  if (head !== onto) {
    assert.is(JSON.stringify(svc.readSnapshot(head).entries), expected, `${where}: the head is not the merge`);
    assert.is(svc.readSnapshot(head).base, onto as Digest);
  }
  const rec = await svc.readSession(`pb${i}`);
  assert.ok(rec.lastCheckpoint, `${where}: b lost its checkpoint`);
  if (rec.lastCheckpoint!.snapshot !== cpB.snapshot)
    assert.is(JSON.stringify(svc.readSnapshot(rec.lastCheckpoint!.snapshot).entries), expected, `${where}: b's rebased checkpoint`);
  await svc.discard(`pa${i}`);
  await svc.discard(`pb${i}`);
  return `${where}: ${count(c, 'publish-rebase', r)}, ${head === onto ? 'head unmoved' : 'head is the merge'}`;
}

async function gcKill(c: Campaign, i: number): Promise<string> {
  const target = targetCopy(c, `gc-${i}`);
  const points = CRASH_POINTS.filter((p) => p.startsWith('apply:'));
  const point = points[c.random.int(points.length)]!;
  const crashed = await pdbAsync(c.store, ['apply', 's', '--to', target], { PDB_ENV_CRASH_AT: point });
  assert.is(crashed.signal, 'SIGKILL', `gc #${i}: the apply did not reach ${point}`);
  const delay = delayFor(c, 'gc');
  const r = await runKilled(c.store, ['gc'], delay);
  const where = `gc #${i} after ${point} (${delay} ms)`;
  await assertStoreWhole(c, where);
  const state = await assertUntouchedOrApplied(c, target, where);
  rmSync(target, { recursive: true });
  return `${where}: ${count(c, 'gc', r)}, ${state}`;
}

export async function killOnce(c: Campaign, op: Op, i: number): Promise<string> {
  switch (op) {
    case 'apply':
      return applyKill(c, i);
    case 'apply-edit':
      return applyEditKill(c, i);
    case 'export-patch':
      return patchKill(c, i);
    case 'export-git':
      return gitKill(c, i);
    case 'publish-rebase':
      return publishKill(c, i);
    case 'gc':
      return gcKill(c, i);
    default: {
      const never: never = op;
      throw new Error(`no kill scenario for ${String(never)}`);
    }
  }
}
