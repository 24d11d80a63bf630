// The restore and checkpoint kill campaign (issue 39): on one backend, a session flips between two
// checkpoints A and B that differ in about 200 paths of every kind (adds, deletes, edits, a mode,
// a dir/file retype both ways, links, an empty directory), while `restore --to` and `checkpoint`
// are killed with SIGKILL at random moments. After each: gc, then the root must be the tree before
// or the target, never a mix; the safety checkpoint, once recorded, must be the tree before (so
// nothing is lost); a checkpoint a kill left recorded must be the root; the next checkpoint must
// equal a --verify one; doctor, verify and the journal clean.
import { chmodSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import type { Random } from '../../../harness/plan/prng.js';
import { diffEntries, type Entry } from '../../../model/snapshot.js';
import { SessionService } from '../../../sessions/service.js';
import { json, pdbAsync } from './fault-helpers.js';
import { runKilled } from './kill-campaign.js';
import { writeTree, type TreeSpec } from '../index.js';

export interface RestoreLane {
  backend: string;
  store: string;
  svc: SessionService;
  root: string;
  random: Random;
  /** Checkpoint numbers and trees of A and B, and which the root holds now. */
  a: { number: number; entries: Entry[] };
  b: { number: number; entries: Entry[] };
  at: 'a' | 'b';
  took: { restore: number; checkpoint: number };
  counts: { restore: { killed: number; finished: number }; checkpoint: { killed: number; finished: number } };
  /** Runs that ended as the tree before (the kill came before the safety checkpoint) and as the target. */
  outcomes: { before: number; target: number };
}

function source(dir: string): void {
  const pkgs: TreeSpec = {};
  for (let p = 0; p < 4; p++) {
    const mods: TreeSpec = {};
    for (let m = 0; m < 40; m++) mods[`m${m}.ts`] = `export const m${p}_${m} = ${m};\n`;
    pkgs[`pkg${p}`] = mods;
  }
  writeTree(dir, {
    ...pkgs,
    'retype-dir': { 'x.txt': 'x\n' },
    'retype-file': 'a file\n',
    'tool.sh': { content: '#!/bin/sh\n', exec: true },
    link: { link: 'pkg0/m0.ts' },
    'blob.bin': Buffer.alloc(128 << 10, 7).toString('latin1'),
  });
}

/** B: about 200 paths changed from A, every kind. */
function change(root: string): void {
  for (let p = 0; p < 4; p++) for (let m = 0; m < 20; m++) writeFileSync(join(root, `pkg${p}/m${m}.ts`), `export const b = ${p * m};\n`);
  for (let m = 30; m < 40; m++) rmSync(join(root, `pkg1/m${m}.ts`));
  mkdirSync(join(root, 'new/deep/er'), { recursive: true });
  for (let i = 0; i < 80; i++) writeFileSync(join(root, `new/${i}.txt`), `new ${i}\n`);
  for (let i = 0; i < 20; i++) writeFileSync(join(root, `new/deep/${i}.txt`), `deep ${i}\n`);
  rmSync(join(root, 'retype-dir'), { recursive: true });
  writeFileSync(join(root, 'retype-dir'), 'now a file\n');
  rmSync(join(root, 'retype-file'));
  mkdirSync(join(root, 'retype-file'));
  writeFileSync(join(root, 'retype-file/in.txt'), 'in\n');
  chmodSync(join(root, 'tool.sh'), 0o644);
  rmSync(join(root, 'link'));
  symlinkSync('pkg1/m1.ts', join(root, 'link'));
  mkdirSync(join(root, 'empty'));
  writeFileSync(join(root, 'blob.bin'), Buffer.alloc(128 << 10, 9));
}

const scan = (l: RestoreLane) => l.svc.scanEntries('s');

/** A store on `dir` with session s of `backend` at checkpoint B (A is checkpoint 1). */
export async function openRestoreLane(dir: string, backend: string, random: Random): Promise<RestoreLane> {
  const src = join(dir, `src-${backend}`);
  source(src);
  const store = join(dir, `store-${backend}`);
  const svc = await SessionService.open(store, { create: true });
  const root = (await svc.create('s', { from: src, backend })).root;
  const a = await svc.checkpoint('s', { label: 'A' });
  const aEntries = await svc.scanEntries('s');
  change(root);
  const b = await svc.checkpoint('s', { label: 'B' });
  const l: RestoreLane = {
    backend,
    store,
    svc,
    root,
    random,
    a: { number: a.number, entries: aEntries },
    b: { number: b.number, entries: await svc.scanEntries('s') },
    at: 'b',
    took: { restore: 0, checkpoint: 0 },
    counts: { restore: { killed: 0, finished: 0 }, checkpoint: { killed: 0, finished: 0 } },
    outcomes: { before: 0, target: 0 },
  };
  // Uncrashed durations, through the CLI, to spread the kills over a whole run.
  for (const op of ['restore', 'checkpoint'] as const) {
    const t0 = Date.now();
    const r = await pdbAsync(store, op === 'restore' ? ['restore', 's', '--to', String(l.a.number)] : ['checkpoint', 's']);
    assert.is(r.code, 0, r.stderr);
    l.took[op] = Date.now() - t0;
    if (op === 'restore') l.at = 'a';
  }
  return l;
}

/** gc, doctor and verify through the CLI: all clean, no intent left. */
async function assertWhole(l: RestoreLane, where: string): Promise<void> {
  const gc = await pdbAsync(l.store, ['gc', '--json']);
  assert.is(gc.code, 0, `${where}: gc: ${gc.stdout}${gc.stderr}`);
  const doctor = json(await pdbAsync(l.store, ['doctor', '--json'])).findings as unknown[];
  assert.equal(doctor, [], `${where}: doctor after gc`);
  const verify = await pdbAsync(l.store, ['verify', '--json']);
  assert.is(verify.code, 0, `${where}: verify: ${verify.stdout}`);
  assert.equal(await l.svc.journal.list(), [], `${where}: an intent left`);
}

/** A moment in the run: half uniform over it, half over its last part (where the renames and records are). */
const delayFor = (l: RestoreLane, op: 'restore' | 'checkpoint') =>
  Math.round((l.random.next() < 0.5 ? l.random.next() * 1.1 : 0.5 + l.random.next() * 0.6) * l.took[op]);

/** One killed restore to the other checkpoint; returns its log line. */
export async function restoreKill(l: RestoreLane, i: number): Promise<string> {
  const from = l.at === 'a' ? l.a : l.b;
  const to = l.at === 'a' ? l.b : l.a;
  const logBefore = (await l.svc.log('s')).checkpoints.length;
  const delay = delayFor(l, 'restore');
  const where = `${l.backend} restore #${i} (${delay} ms)`;
  const r = await runKilled(l.store, ['restore', 's', '--to', String(to.number)], delay);
  if (!r.killed) assert.is(r.code, 0, `${where}: ${r.stdout}${r.stderr}`);
  l.counts.restore[r.killed ? 'killed' : 'finished']++;
  if (!r.killed) l.took.restore = Math.round((l.took.restore + r.ms) / 2);
  // Half the time something else comes first: a checkpoint (refused while the restore is unfinished, never harmful).
  if (r.killed && l.random.next() < 0.5) {
    const k = await pdbAsync(l.store, ['checkpoint', 's', '--json']);
    if (k.code !== 0) assert.match(JSON.parse(k.stdout).error.code, /^(E_SESSION_BUSY|E_LEASE_BUSY)$/, `${where}: ${k.stdout}`);
  }
  await assertWhole(l, where);
  const now = await scan(l);
  let outcome: 'before' | 'target';
  if (diffEntries(to.entries, now).length === 0) outcome = 'target';
  else {
    assert.equal(diffEntries(from.entries, now), [], `${where}: the root is neither the tree before nor the target`);
    outcome = 'before';
  }
  const log = (await l.svc.log('s')).checkpoints.slice(logBefore);
  const safety = log.find((c) => c.label === `before restore to ${to.number}`);
  if (safety) assert.equal(diffEntries(from.entries, l.svc.readSnapshot(safety.snapshot).entries), [], `${where}: the safety checkpoint`);
  if (outcome === 'target') assert.ok(safety, `${where}: restored without a safety checkpoint`);
  // The next checkpoint is the one --verify takes: no stale row of the index was trusted.
  const next = await l.svc.checkpoint('s');
  assert.is(next.snapshot, (await l.svc.checkpoint('s', { verify: true })).snapshot, `${where}: checkpoint after the restore`);
  l.at = outcome === 'target' ? (l.at === 'a' ? 'b' : 'a') : l.at;
  l.outcomes[outcome]++;
  return `${where}: ${r.killed ? 'killed' : 'ran to its end'}, ${outcome === 'target' ? 'restored' : 'as before'}`;
}

/** One killed checkpoint after an edit; the edit is undone afterwards (the root back at A or B). */
export async function checkpointKill(l: RestoreLane, i: number): Promise<string> {
  const edit = join(l.root, `edit-${i}.txt`);
  writeFileSync(edit, `edit ${i}\n`);
  const last = (await l.svc.readSession('s')).lastCheckpoint?.snapshot;
  const delay = delayFor(l, 'checkpoint');
  const where = `${l.backend} checkpoint #${i} (${delay} ms)`;
  const r = await runKilled(l.store, ['checkpoint', 's', '--label', `edit ${i}`], delay);
  if (!r.killed) assert.is(r.code, 0, `${where}: ${r.stdout}${r.stderr}`);
  l.counts.checkpoint[r.killed ? 'killed' : 'finished']++;
  if (!r.killed) l.took.checkpoint = Math.round((l.took.checkpoint + r.ms) / 2);
  await assertWhole(l, where);
  const rec = await l.svc.readSession('s');
  const recorded = rec.lastCheckpoint!.snapshot !== last;
  if (recorded)
    assert.equal(
      diffEntries(l.svc.readSnapshot(rec.lastCheckpoint!.snapshot).entries, await scan(l)),
      [],
      `${where}: the checkpoint is not the root`,
    );
  rmSync(edit);
  const next = await l.svc.checkpoint('s');
  assert.is(next.snapshot, (await l.svc.checkpoint('s', { verify: true })).snapshot, `${where}: checkpoint after the kill`);
  return `${where}: ${r.killed ? 'killed' : 'ran to its end'}, ${recorded ? 'recorded' : 'not recorded'}`;
}
