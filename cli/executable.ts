// `run` and `enter` fail like a shell when their program cannot start: 127 when it is not found,
// 126 when it is found but cannot be executed, never 2 (which means bad pdb-env usage).
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, resolve } from 'node:path';
import { PdbError, isPdbError, osErrorCode } from '../model/errors.js';

type Found = 'executable' | 'missing' | 'directory' | 'not executable';

function inspect(file: string): Found {
  let isDir: boolean;
  try {
    isDir = statSync(file).isDirectory();
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT' || osErrorCode(err) === 'ENOTDIR') return 'missing';
    return 'not executable';
  }
  if (isDir) return 'directory';
  try {
    accessSync(file, constants.X_OK);
    return 'executable';
  } catch {
    // access(2) failing is the answer, not an error.
    return 'not executable';
  }
}

/**
 * Check that `command` can be started from `cwd` the way the child will look it up: a name with
 * a `/` is a path from `cwd`; a bare name is searched on PATH (an empty entry is `cwd`), and a
 * later executable match wins over an earlier file without the x bit, as execvp does.
 */
export function checkExecutable(command: string, cwd: string, path = process.env.PATH ?? ''): void {
  const candidates = command.includes('/') ? [resolve(cwd, command)] : path.split(delimiter).map((dir) => resolve(cwd, dir, command));
  const blocked: string[] = [];
  for (const file of candidates) {
    const found = inspect(file);
    if (found === 'executable') return;
    if (found !== 'missing') blocked.push(`${file} (${found === 'directory' ? 'a directory' : 'no execute permission'})`);
  }
  if (blocked.length > 0)
    throw new PdbError('E_COMMAND_NOT_EXECUTABLE', `cannot execute "${command}": ${blocked.join(', ')}`, {
      hint: 'Make it executable (chmod +x) or run it through its interpreter, e.g. sh FILE.',
    });
  throw new PdbError('E_COMMAND_NOT_FOUND', `command not found: "${command}"`, {
    hint: command.includes('/')
      ? 'A command with a / is a path from the session root.'
      : 'Check the command name and PATH (it is looked up as a shell would).',
  });
}

/**
 * The session service reports a program that failed to start as E_USAGE ("could not start ...:
 * ENOENT"), which a race past checkExecutable can still produce; it is never a usage error here.
 */
export function asStartFailure(err: unknown): unknown {
  if (!isPdbError(err, 'E_USAGE')) return err;
  const code = /ENOENT/.test(err.message) ? 'E_COMMAND_NOT_FOUND' : 'E_COMMAND_NOT_EXECUTABLE';
  return new PdbError(code, err.message, { hint: err.hint, cause: err });
}
