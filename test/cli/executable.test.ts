// checkExecutable: the shell's lookup rules, on a real temp tree.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { asStartFailure, checkExecutable } from '../../cli/executable.js';
import { PdbError } from '../../model/errors.js';
import { tempDir } from '../helpers.js';

const t = tempDir();
test.after(() => t.cleanup());
const a = join(t.dir, 'a');
const b = join(t.dir, 'b');
mkdirSync(a);
mkdirSync(b);
writeFileSync(join(a, 'tool'), '#!/bin/sh\n', { mode: 0o644 });
writeFileSync(join(b, 'tool'), '#!/bin/sh\n', { mode: 0o755 });
writeFileSync(join(a, 'only-plain'), '#!/bin/sh\n', { mode: 0o644 });
mkdirSync(join(a, 'dir'));
chmodSync(join(b, 'tool'), 0o755);

const code = (fn: () => void): string | null => {
  try {
    fn();
    return null;
  } catch (err) {
    return (err as PdbError).code;
  }
};

test('a bare name is looked up on PATH; a later executable match wins over a file without x', () => {
  assert.is(
    code(() => checkExecutable('tool', t.dir, `${a}:${b}`)),
    null,
  );
  assert.is(
    code(() => checkExecutable('tool', t.dir, a)),
    'E_COMMAND_NOT_EXECUTABLE',
  );
  assert.is(
    code(() => checkExecutable('only-plain', t.dir, `${a}:${b}`)),
    'E_COMMAND_NOT_EXECUTABLE',
  );
  assert.is(
    code(() => checkExecutable('dir', t.dir, a)),
    'E_COMMAND_NOT_EXECUTABLE',
  );
  assert.is(
    code(() => checkExecutable('absent', t.dir, `${a}:${b}`)),
    'E_COMMAND_NOT_FOUND',
  );
  // An empty PATH entry is the working directory.
  assert.is(
    code(() => checkExecutable('tool', b, `${a}:`)),
    null,
  );
});

test('a name with a slash is a path from the working directory', () => {
  assert.is(
    code(() => checkExecutable('./tool', b, '')),
    null,
  );
  assert.is(
    code(() => checkExecutable('./tool', a, `${b}`)),
    'E_COMMAND_NOT_EXECUTABLE',
  );
  assert.is(
    code(() => checkExecutable('b/tool', t.dir, '')),
    null,
  );
  assert.is(
    code(() => checkExecutable('./absent', b, `${b}`)),
    'E_COMMAND_NOT_FOUND',
  );
  assert.is(
    code(() => checkExecutable(join(b, 'tool'), a, '')),
    null,
  );
});

test('a start failure reported as E_USAGE becomes a start failure code; other errors pass', () => {
  const enoent = asStartFailure(new PdbError('E_USAGE', 'could not start "x": ENOENT')) as PdbError;
  assert.is(enoent.code, 'E_COMMAND_NOT_FOUND');
  assert.is((asStartFailure(new PdbError('E_USAGE', 'could not start "x": EACCES')) as PdbError).code, 'E_COMMAND_NOT_EXECUTABLE');
  const other = new PdbError('E_LEASE_BUSY', 'busy');
  assert.is(asStartFailure(other), other);
});

test.run();
