// The negative controls on a developer lane (pnpm: a real install from the registry into each
// session, from a store shared outside them): each is caught by the oracle alone, which compares
// the sources, the installed tree and the build output by their bytes.
import { test } from 'uvu';
import type { Receipt } from '../../../harness/receipt/receipt-types.js';
import { registryProblem, skipTest, tempDir } from '../../helpers/index.js';
import { assertEachControlCaught } from '../../helpers/controls/assert-caught.js';
import { benchControls } from '../../helpers/controls/run-controls.js';

const t = tempDir('pdb-controls-lanes-');
test.after(() => t.cleanup());

let receipt: Receipt;
const problem = registryProblem();
if (problem) skipTest('pnpm-lane: the oracle alone catches every control', 'registry', problem);
else {
  test.before(async () => {
    receipt = await benchControls(t.dir, { name: 'pnpm-lane', params: { steps: ['install', 'vite-build'] } }, { caseTimeoutMs: 600_000 });
  });
  assertEachControlCaught('pnpm-lane', () => receipt, ['source', 'installed', 'build']);
}

test.run();
