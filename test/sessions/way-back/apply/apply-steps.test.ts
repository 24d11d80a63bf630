// The compare-and-set of apply holds to the last rename: two applies into one directory at once
// (exactly one wins, whole; the other writes nothing), and a user edit made while an apply is
// staging (never lost: the apply stops with E_APPLY_CONFLICT naming it and what it had renamed is
// rolled back, so the target is as before plus the edit).
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tempDir } from '../../../helpers/index.js';
import { json, pdb, pdbAsync } from '../../../helpers/faults/fault-helpers.js';
import { applyCase, changedSession, filesOf, targetState } from '../../../helpers/apply-fixture.js';
import { diffEntries } from '../../../../model/snapshot.js';

const t = tempDir('pdb-apply-steps-');
test.after(() => t.cleanup());

const ROUNDS = Number(process.env.PDB_APPLY_RACE_ROUNDS ?? 3);

function addMany(root: string, dir: string, n: number): void {
  mkdirSync(join(root, dir));
  for (let i = 0; i < n; i++) writeFileSync(join(root, dir, `n${i}.txt`), `${dir} ${i}\n`);
}

test(`two applies into one directory at once: exactly one wins whole, the other writes nothing (${ROUNDS} rounds)`, async () => {
  for (let round = 0; round < ROUNDS; round++) {
    const c = await applyCase(t.dir, `race-${round}`);
    const a = await changedSession(c, 'a', (root) => {
      for (let i = 1; i <= 40; i++) writeFileSync(join(root, 'files', `f${i}.txt`), `a ${i}\n`);
      addMany(root, 'added-a', 400);
    });
    const b = await changedSession(c, 'b', (root) => {
      writeFileSync(join(root, 'files/f1.txt'), 'b 1\n');
      addMany(root, 'added-b', 400);
    });
    const [ra, rb] = await Promise.all([
      pdbAsync(c.store, ['apply', 'a', '--to', c.target, '--json']),
      pdbAsync(c.store, ['apply', 'b', '--to', c.target, '--json']),
    ]);
    const wins = [ra, rb].filter((r) => r.code === 0);
    assert.is(wins.length, 1, `round ${round}: ${wins.length} applies exited 0:\n${ra.stdout}${ra.stderr}\n${rb.stdout}${rb.stderr}`);
    const loser = ra.code === 0 ? rb : ra;
    assert.match(JSON.parse(loser.stdout).error.code, /^(E_APPLY_CONFLICT|E_LEASE_BUSY)$/, loser.stdout);
    const winner = ra.code === 0 ? a : b;
    assert.is(await targetState(c.target, c.base, c.svc.readSnapshot(winner.snapshot).entries), 'applied', `round ${round}`);
    assert.not.ok(existsSync(join(c.target, '.pdb')), 'the staging is gone');
    assert.equal(json(pdb(c.store, ['doctor', '--json'])).findings, []);
  }
});

test('a user edit made while the apply stages is never lost: E_APPLY_CONFLICT naming it, the rest rolled back', async () => {
  let conflicts = 0;
  for (let round = 0; round < 4; round++) {
    const c = await applyCase(t.dir, `edit-${round}`);
    const cp = await changedSession(c, 's', (root) => {
      for (let i = 1; i <= 40; i++) writeFileSync(join(root, 'files', `f${i}.txt`), `session ${i}\n`);
      addMany(root, 'added', 400);
      writeFileSync(join(root, 'big.bin'), Buffer.alloc(24 << 20, 7));
      writeFileSync(join(root, 'zz/last.txt'), 'the session\n');
    });
    const result = c.svc.readSnapshot(cp.snapshot).entries;
    const run = pdbAsync(c.store, ['apply', 's', '--to', c.target, '--json']);
    const pdbDir = join(c.target, '.pdb');
    while (!(existsSync(pdbDir) && readdirSync(pdbDir).some((n) => n.startsWith('apply-')))) await sleep(1);
    writeFileSync(join(c.target, 'zz/last.txt'), 'the user\n');
    const r = await run;
    assert.is(readFileSync(join(c.target, 'zz/last.txt'), 'utf8'), 'the user\n', `round ${round}: the user's edit was lost (${r.stdout})`);
    const now = await filesOf(c.target);
    const withoutEdit = (es: typeof now) => es.filter((e) => e.path !== 'zz/last.txt');
    if (r.code === 0) {
      assert.equal(diffEntries(withoutEdit(result), withoutEdit(now)), [], 'applied, with the edit after it');
    } else {
      conflicts++;
      const err = JSON.parse(r.stdout).error as { code: string; message: string };
      assert.is(err.code, 'E_APPLY_CONFLICT', r.stdout);
      assert.match(err.message, /zz\/last\.txt/);
      assert.equal(
        diffEntries(withoutEdit(c.base), withoutEdit(now)),
        [],
        `round ${round}: not rolled back: ${await targetState(c.target, c.base, result)}`,
      );
    }
    assert.not.ok(existsSync(pdbDir), 'the staging is gone');
    assert.equal(json(pdb(c.store, ['doctor', '--json'])).findings, []);
  }
  assert.ok(conflicts > 0, 'no round saw the edit before the apply reached it: the test did not test');
});

test.run();
