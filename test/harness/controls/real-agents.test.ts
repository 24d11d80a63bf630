// The negative controls on the real-agents workload: the real Codex CLI and Claude Code, driven by
// pdb-env's scripted model through their own tools, one per session at once; each control is
// caught by the oracle alone (the agents' own edits may fail on a wrong file, and the oracle still
// judges the tree).
import { test } from 'uvu';
import type { Receipt } from '../../../harness/receipt/receipt-types.js';
import { realAgentsMissing, skipTest, tempDir } from '../../helpers/index.js';
import { assertEachControlCaught } from '../../helpers/controls/assert-caught.js';
import { benchControls } from '../../helpers/controls/run-controls.js';

const t = tempDir('pdb-controls-real-agents-');
test.after(() => t.cleanup());

const missing = realAgentsMissing();
if (missing) skipTest('real-agents: the oracle alone catches every control', 'real-agents', missing);
else {
  let receipt: Receipt;
  test.before(async () => {
    receipt = await benchControls(t.dir, { name: 'real-agents' }, { caseTimeoutMs: 900_000 });
  });
  assertEachControlCaught('real-agents', () => receipt, ['source']);
}

test.run();
