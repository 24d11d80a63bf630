// The negative controls on the fileops workload: each is caught by the oracle alone (the sibling,
// base and created-tree checks switched off), reading both trees from their bytes. A control's
// cases make the gate REJECT it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Receipt } from '../../../harness/receipt/receipt-types.js';
import { evaluateGate } from '../../../reports/gate/gate.js';
import { validatePolicy } from '../../../reports/gate/gate-policy.js';
import { tempDir } from '../../helpers/index.js';
import { benchControls, controlBackendName } from '../../helpers/controls/run-controls.js';
import { assertEachControlCaught } from '../../helpers/controls/assert-caught.js';

const t = tempDir('pdb-controls-fileops-');
test.after(() => t.cleanup());

const FILEOPS = { name: 'fileops', params: { smallFiles: 60, largeFileBytes: 1048576, newSmallFiles: 10 } };
let receipt: Receipt;

test.before(async () => {
  receipt = await benchControls(t.dir, FILEOPS);
});

assertEachControlCaught('fileops', () => receipt, ['source']);

test('the gate REJECTs a control on its cases', () => {
  const policy = validatePolicy({
    kind: 'pdb-env-policy',
    policyVersion: 2,
    name: 'control',
    description: 'A negative control must be rejected.',
    candidate: controlBackendName('wrong-bytes'),
    baseline: 'full-copy',
    workloads: ['fileops'],
    hosts: { minHosts: 1, minDistinctPlatforms: 1 },
    minBlocksPerWorkloadAndHost: 1,
    minFixtures: 1,
    correctness: { maxMismatches: 0, maxMismatchUpper95: 1, maxFailureUpper95: 1 },
    clone: { requireObserved: false, requireTypedFailures: false, requireFallbackEvidence: false },
    fixtures: { ratio: ['fileops@*'], slack: [] },
    speedup: { phases: ['create'], maxRatioUpper95: 10, noSlowdownPhases: [] },
    slack: { phases: ['create'], maxSlowerMs: 0 },
  });
  // A test run is not at a clean commit: judge it as if it were, the gate's other rules unchanged.
  const clean = { ...receipt, provenance: { ...receipt.provenance, commit: 'a'.repeat(40), dirty: false, changedDuringRun: false } };
  const gate = evaluateGate([clean], policy);
  assert.is(gate.verdict, 'REJECT', JSON.stringify(gate.findings, null, 1));
});

test.run();
