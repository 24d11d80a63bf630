// discard's lease is written through the session directory's handle (issue 41, finding 11): with
// the session directory swapped back and forth with a link to an outside directory
// (renameat2 RENAME_EXCHANGE in a loop), no lease is ever made in the link's target.
import { existsSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
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

test.run();
