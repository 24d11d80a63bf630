// A step that failed still ran a process: its exit code, CPU and peak RSS belong in the receipt as
// much as a successful step's. The failure carries the process's result to the harness's phase timer.
import type { PdbError } from '../model/errors.js';
import type { ProcessResult } from './types.js';

const processes = new WeakMap<object, ProcessResult>();

/** `err`, remembered as the failure of a step whose main process ended with `result`. */
export function withProcess(err: PdbError, result: ProcessResult): PdbError {
  processes.set(err, result);
  return err;
}

/** The main process of the step that failed with `err`, if it had one. */
export function failedProcess(err: unknown): ProcessResult | undefined {
  return typeof err === 'object' && err !== null ? processes.get(err) : undefined;
}
