import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PdbError, isPdbError, toPdbError } from '../../model/errors.js';

function osError(code: string, message: string, path?: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code, ...(path ? { path } : {}) });
}

test('OS errors are classified by err.code, with the path and a hint', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['ENOSPC', 'E_NO_SPACE', /Free space/],
    ['EDQUOT', 'E_NO_SPACE', /quota/],
    ['EROFS', 'E_READ_ONLY', /read-write/],
    ['EACCES', 'E_PERMISSION', /chattr/],
    ['EPERM', 'E_PERMISSION', /owner/],
    ['ENOENT', 'E_IO', /pdb-env doctor/],
  ];
  for (const [errno, code, hint] of cases) {
    const cause = osError(errno, `${errno}: something, write`);
    const e = toPdbError(cause, 'E_INTERNAL', { action: 'writing the intent', path: '/store/journal/x.json' });
    assert.is(e.code, code, errno);
    assert.match(e.message, /^writing the intent failed: /);
    assert.match(e.message, /\(\/store\/journal\/x\.json\)$/, 'the path Node left out is named');
    assert.match(e.hint!, hint);
    assert.is(e.cause, cause, 'the original is kept');
  }
  // A path Node already put in the message is not repeated.
  const open = toPdbError(osError('ENOSPC', "ENOSPC: no space left on device, open '/s/x'", '/s/x'));
  assert.is(open.message.split('/s/x').length, 2);
});

test('anything else is the fallback code (E_INTERNAL: a bug) with its cause; PdbErrors pass through', () => {
  const bug = new TypeError('x is not a function');
  const e = toPdbError(bug);
  assert.is(e.code, 'E_INTERNAL');
  assert.is(e.cause, bug);
  // Node's own ERR_* codes are not OS errors.
  assert.is(toPdbError(osError('ERR_INVALID_ARG_TYPE', 'bad arg')).code, 'E_INTERNAL');
  const typed = new PdbError('E_HEAD_MOVED', 'moved');
  assert.is(toPdbError(typed, 'E_IO', { action: 'x' }), typed);
});

test('a PdbError made by another copy of the module is a PdbError here (the checkpoint bundle holds one)', async () => {
  const other = (await import(`../../model/errors.js?copy=${Date.now()}`)) as typeof import('../../model/errors.js');
  assert.ok(other.PdbError !== PdbError, 'a second module instance');
  const theirs = new other.PdbError('E_SESSION_BUSY', 'busy');
  assert.ok(theirs instanceof PdbError);
  assert.ok(isPdbError(theirs, 'E_SESSION_BUSY'));
  assert.is(toPdbError(theirs), theirs, 'passed through, not wrapped as an internal error');
  assert.ok(new PdbError('E_IO', 'x') instanceof other.PdbError);
  // Anything else is not one, whatever its name says.
  assert.not.ok(Object.assign(new Error('x'), { name: 'PdbError', code: 'E_IO' }) instanceof PdbError);
  assert.not.ok(isPdbError(null));
  assert.not.ok(isPdbError('E_IO'));
});

test.run();
