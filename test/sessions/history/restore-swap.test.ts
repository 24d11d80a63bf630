// restore's staging, ROOT/.pdb/restore-<id>, swapped with a link to an outside directory in a loop
// (renameat2 RENAME_EXCHANGE of ROOT/.pdb and ROOT/.pdbl) while restores run: nothing is made,
// changed or removed outside, before or after gc (issue 41). A swap during the safety checkpoint
// fails it (E_SOURCE_CHANGED: nothing restored).
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SessionService } from '../../../sessions/service.js';
import { pdb } from '../../helpers/faults/fault-helpers.js';
import { skipPart, tempDir, writeTree } from '../../helpers/index.js';
import { startSwapLoop, swapLoopMissing } from '../../helpers/swap-loop.js';

const ROUNDS = Number(process.env.PDB_RESTORE_SWAP_ROUNDS ?? 6);
const N = 40;
const t = tempDir('pdb-restore-swap-');
test.after(() => t.cleanup());

/** Every name below `dir` (no link followed) and every file's text. */
function listing(dir: string): string {
  const names = readdirSync(dir, { recursive: true, withFileTypes: true });
  return JSON.stringify(
    names
      .map((e) => [join(e.parentPath, e.name).slice(dir.length), e.isFile() ? readFileSync(join(e.parentPath, e.name), 'utf8') : ''])
      .sort(),
  );
}

test(`restore with ROOT/.pdb swapped for a link to an outside directory in a loop: nothing outside (${ROUNDS} rounds)`, async () => {
  const missing = swapLoopMissing();
  if (missing) return skipPart('the swap loop against restore', 'native-scan', missing);
  const outside = join(t.dir, 'OUTSIDE');
  writeTree(outside, { 'secret.txt': 'do not touch\n' });
  const src = join(t.dir, 'src');
  const files: Record<string, string> = {};
  for (let i = 0; i < N; i++) files[`f${i}.txt`] = `base ${i}\n`;
  writeTree(src, files);
  symlinkSync(outside, join(src, '.pdbl')); // in every checkpoint: the restore never removes it
  const store = join(t.dir, 'store');
  const svc = await SessionService.open(store, { create: true });
  const s = await svc.create('s', { from: src });
  for (let i = 0; i < N; i++) writeFileSync(join(s.root, `f${i}.txt`), `one ${i}\n`);
  await svc.checkpoint('s');
  const before = listing(outside);
  for (let round = 0; round < ROUNDS; round++) {
    mkdirSync(join(s.root, '.pdb'), { recursive: true });
    const loop = startSwapLoop(s.root, '.pdb', '.pdbl');
    const r = pdb(store, ['restore', 's', '--to', round % 2 === 0 ? 'base' : '1', '--json']);
    await loop.stop();
    if (r.code !== 0)
      assert.match(JSON.parse(r.stdout).error.code, /^(E_BAD_PATH|E_IO|E_CROSS_DEVICE|E_SOURCE_CHANGED)$/, r.stdout + r.stderr);
    assert.is(listing(outside), before, `round ${round}: the outside directory changed (${r.stdout})`);
    const gc = pdb(store, ['gc']);
    assert.is(gc.code, 0, gc.stdout + gc.stderr);
    assert.is(listing(outside), before, `round ${round}: gc changed the outside directory`);
  }
});

test.run();
