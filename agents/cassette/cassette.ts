// A cassette: what pdb-env's scripted model plays to a real agent. Agent-neutral steps (write,
// edit, delete, rename, symlink, chmod, mkdir, shell) and a final message, checked against
// schemas/cassette.schema.json and then for what a schema cannot say (paths under the root).
// Its digest (sha256 of its canonical JSON) names it in receipts: the model is scripted, and
// which script it played is part of the evidence.
import { readFile } from 'node:fs/promises';
import { canonicalJson, sha256Digest, type Digest } from '../../model/canonical-json.js';
import { PdbError } from '../../model/errors.js';
import { assertSchema } from '../../model/schemas.js';

export const CASSETTE_KIND = 'pdb-env-cassette' as const;
export const CASSETTE_ACTIONS = ['write', 'edit', 'delete', 'rename', 'symlink', 'chmod', 'mkdir', 'shell'] as const;
export type CassetteAction = (typeof CASSETTE_ACTIONS)[number];

/** ok: the step must succeed; denied: the policy, the agent or its sandbox must refuse it (nothing changes). */
export type StepExpect = 'ok' | 'denied';

interface StepBase {
  expect?: StepExpect;
}

export type CassetteStep = StepBase &
  (
    | { action: 'write'; path: string; content: string }
    | { action: 'edit'; path: string; old: string; new: string }
    | { action: 'delete'; path: string }
    | { action: 'rename'; from: string; to: string }
    | { action: 'symlink'; path: string; target: string }
    | { action: 'chmod'; path: string; mode: '+x' | '-x' }
    | { action: 'mkdir'; path: string }
    | { action: 'shell'; command: string }
  );

export interface Cassette {
  kind: typeof CASSETTE_KIND;
  version: 1;
  description?: string;
  steps: CassetteStep[];
  final: string;
}

export interface LoadedCassette {
  cassette: Cassette;
  /** sha256 of the cassette's canonical JSON. */
  digest: Digest;
}

/** The paths a step names (relative to the session root). */
export function stepPaths(step: CassetteStep): string[] {
  switch (step.action) {
    case 'rename':
      return [step.from, step.to];
    case 'shell':
      return [];
    default:
      return [step.path];
  }
}

/** Why `path` is not a path under the root, or null when it is one. */
export function rootPathProblem(path: string): string | null {
  if (path.startsWith('/')) return 'is absolute';
  if (path.includes('\\')) return 'has a backslash';
  if (path.includes('\0')) return 'has a NUL';
  if (path.split('/').some((c) => c === '' || c === '.' || c === '..')) return 'has an empty, "." or ".." component';
  return null;
}

/** One line for people and logs: "3 edit src/a.ts". */
export function describeStep(step: CassetteStep, index: number): string {
  const what = step.action === 'shell' ? step.command.split('\n')[0]!.slice(0, 60) : stepPaths(step).join(' -> ');
  return `${index + 1} ${step.action} ${what}`;
}

export function cassetteDigest(c: Cassette): Digest {
  return sha256Digest(canonicalJson(c));
}

/** The document as a Cassette, or E_CASSETTE_INVALID naming what is wrong. */
export function parseCassette(doc: unknown, what = 'the cassette'): LoadedCassette {
  const hint = 'schemas/cassette.schema.json describes the format; docs/agents.md has examples.';
  const c = assertSchema<Cassette>('cassette', doc, { code: 'E_CASSETTE_INVALID', what, hint });
  c.steps.forEach((step, i) => {
    // Only a step that must be refused may point out of the root: that is what it tests.
    if (step.expect === 'denied') return;
    for (const p of stepPaths(step)) {
      const problem = rootPathProblem(p);
      if (problem)
        throw new PdbError('E_CASSETTE_INVALID', `${what}: step ${i + 1} (${step.action}) path ${JSON.stringify(p)} ${problem}`, {
          hint: 'Paths are relative to the session root; only a step with "expect": "denied" may name one outside it.',
        });
    }
  });
  assertNoStepThroughLinks(c, what);
  return { cassette: c, digest: cassetteDigest(c) };
}

/**
 * Steps stay in the root: no step's path may pass through a link an earlier step made (issue 41: a
 * symlink step to /tmp/outside, then a write and a delete below it, wrote and deleted outside the
 * session), nor write, edit or chmod the link itself (those follow it). The links are followed
 * through renames and deletes; a link a shell step makes, or one already in the tree, is refused
 * when the step runs (replay.ts).
 */
function assertNoStepThroughLinks(c: Cassette, what: string): void {
  let links: string[] = [];
  const below = (p: string, l: string) => p === l || p.startsWith(`${l}/`);
  c.steps.forEach((step, i) => {
    if (step.expect === 'denied') return;
    const follows = step.action === 'write' || step.action === 'edit' || step.action === 'chmod';
    for (const p of stepPaths(step)) {
      const link = links.find((l) => p.startsWith(`${l}/`) || (follows && p === l));
      if (link)
        throw new PdbError(
          'E_CASSETTE_INVALID',
          `${what}: step ${i + 1} (${step.action}) path ${JSON.stringify(p)} goes through the link ${JSON.stringify(link)} an earlier step made`,
          { hint: 'A step never passes through a link: name the directory the link points to by its own path in the root.' },
        );
    }
    if (step.action === 'symlink') links.push(step.path);
    else if (step.action === 'delete') links = links.filter((l) => !below(l, step.path));
    else if (step.action === 'rename') links = links.map((l) => (below(l, step.from) ? step.to + l.slice(step.from.length) : l));
  });
}

export async function loadCassette(file: string): Promise<LoadedCassette> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new PdbError('E_CASSETTE_INVALID', `cannot read the cassette ${file}: ${(err as Error).message}`, {
      hint: 'Pass --cassette FILE with a pdb-env-cassette JSON document.',
      cause: err,
    });
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new PdbError('E_CASSETTE_INVALID', `the cassette ${file} is not JSON: ${(err as Error).message}`, { cause: err });
  }
  return parseCassette(doc, `the cassette ${file}`);
}
