// The oracle's kept trees: written where no step runs (the run's oracle directory, not the case's
// scratch folder), and read back only as written, so a tree changed before its block ends is refused.
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { keepOracleTree, type OracleTree } from '../../../harness/case/oracle-tree.js';
import { isPdbError } from '../../../model/errors.js';
import { tempDir } from '../../helpers/index.js';

const t = tempDir('pdb-oracle-tree-');
test.after(() => t.cleanup());

const tree: OracleTree = {
  entries: [{ path: 'a', kind: 'file', digest: `sha256:${'a'.repeat(64)}`, size: 1, exec: false }],
  files: 1,
  filesHashed: 1,
  scope: ['source'],
  projection: { volatile: [], dropped: [] },
};

test('a kept tree reads back as written, from the directory it was given', () => {
  const read = keepOracleTree(t.dir, 'b0-p1', tree);
  assert.equal(readdirSync(t.dir), ['b0-p1.json']);
  assert.equal(read(), tree);
});

test('a kept tree changed before it is read back is refused (E_SOURCE_CHANGED), never judged', () => {
  const read = keepOracleTree(t.dir, 'b0-p2', tree);
  writeFileSync(join(t.dir, 'b0-p2.json'), JSON.stringify({ ...tree, files: 2 }));
  try {
    read();
    assert.unreachable('an edited tree was read');
  } catch (err) {
    assert.ok(isPdbError(err, 'E_SOURCE_CHANGED'), String(err));
  }
});

test.run();
