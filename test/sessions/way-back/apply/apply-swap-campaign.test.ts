// A few rounds of the swap campaign (swap-campaign.ts): apply, restore and discard killed at random moments
// while a directory they write in is swapped with a link in a loop; 0 lost, 0 wrong, nothing
// outside. PDB_SWAP_CAMPAIGN_KILLS sets the rounds (default 6; the full campaign is 100).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { skipPart, tempDir } from '../../../helpers/index.js';
import { swapLoopMissing } from '../../../helpers/swap-loop.js';
import { runSwapCampaign } from './swap-campaign.js';

const KILLS = Number(process.env.PDB_SWAP_CAMPAIGN_KILLS ?? 6);
const t = tempDir('pdb-swap-campaign-');
test.after(() => t.cleanup());

test(`${KILLS} random-moment kills of apply, restore and discard under a swap loop: 0 lost, 0 wrong, nothing outside`, async () => {
  const missing = swapLoopMissing();
  if (missing) return skipPart('the swap campaign', 'native-scan', missing);
  const r = await runSwapCampaign(t.dir, KILLS, 41);
  assert.equal(r.findings, []);
  assert.is(r.rounds, KILLS);
  // The first rounds run each operation once.
  for (const op of ['apply', 'restore', 'discard'] as const) assert.ok(r.killed[op] + r.finished[op] > 0, `no ${op} round ran`);
});

test.run();
