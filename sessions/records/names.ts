// The names a store accepts for sessions and environments: one pattern, so a name is a single
// safe path component (no "/", no "..", no leading dot) wherever it is used as a file name.
import { PdbError } from '../../model/errors.js';

export const SESSION_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function assertSessionName(name: string): void {
  if (!SESSION_NAME_PATTERN.test(name)) {
    throw new PdbError('E_BAD_NAME', `"${name}" is not a safe session name`, {
      hint: 'Use 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit (no "/", no "..").',
    });
  }
}

export function assertEnvName(name: string): void {
  if (!SESSION_NAME_PATTERN.test(name))
    throw new PdbError('E_BAD_NAME', `"${name}" is not a safe environment name`, { hint: 'Use letters, digits, ".", "_" or "-".' });
}
