// One crash scenario: prepare what the operation needs (in-process), run the operation through
// the real CLI with PDB_ENV_CRASH_AT naming one step (the process kills itself there), then run
// doctor, gc and verify through the CLI and check the invariants: no session half-made, heads
// intact, the source unchanged, verify clean, the operation either done or undone, the name
// reusable, and nothing else touched (a keeper session and its checkpoint).
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import type { Digest } from '../../../model/canonical-json.js';
import type { CrashPoint } from '../../../model/crash-point.js';
import { scanTree } from '../../../model/scan/scan.js';
import { createSnapshot, diffEntries, snapshotDigest, type Entry } from '../../../model/snapshot.js';
import { SessionService } from '../../../sessions/service.js';
import { mountsUnder } from '../cow-harness.js';
import { json, pdbAsync } from './fault-helpers.js';

export interface Lane {
  label: string;
  backend: string;
  store: string;
  source: string;
  svc: SessionService;
  /** The source's Snapshot digest, to prove it never changes. */
  sourceDigest: Digest;
}

export async function sourceDigest(source: string): Promise<Digest> {
  return snapshotDigest(createSnapshot((await scanTree(source, { excludes: [] })).entries, []));
}

/** A store with a keeper session (ready, checkpointed) that no crash may touch. */
export async function openLane(label: string, backend: string, store: string, source: string): Promise<Lane> {
  const svc = await SessionService.open(store, { create: true });
  const keeper = await svc.create('keeper', { from: source, backend });
  writeFileSync(join(keeper.root, 'kept.txt'), 'kept\n');
  await svc.checkpoint('keeper');
  return { label, backend, store, source, svc, sourceDigest: await sourceDigest(source) };
}

interface Prepared {
  name: string;
  args: string[];
  /** What the operation would change, to tell "done" from "undone". */
  before: { head: Digest; checkpoint: Digest | null };
  target: Digest | null;
  /** apply: the copy of the source it writes into. */
  applyTo?: string;
}

/** Prepare the operation `point` belongs to and return its CLI arguments. */
async function prepare(lane: Lane, point: CrashPoint, name: string): Promise<Prepared> {
  const { svc } = lane;
  const op = point.split(':')[0];
  const head = await svc.envHead('main');
  if (op === 'create')
    return {
      name,
      args: ['create', name, '--from', lane.source, '--backend', lane.backend],
      before: { head, checkpoint: null },
      target: null,
    };
  const s = await svc.create(name, { from: lane.source, backend: lane.backend });
  writeFileSync(join(s.root, 'a.txt'), `${name}\n`);
  switch (op) {
    case 'checkpoint':
      return { name, args: ['checkpoint', name], before: { head, checkpoint: null }, target: null };
    case 'publish': {
      const cp = await svc.checkpoint(name);
      return { name, args: ['publish', name, '--expect', head], before: { head, checkpoint: cp.snapshot }, target: cp.snapshot };
    }
    case 'discard':
      return { name, args: ['discard', name], before: { head, checkpoint: null }, target: null };
    case 'apply': {
      // Into a copy: the lane's source must stay unchanged.
      rmSync(join(s.root, 'lib'), { recursive: true });
      writeFileSync(join(s.root, 'lib'), 'a file now\n');
      const cp = await svc.checkpoint(name);
      const applyTo = `${lane.store}-apply-${name}`;
      execFileSync('cp', ['-a', lane.source, applyTo]);
      return { name, args: ['apply', name, '--to', applyTo], before: { head, checkpoint: cp.snapshot }, target: null, applyTo };
    }
    case 'restore': {
      // Back to the checkpoint before a.txt changed and lib became a file.
      const first = await svc.checkpoint(name);
      rmSync(join(s.root, 'lib'), { recursive: true });
      writeFileSync(join(s.root, 'lib'), 'a file now\n');
      writeFileSync(join(s.root, 'new.txt'), 'new\n');
      return { name, args: ['restore', name, '--to', String(first.number)], before: { head, checkpoint: first.snapshot }, target: null };
    }
    default:
      throw new Error(`no crash scenario for ${point}: add one here`);
  }
}

/** Run one crash scenario; returns a line for the log. Throws (an assertion) on any broken invariant. */
export async function crashScenario(lane: Lane, point: CrashPoint, index: number): Promise<string> {
  const { svc, store } = lane;
  const name = `c${index}-${point.replace(/[^a-z]/g, '')}`.slice(0, 60);
  const p = await prepare(lane, point, name);
  const crashed = await pdbAsync(store, p.args, { PDB_ENV_CRASH_AT: point });
  assert.is(
    crashed.signal,
    'SIGKILL',
    `${lane.label} ${point}: the process did not reach its crash point (${crashed.code}: ${crashed.stderr})`,
  );
  for (const cmd of ['doctor', 'gc', 'verify']) {
    const r = await pdbAsync(store, [cmd, '--json']);
    assert.is(r.code, 0, `${lane.label} ${point}: ${cmd} exited ${r.code}: ${r.stdout}${r.stderr}`);
  }
  const where = `${lane.label} ${point}`;
  assert.equal(await svc.doctor(), [], `${where}: doctor after gc`);
  for (const s of await svc.list()) assert.is(s.state, 'ready', `${where}: session ${s.name} is ${s.state}`);
  assert.is(await sourceDigest(lane.source), lane.sourceDigest, `${where}: the source changed`);
  const head = await svc.envHead('main');
  assert.ok(head === p.before.head || head === p.target, `${where}: head ${head} is neither before nor after`);
  svc.readSnapshot(head); // the head is a readable Snapshot
  const outcome = await checkOperation(lane, point, p);
  await checkKeeper(lane, where);
  // The name is reusable: create and discard it again.
  if (existsSync(svc.sessionDir(p.name))) await svc.discard(p.name);
  await svc.create(p.name, { from: lane.source, backend: lane.backend });
  await svc.discard(p.name);
  assert.equal(mountsUnder(join(store, 'sessions', p.name)), [], `${where}: a mount was left`);
  return `${where}: ${outcome}`;
}

/** The operation is either done or undone, never half. */
async function checkOperation(lane: Lane, point: CrashPoint, p: Prepared): Promise<string> {
  const { svc } = lane;
  const exists = existsSync(svc.sessionDir(p.name));
  const op = point.split(':')[0];
  if (op === 'create' || op === 'discard') {
    if (!exists) return op === 'create' ? 'undone' : 'finished';
    const rec = await svc.readSession(p.name);
    const diff = diffEntries(svc.readSnapshot(rec.base).entries, await svc.scanEntries(p.name));
    const expected = op === 'discard' ? ['modify a.txt'] : [];
    assert.equal(
      diff.map((c) => `${c.kind} ${c.path}`),
      expected,
      `${lane.label} ${point}: the session left is not whole`,
    );
    return op === 'create' ? 'done (complete)' : 'kept (whole)';
  }
  assert.ok(exists, `${lane.label} ${point}: the session is gone`);
  const rec = await svc.readSession(p.name);
  if (op === 'checkpoint') {
    if (!rec.lastCheckpoint) return 'undone';
    const snap = svc.readSnapshot(rec.lastCheckpoint.snapshot);
    assert.equal(diffEntries(snap.entries, await svc.scanEntries(p.name)), [], `${lane.label} ${point}: checkpoint differs from the root`);
    return 'done';
  }
  if (op === 'apply') {
    const files = async (entries: Promise<Entry[]> | Entry[]) => (await entries).filter((e) => e.kind !== 'dir');
    const now = await files(scanTree(p.applyTo!, { excludes: [] }).then((r) => r.entries));
    const done = await files(svc.readSnapshot(p.before.checkpoint!).entries);
    assert.not.ok(existsSync(join(p.applyTo!, '.pdb')), `${lane.label} ${point}: the staging was left`);
    if (diffEntries(now, done).length === 0) return 'finished';
    // Past its plan, nothing stands in an apply's way here: gc must finish it, not roll it back.
    assert.ok(['apply:after-intent'].includes(point), `${lane.label} ${point}: gc did not finish the apply`);
    assert.equal(now, await files(svc.readSnapshot(rec.base).entries), `${lane.label} ${point}: the target is neither before nor after`);
    return 'undone';
  }
  if (op === 'restore') {
    // Roll forward: the root is the checkpoint restored to, unless the kill came before the safety checkpoint was recorded.
    const now = await svc.scanEntries(p.name);
    if (diffEntries(svc.readSnapshot(p.before.checkpoint!).entries, now).length === 0) return 'finished';
    assert.ok(point === 'restore:after-intent', `${lane.label} ${point}: gc did not finish the restore`);
    assert.ok(
      now.some((e) => e.path === 'new.txt'),
      `${lane.label} ${point}: the tree is neither before nor after`,
    );
    return 'undone';
  }
  return (await svc.envHead('main')) === p.target ? 'done' : 'undone';
}

async function checkKeeper(lane: Lane, where: string): Promise<void> {
  const rec = await lane.svc.readSession('keeper');
  const snap = lane.svc.readSnapshot(rec.lastCheckpoint!.snapshot as Digest);
  assert.equal(diffEntries(snap.entries, await lane.svc.scanEntries('keeper')), [], `${where}: the keeper session changed`);
}

/** At the end of a lane: every session discards cleanly and no mount is left under the store. */
export async function closeLane(lane: Lane): Promise<void> {
  for (const s of await lane.svc.list()) await lane.svc.discard(s.name);
  assert.equal(mountsUnder(join(lane.store, 'sessions')), [], `${lane.label}: mounts left`);
  const left = json(await pdbAsync(lane.store, ['doctor', '--json'])).findings;
  assert.equal(left, [], `${lane.label}: doctor at the end`);
}

/**
 * gc and doctor, again and again, while creates with this lane's backend build their base and
 * clone it (issue 14 saw a reflink create on XFS lose a live temp file): gc must act on nothing.
 */
export async function gcDuringCreates(lane: Lane, count = 2): Promise<number> {
  const names = Array.from({ length: count }, (_, i) => `during-gc-${i}`);
  let done = false;
  const creates = Promise.all(
    names.map((name, i) =>
      pdbAsync(lane.store, [
        'create',
        name,
        '--backend',
        lane.backend,
        '--json',
        ...(i === 0 ? ['--from', lane.source] : ['--env', 'main']),
      ]),
    ),
  ).finally(() => (done = true));
  let rounds = 0;
  while (!done) {
    const [gc, doctor] = await Promise.all([pdbAsync(lane.store, ['gc', '--json']), pdbAsync(lane.store, ['doctor', '--json'])]);
    assert.is(gc.code, 0, gc.stderr);
    assert.is(doctor.code, 0, doctor.stderr);
    assert.equal(JSON.parse(gc.stdout).actions, [], `${lane.label}: gc acted on live work: ${gc.stdout}`);
    rounds++;
  }
  for (const r of await creates) assert.is(r.code, 0, `${lane.label}: a create during gc failed: ${r.stdout}${r.stderr}`);
  for (const name of names) {
    const rec = await lane.svc.readSession(name);
    assert.equal(diffEntries(lane.svc.readSnapshot(rec.base).entries, await lane.svc.scanEntries(name)), [], `${lane.label}: ${name}`);
    await lane.svc.discard(name);
  }
  return rounds;
}
