// The tree a cassette describes, made without any agent: pdb-env applies each step to a copy of the
// base itself (node:fs for the file steps, /bin/sh for shell steps), so what an agent's tools made
// can be compared with something the agent did not write. The semantics here are the cassette's
// definition; the model server maps each step onto an agent's tools so that they come out the same.
import { spawn } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { chmod, lstat, mkdir, open, readFile, rename, rm, stat, symlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { PdbError } from '../../model/errors.js';
import { describeStep, type Cassette, type CassetteStep } from './cassette.js';

export interface ReplayResult {
  /** Steps that took effect (steps expected to be denied are skipped: they change nothing). */
  applied: number;
  /** The first step that failed, and why; the steps after it are not played (an agent stops there too). */
  failure: { index: number; message: string } | null;
}

async function exists(p: string): Promise<boolean> {
  return (await lstat(p).catch(() => null)) !== null;
}

function stepError(message: string): PdbError {
  return new PdbError('E_AGENT_STEP_FAILED', message);
}

/** Occurrences of `needle` in `text` (non-overlapping). */
export function countOccurrences(text: string, needle: string): number {
  let n = 0;
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + needle.length)) n++;
  return n;
}

function runShell(root: string, command: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', command], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString('utf8')).slice(-2000)));
    child.on('error', reject);
    child.on('close', (code, signal) =>
      code === 0 ? resolve() : reject(stepError(`exited ${code ?? signal}${stderr ? `: ${stderr.trim()}` : ''}`)),
    );
  });
}

/**
 * Check that `path` in `root` reaches no link: each existing parent is lstat'ed and must be a real
 * directory; with `final`, the entry itself must not be a link either (write, edit and chmod would
 * follow it). A link there (the tree's own, or one a shell step made) is E_CASSETTE_INVALID: the
 * step is refused before it writes. The steps run one at a time, so nothing swaps a parent between
 * this check and the step but the cassette's own shell steps, which have finished by then.
 */
async function noLinkOnPath(root: string, path: string, final: boolean): Promise<void> {
  const parts = path.split('/');
  for (let i = 1; i <= parts.length; i++) {
    if (i === parts.length && !final) break;
    const sub = parts.slice(0, i).join('/');
    const st = await lstat(join(root, sub)).catch(() => null);
    if (!st) return; // made by the step itself, as a directory
    if (st.isSymbolicLink())
      throw new PdbError('E_CASSETTE_INVALID', `${path} goes through the link ${sub}: a step never passes through a link`, {
        hint: 'Name the directory the link points to by its own path in the root.',
      });
    if (i < parts.length && !st.isDirectory()) throw stepError(`${sub} is not a directory`);
  }
}

/** Write `content` to `file`, never through a link at its name (O_NOFOLLOW). */
async function writeNoFollow(file: string, content: string): Promise<void> {
  const fh = await open(file, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_TRUNC | fsConstants.O_NOFOLLOW, 0o666);
  try {
    await fh.writeFile(content);
  } finally {
    await fh.close();
  }
}

/** Apply one step in `root` with the cassette's semantics; throws E_AGENT_STEP_FAILED when it cannot be done. */
export async function applyStep(root: string, step: CassetteStep): Promise<void> {
  const at = (p: string) => join(root, p);
  if (step.action !== 'shell') {
    const follows = step.action === 'write' || step.action === 'edit' || step.action === 'chmod';
    for (const p of step.action === 'rename' ? [step.from, step.to] : [step.path]) await noLinkOnPath(root, p, follows);
  }
  switch (step.action) {
    case 'write':
      await mkdir(dirname(at(step.path)), { recursive: true });
      return writeNoFollow(at(step.path), step.content);
    case 'edit': {
      const text = await readFile(at(step.path), 'utf8');
      const n = countOccurrences(text, step.old);
      if (n !== 1) throw stepError(`the old text occurs ${n} times in ${step.path}, not once`);
      return writeNoFollow(
        at(step.path),
        text.replace(step.old, () => step.new),
      );
    }
    case 'delete':
      if (!(await exists(at(step.path)))) throw stepError(`${step.path} does not exist`);
      return rm(at(step.path), { recursive: true, force: true });
    case 'rename':
      if (!(await exists(at(step.from)))) throw stepError(`${step.from} does not exist`);
      if (await exists(at(step.to))) throw stepError(`${step.to} exists already`);
      await mkdir(dirname(at(step.to)), { recursive: true });
      return rename(at(step.from), at(step.to));
    case 'symlink':
      if (await exists(at(step.path))) throw stepError(`${step.path} exists already`);
      await mkdir(dirname(at(step.path)), { recursive: true });
      return symlink(step.target, at(step.path));
    case 'chmod': {
      const mode = (await stat(at(step.path))).mode & 0o7777;
      return chmod(at(step.path), step.mode === '+x' ? mode | 0o111 : mode & ~0o111);
    }
    case 'mkdir':
      return void (await mkdir(at(step.path), { recursive: true }));
    case 'shell':
      return runShell(root, step.command);
    default: {
      const never: never = step;
      throw new PdbError('E_INTERNAL', `unknown cassette action ${JSON.stringify(never)}`);
    }
  }
}

/** Play the cassette's steps directly in `root` (a copy of the base), stopping at the first that fails. */
export async function replayCassette(root: string, cassette: Cassette): Promise<ReplayResult> {
  let applied = 0;
  for (const [index, step] of cassette.steps.entries()) {
    if (step.expect === 'denied') continue;
    try {
      await applyStep(root, step);
      applied++;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      return { applied, failure: { index, message: `step ${describeStep(step, index)}: ${message}` } };
    }
  }
  return { applied, failure: null };
}
