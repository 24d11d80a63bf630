// Apply writes through directory handles (issue 41, findings 1 and 9): with DIR/d swapped back and
// forth with a link to an outside directory (renameat2 RENAME_EXCHANGE in a loop), nothing outside
// is touched and nothing of DIR is lost; and a rollback never brings back a path the user deleted
// or renamed after the apply had replaced it. PDB_APPLY_SWAP_ROUNDS sets the swap rounds (default 4).
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tempDir, skipPart, type TreeSpec } from '../../../helpers/index.js';
import { json, pdb, pdbAsync } from '../../../helpers/faults/fault-helpers.js';
import { applyCase, applySource, changedSession } from '../../../helpers/apply-fixture.js';
import { startSwapLoop, swapLoopMissing } from '../../../helpers/swap-loop.js';

const t = tempDir('pdb-apply-handles-');
test.after(() => t.cleanup());

const ROUNDS = Number(process.env.PDB_APPLY_SWAP_ROUNDS ?? 4);
const N = 200;

/** Every file below `dir` (no link followed) with its text. */
function contents(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const p = join(e.parentPath, e.name);
    if (e.isFile()) out.set(p.slice(dir.length + 1), readFileSync(p, 'utf8'));
  }
  return out;
}

/** What the swap round checks: outside untouched, every base file of d at its path or kept, no outside bytes in DIR. */
export function checkSwapRound(target: string, outside: string, outsideBefore: Map<string, string>, label: string): void {
  assert.equal(contents(outside), outsideBefore, `${label}: the outside directory changed`);
  const kept = existsSync(join(target, '.pdb/kept')) ? [...contents(join(target, '.pdb/kept')).values()] : [];
  for (const v of kept) assert.not.match(v, /^outside /, `${label}: an outside file was moved into DIR/.pdb/kept`);
  for (let i = 0; i < N; i++) {
    const p = join(target, 'd', `f${i}.txt`);
    const base = `d ${i}\n`;
    if (existsSync(p)) assert.ok([base, `session ${i}\n`].includes(readFileSync(p, 'utf8')), `${label}: d/f${i}.txt holds neither version`);
    else assert.ok(kept.includes(base), `${label}: d/f${i}.txt is gone and its base bytes are found nowhere`);
    const n = join(target, 'd', `n${i}.txt`);
    if (existsSync(n)) assert.is(readFileSync(n, 'utf8'), `new ${i}\n`);
  }
  for (const [p, v] of contents(target)) assert.not.match(v, /^outside /, `${label}: outside bytes in DIR at ${p}`);
}

test(`apply with DIR/d swapped for a link to an outside directory in a loop: nothing outside touched, nothing of DIR lost (${ROUNDS} rounds)`, async () => {
  const missing = swapLoopMissing();
  if (missing) return skipPart('the swap loop against apply', 'native-scan', missing);
  const codes: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const tree: TreeSpec = applySource(4);
    const d: TreeSpec = {};
    for (let i = 0; i < N; i++) d[`f${i}.txt`] = `d ${i}\n`;
    tree.d = d;
    const c = await applyCase(t.dir, `swap-${round}`, tree);
    for (let i = 0; i < N; i++) writeFileSync(join(c.outside, `f${i}.txt`), `outside ${i}\n`);
    await changedSession(c, 's', (root) => {
      for (let i = 0; i < N; i++) writeFileSync(join(root, 'd', `f${i}.txt`), `session ${i}\n`);
      for (let i = 0; i < N; i++) writeFileSync(join(root, 'd', `n${i}.txt`), `new ${i}\n`);
    });
    symlinkSync(c.outside, join(c.target, 'dl'));
    const outsideBefore = contents(c.outside);
    const loop = startSwapLoop(c.target, 'd', 'dl', join(c.target, '.pdb'));
    const r = await pdbAsync(c.store, ['apply', 's', '--to', c.target, '--json']);
    await loop.stop();
    codes.push(r.code ?? -1);
    if (r.code !== 0) assert.match(JSON.parse(r.stdout).error.code, /^(E_APPLY_CONFLICT|E_BAD_PATH|E_IO)$/, r.stdout + r.stderr);
    checkSwapRound(c.target, c.outside, outsideBefore, `round ${round}`);
    unlinkSync(join(c.target, 'dl'));
    const gc = pdb(c.store, ['gc']);
    assert.is(gc.code, 0, gc.stderr);
    checkSwapRound(c.target, c.outside, outsideBefore, `round ${round} after gc`);
    rmSync(c.dir, { recursive: true, force: true });
  }
});

test('a rollback never brings back what the user deleted or renamed after the apply had replaced it', async () => {
  const c = await applyCase(t.dir, 'user-delete');
  await changedSession(c, 's', (root) => {
    for (let i = 1; i <= 40; i++) writeFileSync(join(root, 'files', `f${i}.txt`), `session ${i}\n`);
    rmSync(join(root, 'd/c.txt'));
  });
  // The apply stops after its renames, before the delete of d/c.txt: f1..f40 hold the session's bytes.
  const crashed = pdb(c.store, ['apply', 's', '--to', c.target], { PDB_ENV_CRASH_AT: 'apply:after-renames' });
  assert.is(crashed.signal, 'SIGKILL', crashed.stderr);
  assert.is(readFileSync(join(c.target, 'files/f1.txt'), 'utf8'), 'session 1\n');
  // The user deletes one, renames another, and edits the file the apply would delete: gc must roll back.
  unlinkSync(join(c.target, 'files/f1.txt'));
  renameSync(join(c.target, 'files/f2.txt'), join(c.target, 'files/f2-moved.txt'));
  writeFileSync(join(c.target, 'd/c.txt'), 'the user\n');
  const gc = pdb(c.store, ['gc']);
  assert.is(gc.code, 0, gc.stderr);
  assert.match(gc.stdout + gc.stderr, /roll back/);
  assert.not.ok(existsSync(join(c.target, 'files/f1.txt')), 'the rollback brought back a file the user deleted');
  assert.not.ok(existsSync(join(c.target, 'files/f2.txt')), 'the rollback brought back a file the user renamed');
  assert.is(readFileSync(join(c.target, 'files/f2-moved.txt'), 'utf8'), 'session 2\n');
  assert.is(readFileSync(join(c.target, 'd/c.txt'), 'utf8'), 'the user\n');
  for (let i = 3; i <= 40; i++) assert.is(readFileSync(join(c.target, `files/f${i}.txt`), 'utf8'), `file ${i}\n`, `f${i} rolled back`);
  assert.equal(json(pdb(c.store, ['doctor', '--json'])).findings, []);
});

test.run();
