// The negative controls on the agent workload (two agents at once, one per session: agent a
// through a command, agent b over ACP with pdb-env as the client): each is caught by the oracle alone.
import { test } from 'uvu';
import type { Receipt } from '../../../harness/receipt/receipt-types.js';
import { tempDir } from '../../helpers/index.js';
import { assertEachControlCaught } from '../../helpers/controls/assert-caught.js';
import { benchControls } from '../../helpers/controls/run-controls.js';

const t = tempDir('pdb-controls-agents-');
test.after(() => t.cleanup());

let receipt: Receipt;
test.before(async () => {
  receipt = await benchControls(t.dir, {
    name: 'agent',
    params: { agentA: 'scripted', agentB: 'scripted', boundaryA: 'command', boundaryB: 'acp' },
  });
});

assertEachControlCaught('agent', () => receipt, ['source']);

test.run();
