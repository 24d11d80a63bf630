import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { processStartTime } from '../../../model/os/proc.js';
import { parseTempName, tempEntryName, tempOwnerAlive } from '../../../model/os/temp-name.js';

test('a temp name carries its owner: <kind>.<pid>.<start>.<random>', () => {
  const name = tempEntryName('base-tree');
  assert.match(name, /^base-tree\.\d+\.(\d+|x)\.[0-9a-f]{12}$/);
  assert.equal(parseTempName(name), { kind: 'base-tree', pid: process.pid, pidStart: processStartTime(process.pid) });
  assert.is(tempOwnerAlive(name), true);
  assert.is(tempOwnerAlive(`obj.${2 ** 22 + 1}.x.abc`), false, 'a pid above pid_max is never alive');
  assert.is(tempOwnerAlive(`obj.${process.pid}.1.abc`), false, 'a reused pid (another start time) is not the owner');
});

test('only the structured form is parsed: a word of an older name is never taken for a pid', () => {
  for (const name of [
    `base-tree-${process.pid}-abc`,
    `obj-${process.pid}-1-xyz`,
    'write-12-ab',
    'base-tree.tree.1.abc',
    'x.0.1.abc',
    '.obj.1.2.abc',
    'obj.1.2.',
  ])
    assert.is(parseTempName(name), null, name);
  assert.is(tempOwnerAlive(`base-tree-${process.pid}-abc`), null);
  assert.throws(() => tempEntryName('Bad.Kind'), /bad temp kind/);
});

test.run();
