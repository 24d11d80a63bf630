// Random-moment kills (SIGKILL at a random time, not at a crash point) of apply, apply while the
// user edits the target, export --patch, export --git, publish --rebase and gc, round robin, each
// followed by gc, doctor and verify through the CLI and the check that the result is untouched or
// whole (test/helpers/faults/kill-scenarios.ts). PDB_KILL_RUNS sets the number of runs (default 12: two
// of each); PDB_KILL_SEED replays a campaign (the seed is printed).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createRandom } from '../../../harness/plan/prng.js';
import { tempDir } from '../../helpers/index.js';
import { OPS, openCampaign } from '../../helpers/faults/kill-campaign.js';
import { killOnce } from '../../helpers/faults/kill-scenarios.js';

const RUNS = Number(process.env.PDB_KILL_RUNS ?? 12);
const SEED = Number(process.env.PDB_KILL_SEED ?? Math.floor(Math.random() * 2 ** 32));
const t = tempDir('pdb-kills-');
test.after(() => t.cleanup());

test(`${RUNS} random-moment kills of apply, export, publish --rebase and gc leave every result untouched or whole (seed ${SEED})`, async () => {
  const t0 = Date.now();
  const c = await openCampaign(t.dir, createRandom(SEED));
  console.log(`  seed ${SEED} (PDB_KILL_SEED=${SEED} replays it); uncrashed: ${OPS.map((o) => `${o} ${c.took[o]} ms`).join(', ')}`);
  for (let i = 0; i < RUNS; i++) console.log(`  ${await killOnce(c, OPS[i % OPS.length]!, i)}`);
  const killed = OPS.reduce((n, o) => n + c.counts[o].killed, 0);
  const per = OPS.map((o) => `${o} ${c.counts[o].killed}/${c.counts[o].killed + c.counts[o].finished}`).join(', ');
  console.log(
    `random kills: ${killed} killed of ${RUNS} runs (${per}), 0 lost or wrong, seed ${SEED} (${Math.round((Date.now() - t0) / 1000)} s)`,
  );
  assert.ok(RUNS < OPS.length * 2 || killed > 0, 'no run was killed: the delays are too long to test anything');
});

test.run();
