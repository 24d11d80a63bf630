// gc finishing an apply trusts nothing it reads from the target: a plan planted in the staging,
// staged files replaced by links out, DIR/.pdb turned into a link, a forged intent in the journal.
// Nothing outside DIR is ever moved, made or deleted; the real apply is finished from the store's
// own Changeset, or refused and reported (gc goes on and exits non-zero), never run from the target.
import { lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tempDir } from '../../../helpers/index.js';
import { assertTyped, json, pdb } from '../../../helpers/faults/fault-helpers.js';
import { applyCase, changedSession, filesOf, targetState, type ApplyCase } from '../../../helpers/apply-fixture.js';

const t = tempDir('pdb-apply-recover-');
test.after(() => t.cleanup());

/** A case whose session changes a.txt, adds new/n.txt and deletes lib; its apply killed once its staging is complete. */
async function crashedApply(label: string, point = 'apply:after-plan') {
  const c = await applyCase(t.dir, label);
  const cp = await changedSession(c, 's', (root) => {
    writeFileSync(join(root, 'a.txt'), 'changed by the session\n');
    mkdirSync(join(root, 'new'));
    writeFileSync(join(root, 'new/n.txt'), 'new\n');
    rmSync(join(root, 'lib'), { recursive: true });
  });
  const result = c.svc.readSnapshot(cp.snapshot).entries;
  const crashed = pdb(c.store, ['apply', 's', '--to', c.target], { PDB_ENV_CRASH_AT: point });
  assert.is(crashed.signal, 'SIGKILL', crashed.stderr);
  const staging = join(
    c.target,
    '.pdb',
    readdirSync(join(c.target, '.pdb')).find((n) => n.startsWith('apply-'))!,
  );
  return { c, result, staging, outsideBefore: await filesOf(c.outside) };
}

async function assertOutsideUntouched(c: ApplyCase, before: Awaited<ReturnType<typeof filesOf>>) {
  assert.equal(await filesOf(c.outside), before, 'nothing outside DIR changed');
  assert.equal(readdirSync(join(c.dir, 'work')), ['target'], 'nothing was made beside DIR');
}

test('a plan planted in the staging is never run: gc finishes the real apply and touches nothing outside DIR', async () => {
  const { c, result, staging, outsideBefore } = await crashedApply('planted-plan');
  const planted = {
    mkdirs: ['../../OUTSIDE/made-by-gc'],
    renames: [{ staged: join(c.outside, 'payload'), target: '../../OUTSIDE/moved' }],
    deletes: [{ path: '../../OUTSIDE/secret', dir: false }],
    removeFirst: [],
  };
  writeFileSync(join(staging, 'plan.json'), JSON.stringify(planted));
  const gc = pdb(c.store, ['gc', '--json']);
  await assertOutsideUntouched(c, outsideBefore);
  assert.is(gc.code, 0, gc.stdout + gc.stderr);
  assert.is(await targetState(c.target, c.base, result), 'applied');
  assert.equal(json(pdb(c.store, ['doctor', '--json'])).findings, []);
});

test('staged files replaced by links out of DIR and by other bytes: gc stages them again from the store', async () => {
  const { c, result, staging, outsideBefore } = await crashedApply('tampered-staging');
  const files = join(staging, 'files');
  const names = readdirSync(files);
  assert.ok(names.length >= 2, names.join(','));
  rmSync(join(files, names[0]!));
  symlinkSync(join(c.outside, 'secret'), join(files, names[0]!));
  rmSync(join(files, names[1]!), { force: true });
  writeFileSync(join(files, names[1]!), 'bytes the session never wrote\n');
  const gc = pdb(c.store, ['gc', '--json']);
  assert.is(gc.code, 0, gc.stdout + gc.stderr);
  await assertOutsideUntouched(c, outsideBefore);
  assert.is(await targetState(c.target, c.base, result), 'applied');
  // What was found in the staging is kept (a link as a link), and gc says so.
  assert.match(gc.stdout, /kept as/);
  const kept = readdirSync(join(c.target, '.pdb', 'kept'));
  assert.is(kept.length, 2, kept.join(','));
  assert.ok(kept.some((k) => lstatSync(join(c.target, '.pdb', 'kept', k)).isSymbolicLink()));
});

test('an edit moved aside just before a crash (found in the staging, not the base) is kept, never deleted', async () => {
  const { c, result, staging } = await crashedApply('edit-in-staging');
  const cs = c.svc.store.getDocument<{ changes: Array<{ path: string }> }>((await c.svc.readSession('s')).lastCheckpoint!.changeset);
  const index = cs.changes.findIndex((ch) => ch.path === 'a.txt');
  // As if the apply had moved a.txt aside a moment after the user wrote it, and was killed then.
  writeFileSync(join(c.target, 'a.txt'), 'the user wrote this just now\n');
  renameSync(join(c.target, 'a.txt'), join(staging, 'displaced', String(index)));
  const gc = pdb(c.store, ['gc', '--json']);
  assert.is(gc.code, 0, gc.stdout + gc.stderr);
  const kept = readdirSync(join(c.target, '.pdb', 'kept'));
  assert.equal(
    kept.map((k) => readFileSync(join(c.target, '.pdb', 'kept', k), 'utf8')),
    ['the user wrote this just now\n'],
  );
  assert.match(gc.stdout, /kept as/);
  assert.is(await targetState(c.target, c.base, result), 'untouched', 'rolled back around the lost edit');
});

test('DIR/.pdb replaced by a link to a planted staging: nothing in DIR corroborates the intent, so doctor reports it and gc quarantines it; nothing of DIR deleted, nothing outside', async () => {
  const { c, staging } = await crashedApply('linked-staging', 'apply:after-first-rename');
  // The planted staging outside holds a plan, a payload and the real marker; the real one is moved out too.
  const fake = join(c.outside, 'fake-pdb');
  renameSync(join(c.target, '.pdb'), fake);
  writeFileSync(join(fake, staging.split('/').pop()!, 'plan.json'), JSON.stringify({ deletes: [{ path: '../secret', dir: false }] }));
  symlinkSync(fake, join(c.target, '.pdb'));
  const fakeBefore = await filesOf(c.outside);
  const dirBefore = await filesOf(c.target);
  // Something else for gc to do: a temp file of a dead process.
  writeFileSync(join(c.store, 'tmp', 'write.4194305.x.abc123'), 'left by a crash');
  const doctor = json(pdb(c.store, ['doctor', '--json'])).findings as Array<{ kind: string; detail: string; repair: string | null }>;
  const found = doctor.find((f) => f.kind === 'untrusted-intent');
  assert.ok(found, JSON.stringify(doctor));
  assert.match(found!.detail, /\.pdb\/apply-.* not a real directory/);
  assert.match(found!.repair ?? '', new RegExp(`pdb-env apply s --to ${c.target}`));
  const gc = pdb(c.store, ['gc', '--json']);
  assert.is(gc.code, 0, gc.stdout + gc.stderr);
  assert.match(gc.stdout, /quarantine intent/);
  assert.equal(readdirSync(join(c.store, 'tmp')), [], 'gc went on and removed the dead temp file');
  assert.equal(await filesOf(c.outside), fakeBefore, 'nothing outside DIR changed, the planted staging included');
  assert.equal(await filesOf(c.target), dirBefore, 'gc changed nothing of DIR');
  assert.ok(lstatSync(join(c.target, '.pdb')).isSymbolicLink());
  assert.equal(readdirSync(join(c.store, 'journal')), []);
  assert.equal(json(pdb(c.store, ['doctor', '--json'])).findings, []);
});

test('a person removed the staging after a crash: the intent is quarantined and reported, never run; gc deletes nothing of DIR', async () => {
  const { c, staging } = await crashedApply('removed-staging', 'apply:after-first-rename');
  rmSync(join(c.target, '.pdb'), { recursive: true });
  const dirBefore = await filesOf(c.target);
  const all = json(pdb(c.store, ['doctor', '--json'])).findings as Array<{ kind: string; detail: string; repair: string | null }>;
  const doctor = all.filter((f) => f.kind !== 'stale-lock'); // the killed apply's lock
  assert.is(doctor.length, 1, JSON.stringify(all));
  assert.is(doctor[0]!.kind, 'untrusted-intent');
  assert.match(doctor[0]!.detail, /is missing/);
  assert.match(doctor[0]!.repair ?? '', /finish by hand with pdb-env apply s --to/);
  const gc = pdb(c.store, ['gc', '--json']);
  assert.is(gc.code, 0, gc.stdout + gc.stderr);
  assert.equal(await filesOf(c.target), dirBefore, 'gc changed nothing of DIR');
  assert.ok(readdirSync(join(c.store, 'quarantine', 'journal')).some((n) => staging.endsWith(`apply-${n.split('.json')[0]}`)));
});

test('a session discarded after its apply crashed, and a gc that could not finish it and swept: the next gc still can', async () => {
  const { c, result } = await crashedApply('discarded', 'apply:after-first-rename');
  await c.svc.discard('s');
  // The first gc cannot reach the target (as after a reboot before it is mounted: another device), so it sweeps what no root keeps; the apply's Changeset is a root.
  const [file] = readdirSync(join(c.store, 'journal'));
  const path = join(c.store, 'journal', file!);
  const intent = JSON.parse(readFileSync(path, 'utf8'));
  writeFileSync(path, JSON.stringify({ ...intent, detail: { ...intent.detail, dev: '4242' } }));
  const stuck = pdb(c.store, ['gc', '--json']);
  assert.is(stuck.code, 1, stuck.stdout);
  assert.not.match(stuck.stdout, /nothing swept/, 'the sweep ran');
  writeFileSync(path, JSON.stringify(intent));
  const gc = pdb(c.store, ['gc', '--json']);
  assert.is(gc.code, 0, gc.stdout + gc.stderr);
  assert.is(await targetState(c.target, c.base, result), 'applied');
  assert.equal(json(pdb(c.store, ['doctor', '--json'])).findings, []);
  assert.is(pdb(c.store, ['verify']).code, 0);
});

test('a target that is not on its filesystem any more (not mounted?) keeps the intent: gc reports it, and finishes once it is back', async () => {
  const { c, result } = await crashedApply('unmounted', 'apply:after-first-rename');
  const [file] = readdirSync(join(c.store, 'journal'));
  const path = join(c.store, 'journal', file!);
  const intent = JSON.parse(readFileSync(path, 'utf8'));
  // As seen after a reboot before the target's filesystem is mounted: DIR is on another device.
  writeFileSync(path, JSON.stringify({ ...intent, detail: { ...intent.detail, dev: '4242' } }));
  const before = await filesOf(c.target);
  const gc = pdb(c.store, ['gc', '--json']);
  assert.is(gc.code, 1, gc.stdout);
  assert.is(JSON.parse(gc.stdout).failed[0].code, 'E_SOURCE_MISSING');
  assert.equal(await filesOf(c.target), before, 'gc touched nothing');
  assert.match(json(pdb(c.store, ['doctor', '--json'])).findings[0].repair, /Mount the filesystem/);
  writeFileSync(path, JSON.stringify(intent));
  assert.is(pdb(c.store, ['gc']).code, 0);
  assert.is(await targetState(c.target, c.base, result), 'applied');
  // And a target removed for good (its filesystem there): nothing to finish, the intent goes.
  const again = await crashedApply('removed', 'apply:after-first-rename');
  rmSync(again.c.target, { recursive: true });
  const removed = pdb(again.c.store, ['gc', '--json']);
  assert.is(removed.code, 0, removed.stdout);
  assert.match(removed.stdout, /is gone/);
  assert.equal(json(pdb(again.c.store, ['doctor', '--json'])).findings, []);
});

test('a forged apply intent in the journal is quarantined and reported, never run', async () => {
  const c = await applyCase(t.dir, 'forged');
  const before = await filesOf(c.outside);
  const victim = join(c.outside, 'victim');
  mkdirSync(join(victim, '.pdb', 'apply-forged-1'), { recursive: true });
  writeFileSync(join(victim, 'keep.txt'), 'keep\n');
  writeFileSync(
    join(victim, '.pdb', 'apply-forged-1', 'plan.json'),
    JSON.stringify({ removeFirst: [], mkdirs: ['made'], renames: [], deletes: [{ path: 'keep.txt', dir: false }] }),
  );
  const victimBefore = await filesOf(c.outside);
  writeFileSync(
    join(c.store, 'journal', 'forged-1.json'),
    JSON.stringify({
      id: 'forged-1',
      op: 'apply',
      session: 's',
      pid: 4194305,
      pidStart: null,
      startedAt: '2020-01-01T00:00:00Z',
      detail: { dir: victim },
    }),
  );
  const gc = pdb(c.store, ['gc', '--json']);
  assert.equal(await filesOf(c.outside), victimBefore, `the forged plan ran: ${gc.stdout}`);
  assert.ok(before.length < victimBefore.length);
  assert.is(gc.code, 0, gc.stdout + gc.stderr);
  assert.match(gc.stdout, /quarantine/);
  assert.equal(readdirSync(join(c.store, 'journal')), []);
  assert.ok(readdirSync(join(c.store, 'quarantine', 'journal')).some((n) => n.startsWith('forged-1.json')));
});

test('after a crash mid-apply, a user edit is never overwritten by gc: the apply is rolled back around it', async () => {
  for (const which of ['not yet written', 'already written'] as const) {
    const c = await applyCase(t.dir, `edit-then-gc-${which.replace(/ /g, '-')}`);
    const cp = await changedSession(c, 's', (root) => {
      for (let i = 1; i <= 40; i++) writeFileSync(join(root, 'files', `f${i}.txt`), `session ${i}\n`);
    });
    const result = c.svc.readSnapshot(cp.snapshot).entries;
    const crashed = pdb(c.store, ['apply', 's', '--to', c.target], { PDB_ENV_CRASH_AT: 'apply:after-first-rename' });
    assert.is(crashed.signal, 'SIGKILL', crashed.stderr);
    const written = readFileSync(join(c.target, 'files/f1.txt'), 'utf8') === 'session 1\n' ? 'f1' : 'f10';
    const edited = which === 'already written' ? written : 'f9';
    writeFileSync(join(c.target, 'files', `${edited}.txt`), 'the user was here\n');
    const gc = pdb(c.store, ['gc', '--json']);
    assert.is(gc.code, 0, gc.stdout + gc.stderr);
    assert.is(readFileSync(join(c.target, 'files', `${edited}.txt`), 'utf8'), 'the user was here\n', `${which}: the edit was lost`);
    const now = await filesOf(c.target);
    const others = (es: typeof now) => es.filter((e) => e.path !== `files/${edited}.txt`);
    assert.equal(others(now), others(c.base), `${which}: the rest is not rolled back: ${await targetState(c.target, c.base, result)}`);
    assert.match(gc.stdout, new RegExp(`files/${edited}\\.txt`));
    assert.equal(json(pdb(c.store, ['doctor', '--json'])).findings, []);
    assertTyped(pdb(c.store, ['apply', 's', '--to', c.target, '--json']), 'E_APPLY_CONFLICT', `${which}: apply again`);
  }
});

test.run();
