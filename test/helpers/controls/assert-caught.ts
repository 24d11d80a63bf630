// The assertions every workload family's control test makes: the block's full-copy case is ok and
// was hashed from its bytes, and each control's oracle check was evaluated and failed, on both
// sides reading every file it compares, with only the oracle left to judge.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { OracleScopeName, Receipt } from '../../../harness/receipt/receipt-types.js';
import { CONTROLS, caseOf, controlBackendName, describeCase, oracleOf, type ControlName } from './run-controls.js';

export function assertEachControlCaught(
  family: string,
  receipt: () => Receipt,
  scope: OracleScopeName[],
  controls: readonly ControlName[] = CONTROLS,
): void {
  test(`${family}: the full-copy case is ok, and the oracle read its tree in a phase of its own`, () => {
    const ref = caseOf(receipt(), 'full-copy');
    assert.is(ref.outcome, 'ok', describeCase(ref));
    assert.ok(
      ref.phases.some((p) => p.name === 'oracle-scan' && p.outcome === 'ok'),
      ref.phases.map((p) => p.name).join(', '),
    );
  });
  for (const control of controls) {
    test(`${family}: the oracle alone catches ${control}`, () => {
      const c = caseOf(receipt(), controlBackendName(control));
      const oracle = oracleOf(c);
      assert.ok(oracle.evaluated, describeCase(c));
      assert.is(oracle.passed, false, describeCase(c));
      assert.ok((oracle.mismatches ?? 0) > 0, describeCase(c));
      assert.ok(oracle.files!.case > 0 && oracle.files!.reference! > 0);
      assert.equal(oracle.filesHashed, oracle.files, 'both sides hashed every file they compared');
      assert.equal(oracle.scope, scope);
      assert.ok(['mismatch', 'failed'].includes(c.outcome), describeCase(c));
      const others = c.checks.filter((k) => ['sibling-unchanged', 'base-unchanged', 'created-tree'].includes(k.name));
      assert.equal(others, [], 'the sibling, base and created-tree checks were off: only the oracle judged the tree');
    });
  }
}
