import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Digest } from '../../../model/canonical-json.js';
import { isPdbError } from '../../../model/errors.js';
import type { Entry } from '../../../model/snapshot.js';
import { mergeEntries } from '../../../sessions/way-back/publish-rebase.js';
import { SessionService } from '../../../sessions/service.js';
import { tempDir, writeTree } from '../../helpers/index.js';

const t = tempDir();
test.after(() => t.cleanup());

let n = 0;
async function setup() {
  const dir = join(t.dir, `case${n++}`);
  const src = join(dir, 'src');
  writeTree(src, { 'a.txt': 'a\n', lib: { 'x.txt': 'x\n', 'y.txt': 'y\n' } });
  const svc = await SessionService.open(join(dir, 'store'), { create: true });
  return { src, svc };
}

async function failure(p: Promise<unknown>): Promise<{ code: string; message: string; hint?: string }> {
  try {
    await p;
  } catch (err) {
    assert.ok(isPdbError(err), `expected PdbError, got ${String(err)}`);
    return err as { code: string; message: string; hint?: string };
  }
  return assert.unreachable('expected a failure') as never;
}

const dir = (path: string): Entry => ({ path, kind: 'dir' });
const file = (path: string, d: string): Entry => ({ path, kind: 'file', digest: `sha256:${d.repeat(64)}` as Digest, size: 1, exec: false });

test('mergeEntries: one-sided and identical changes merge; different changes, delete against modify and retype against below conflict', () => {
  const base = [file('a', '1'), dir('d'), file('d/x', '2')];
  const same = mergeEntries(base, [file('a', '3'), dir('d'), file('d/x', '2')], [file('a', '3'), dir('d'), file('d/x', '4')]);
  assert.equal(same, { entries: [file('a', '3'), dir('d'), file('d/x', '4')], conflicts: [] });
  assert.equal(mergeEntries(base, [file('a', '5'), dir('d'), file('d/x', '2')], [file('a', '6'), dir('d'), file('d/x', '2')]).conflicts, [
    'a',
  ]);
  assert.equal(
    mergeEntries(base, [file('a', '1')], [file('a', '1'), dir('d'), file('d/x', '7')]).conflicts,
    ['d', 'd/x'],
    'delete vs modify',
  );
  // Ours retypes d into a file; theirs adds d/new below it.
  const retype = mergeEntries(base, [file('a', '1'), file('d', '8')], [...base, file('d/new', '9')]);
  assert.equal(retype.conflicts, ['d', 'd/new']);
});

test('two agents from one head: b after a is E_STALE_BASE naming both digests; --rebase keeps both, recorded as a checkpoint on the head', async () => {
  const { src, svc } = await setup();
  const a = await svc.create('a', { from: src });
  const b = await svc.create('b', { from: src });
  const h0 = await svc.envHead('main');
  writeFileSync(join(a.root, 'notes.txt'), 'from a\n');
  writeFileSync(join(b.root, 'lib/x.txt'), 'from b\n');
  rmSync(join(b.root, 'lib/y.txt'));
  const cpa = await svc.checkpoint('a');
  const cpb = await svc.checkpoint('b');
  const h1 = (await svc.publish('a', 'main', h0)).head;
  assert.is(h1, cpa.snapshot);
  // --expect equal to the current head does not make a stale checkpoint publishable.
  const stale = await failure(svc.publish('b', 'main', h1));
  assert.is(stale.code, 'E_STALE_BASE');
  assert.ok(stale.message.includes(h0) && stale.message.includes(h1), stale.message);
  assert.ok(stale.hint!.includes(`pdb-env publish b --env main --expect ${h1} --rebase`), stale.hint);
  const moved = await failure(svc.publish('b', 'main', h0));
  assert.is(moved.code, 'E_HEAD_MOVED');
  assert.ok(moved.hint!.includes(`pdb-env publish b --env main --expect ${h1} --rebase`), moved.hint);
  assert.is(await svc.envHead('main'), h1, 'nothing published');

  const r = await svc.publish('b', 'main', h1.slice(0, 15), { rebase: true });
  assert.equal({ previous: r.previous, rebased: r.rebased }, { previous: h1, rebased: true as const });
  assert.is(await svc.envHead('main'), r.head);
  const rec = await svc.readSession('b');
  assert.is(rec.lastCheckpoint!.snapshot, r.head);
  assert.is(svc.readSnapshot(r.head).base, h1, 'the rebased checkpoint is based on the head it merged onto');
  assert.not.equal(r.head, cpb.snapshot);
  const next = await svc.create('c', { env: 'main' });
  assert.is(readFileSync(join(next.root, 'notes.txt'), 'utf8'), 'from a\n');
  assert.is(readFileSync(join(next.root, 'lib/x.txt'), 'utf8'), 'from b\n');
  assert.not.ok(existsSync(join(next.root, 'lib/y.txt')));
  // gc keeps the rebased checkpoint and the head.
  await svc.gc();
  assert.equal((await svc.verify()).missing, []);
  assert.ok(svc.store.has(r.head) && svc.store.has(rec.lastCheckpoint!.changeset));
});

test('overlapping changes give E_PUBLISH_CONFLICT listing the paths, with the head and the session unmoved', async () => {
  const { src, svc } = await setup();
  const a = await svc.create('a', { from: src });
  const b = await svc.create('b', { from: src });
  const h0 = await svc.envHead('main');
  writeFileSync(join(a.root, 'a.txt'), 'a says\n');
  rmSync(join(a.root, 'lib'), { recursive: true });
  writeFileSync(join(a.root, 'lib'), 'now a file\n');
  writeFileSync(join(b.root, 'a.txt'), 'b says\n');
  mkdirSync(join(b.root, 'lib/deeper'));
  writeFileSync(join(b.root, 'lib/deeper/z.txt'), 'z\n');
  await svc.checkpoint('a');
  const cpb = await svc.checkpoint('b');
  const h1 = (await svc.publish('a', 'main', h0)).head;
  const err = await failure(svc.publish('b', 'main', h1, { rebase: true }));
  assert.is(err.code, 'E_PUBLISH_CONFLICT');
  for (const p of ['a.txt', 'lib', 'lib/deeper']) assert.ok(err.message.includes(p), err.message);
  assert.is(await svc.envHead('main'), h1);
  assert.is((await svc.readSession('b')).lastCheckpoint!.snapshot, cpb.snapshot);
});

test('a session publishes again onto its own earlier checkpoint without --rebase; after a rebase its next checkpoint still needs one, and keeps the other agent’s work', async () => {
  const { src, svc } = await setup();
  const p = await svc.create('p', { from: src });
  writeFileSync(join(p.root, 'one.txt'), 'one\n');
  await svc.checkpoint('p');
  const first = await svc.publish('p', 'main', await svc.envHead('main'));
  writeFileSync(join(p.root, 'two.txt'), 'two\n');
  await svc.checkpoint('p');
  // main is at p's first checkpoint, which p's tree went on from: a fast-forward.
  const second = await svc.publish('p', 'main', first.head);
  assert.is(second.rebased, undefined);
  assert.is(second.previous, first.head);

  // Another agent publishes; p rebases onto it, then works on: the rebased head is not p's tree.
  const q = await svc.create('q', { env: 'main' });
  writeFileSync(join(q.root, 'q.txt'), 'q\n');
  await svc.checkpoint('q');
  const byQ = await svc.publish('q', 'main', second.head);
  writeFileSync(join(p.root, 'three.txt'), 'three\n');
  await svc.checkpoint('p');
  const rebased = await svc.publish('p', 'main', byQ.head, { rebase: true });
  assert.is(rebased.rebased, true);
  writeFileSync(join(p.root, 'four.txt'), 'four\n');
  await svc.checkpoint('p');
  const stale = await failure(svc.publish('p', 'main', rebased.head));
  assert.is(stale.code, 'E_STALE_BASE', 'publishing the scan over the rebased head would drop q.txt');
  const last = await svc.publish('p', 'main', rebased.head, { rebase: true });
  const c = await svc.create('c', { env: 'main' });
  for (const f of ['one.txt', 'two.txt', 'q.txt', 'three.txt', 'four.txt']) assert.ok(existsSync(join(c.root, f)), `${f} in ${last.head}`);
});

test.run();
