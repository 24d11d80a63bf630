// The negative controls on the repo workload (a user's own repository with a step that builds
// from it): each is caught by the oracle alone. With the oracle trusting the checkpoint instead,
// the controls whose bytes are wrong under a valid signature pass: that is why it hashes.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Receipt } from '../../../harness/receipt/receipt-types.js';
import { writeEntryKinds } from '../../../workloads/entry-kinds.js';
import { tempDir } from '../../helpers/index.js';
import { assertEachControlCaught } from '../../helpers/controls/assert-caught.js';
import { ORACLE_ALONE, benchControls, caseOf, controlBackendName, describeCase, oracleOf } from '../../helpers/controls/run-controls.js';

const t = tempDir('pdb-controls-repo-');
test.after(() => t.cleanup());

const source = join(t.dir, 'my-repo');
const REPO = {
  name: 'repo',
  params: { source: '${SOURCE}', label: 'my-repo', steps: [{ name: 'build', run: 'mkdir -p out && cat lib/a.js > out/a.js' }] },
};
let receipt: Receipt;

test.before(async () => {
  mkdirSync(join(source, 'lib'), { recursive: true });
  writeFileSync(join(source, 'lib', 'a.js'), 'export const a = 1;\n');
  writeFileSync(join(source, 'README.md'), '# my repo\n');
  await writeEntryKinds(source);
  receipt = await benchControls(t.dir, REPO, { vars: { SOURCE: source } });
});

assertEachControlCaught('repo', () => receipt, ['source']);

test('with the oracle trusting the checkpoint, wrong bytes under a valid signature pass: the hashing is what catches them', async () => {
  const trusting = await benchControls(t.dir, REPO, {
    vars: { SOURCE: source },
    controls: ['wrong-bytes', 'truncated'],
    switches: { ...ORACLE_ALONE, oracleHashing: false },
  });
  for (const control of ['wrong-bytes', 'truncated'] as const) {
    const c = caseOf(trusting, controlBackendName(control));
    const oracle = oracleOf(c);
    assert.ok(oracle.evaluated, describeCase(c));
    assert.ok(oracle.passed, `${control} passes a trusting oracle: ${describeCase(c)}`);
    assert.ok(oracle.filesHashed!.case < oracle.files!.case, 'the trusting checkpoint took files on trust');
  }
});

test.run();
