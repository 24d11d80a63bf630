// The negative controls on the two-agent workload (two scripted agents at once, one per session):
// each is caught by the oracle alone.
import { test } from 'uvu';
import type { Receipt } from '../../../harness/receipt/receipt-types.js';
import { tempDir } from '../../helpers/index.js';
import { assertEachControlCaught } from '../../helpers/controls/assert-caught.js';
import { benchControls } from '../../helpers/controls/run-controls.js';

const t = tempDir('pdb-controls-two-agent-');
test.after(() => t.cleanup());

let receipt: Receipt;
test.before(async () => {
  receipt = await benchControls(t.dir, { name: 'two-agent', params: { nestedFiles: 4 } });
});

assertEachControlCaught('two-agent', () => receipt, ['source']);

test.run();
