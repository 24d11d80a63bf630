// What every lane step needs around a tool: find it in the session's node_modules, require a clean
// exit, and quote the end of its output path-free in an error.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PdbError } from '../../model/errors.js';
import { scrubText } from '../../model/scrub.js';
import type { ProcessResult, StepContext } from '../types.js';

/** The last lines of a process's output, scrubbed of the case's directories and any other path. */
export function outputTail(result: ProcessResult, ctx: StepContext, lines = 3): string {
  const text = `${result.stdout}\n${result.stderr}`
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(-lines)
    .join(' | ');
  return scrubText(text, { roots: [ctx.session.root, ctx.scratchDir, ctx.sharedDir] }).slice(0, 400);
}

/** Throw a path-free typed error unless the process exited 0. */
export function requireSuccess(result: ProcessResult, ctx: StepContext, what: string, timeoutMs: number): void {
  if (result.timedOut) throw new PdbError('E_TIMEOUT', `${what} did not finish within its ${timeoutMs} ms timeout`);
  if (result.exitCode !== 0) {
    throw new PdbError('E_STEP_FAILED', `${what} exited ${result.exitCode ?? result.signal}: ${outputTail(result, ctx)}`, {
      hint: 'Run the same command in a session (pdb-env run SESSION -- ...) to see its full output.',
    });
  }
}

/** A tool's entry file inside the session's node_modules; the install step must have put it there. */
export function toolPath(root: string, rel: string, tool: string): string {
  const p = join(root, 'node_modules', rel);
  if (!existsSync(p))
    throw new PdbError('E_TOOL_MISSING', `${tool} is not installed in the session's node_modules; the install step must run first`);
  return p;
}

export function readJson(file: string): any {
  return JSON.parse(readFileSync(file, 'utf8'));
}

/** A time budget shared by the milestones of one step: what is left of it, at least 1 ms. */
export function deadlineIn(timeoutMs: number): () => number {
  const deadline = performance.now() + timeoutMs;
  return () => Math.max(1, Math.round(deadline - performance.now()));
}
