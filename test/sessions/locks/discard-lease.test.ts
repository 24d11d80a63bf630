// discard's lease is written through the session directory's handle (issue 41, finding 11): with
// the session directory swapped back and forth with a link to an outside directory
// (renameat2 RENAME_EXCHANGE in a loop), no lease is ever made in the link's target.
import { existsSync, mkdirSync, readdirSync, renameSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isPdbError } from '../../../model/errors.js';
import { acquireDiscardLease } from '../../../sessions/locks/lease.js';
import { skipPart, tempDir } from '../../helpers/index.js';
import { startSwapLoop, swapLoopMissing } from '../../helpers/swap-loop.js';

const t = tempDir('pdb-discard-lease-');
test.after(() => t.cleanup());

const TRIES = Number(process.env.PDB_DISCARD_SWAP_TRIES ?? 300);

test(`the discard lease is never written through a session directory swapped for a link (${TRIES} tries)`, async () => {
  const missing = swapLoopMissing();
  if (missing) return skipPart('the swap loop against the discard lease', 'native-scan', missing);
  const sessions = join(t.dir, 'sessions');
  const outside = join(t.dir, 'OUTSIDE');
  mkdirSync(join(sessions, 'victim'), { recursive: true });
  mkdirSync(outside);
  symlinkSync(outside, join(sessions, 'vl'));
  const loop = startSwapLoop(sessions, 'victim', 'vl');
  let taken = 0;
  try {
    for (let i = 0; i < TRIES && !existsSync(join(outside, 'lease')); i++) {
      try {
        const lease = await acquireDiscardLease(join(sessions, 'victim'), 'victim');
        taken++;
        await lease.release();
      } catch (err) {
        // Refused while the name is a link: fine, nothing written. Anything else is a failure.
        assert.ok(isPdbError(err), String(err));
      }
    }
  } finally {
    await loop.stop();
  }
  assert.equal(readdirSync(outside), [], 'a lease was made in the link target');
  assert.ok(taken > 0, 'no lease was ever taken: the test did not test');
});

// A peer's discard moves the session directory into the store's tmp and deletes it there while a
// waiting discard holds a handle to it: a lease written through that handle landed in the tree
// being deleted (seen as `ENOTEMPTY` removing the discarded session in the 8-parallel-discards
// test). The waiting discard must learn the session is gone and leave nothing in the moved tree.
test('a discard lease taken through a directory moved away meanwhile is given up: the session is gone, nothing left in the moved tree', async () => {
  const sessions = join(t.dir, 'moved', 'sessions');
  const trash = join(t.dir, 'moved', 'trash');
  mkdirSync(join(sessions, 'victim'), { recursive: true });
  let moved = false;
  const err = await acquireDiscardLease(join(sessions, 'victim'), 'victim', {
    afterOpen: () => {
      if (!moved) renameSync(join(sessions, 'victim'), trash);
      moved = true;
    },
  }).then(
    async (lease) => {
      await lease.release();
      return null;
    },
    (e: unknown) => e,
  );
  assert.ok(moved);
  assert.ok(isPdbError(err, 'E_SESSION_NOT_FOUND'), `a lease was taken in the moved directory (${String(err)})`);
  assert.equal(readdirSync(trash), [], 'the waiting discard left something in the tree being deleted');
});

test.run();
