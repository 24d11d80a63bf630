// The lanes' pinned fixture: one shared dev app (TypeScript library, Vite app, Next.js app router,
// Jest and Vitest tests) plus a per-package-manager overlay (package.json and its lockfile),
// composed into a fresh directory, with one entry of each kind of the source contract under kinds/
// (workloads/entry-kinds.ts; version 2 added them).
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { sha256Digest } from '../../model/canonical-json.js';
import { PdbError } from '../../model/errors.js';
import { packageFile } from '../../model/paths.js';
import { writeEntryKinds } from '../entry-kinds.js';
import type { Fixture, ProcessRunner } from '../types.js';

export type LaneKind = 'npm' | 'pnpm';

/** The fixture's layers: `shared` for both lanes, then the lane's own overlay, which wins. */
export function laneFixtureLayers(kind: LaneKind): string[] {
  const dir = packageFile('workloads', 'fixtures', 'dev-app');
  return [join(dir, 'shared'), join(dir, kind)];
}

/** Tool outputs and installs: never copied from the fixture folders into the composed fixture. */
const GENERATED_ROOTS = ['node_modules', 'dist', '.next', '.vite', 'coverage'];
const GENERATED_NAMES = new Set(['tsconfig.tsbuildinfo']);

/** Tool outputs and installs (the Snapshot excludes them; the oracle reads some: see the lane's oracleScope). */
export function isGenerated(path: string): boolean {
  const top = path.split('/')[0] ?? '';
  const last = path.slice(path.lastIndexOf('/') + 1);
  return GENERATED_ROOTS.includes(top) || path.split('/').includes('node_modules') || GENERATED_NAMES.has(last);
}

/** The fixture's version: 2 since it holds every entry kind (see the header). */
export const LANE_FIXTURE_VERSION = 2;

/** A file of the composed fixture, read from the layer that provides it (the overlay first). */
export function readLaneFixtureFile(kind: LaneKind, rel: string): Buffer {
  const layer = laneFixtureLayers(kind)
    .reverse()
    .find((l) => existsSync(join(l, rel)));
  if (!layer) throw new PdbError('E_SOURCE_MISSING', `the ${kind}-app fixture has no file ${rel}`, { path: rel });
  return readFileSync(join(layer, rel));
}

/** Copy the layers' own files (no installs or build output) into `dest`, later layers over earlier ones. */
export function composeLaneFixture(kind: LaneKind, dest: string): void {
  const layers = laneFixtureLayers(kind);
  for (const layer of layers) {
    if (!existsSync(layer)) throw new PdbError('E_SOURCE_MISSING', `the ${kind}-app fixture is missing from workloads/fixtures`);
  }
  if (!existsSync(join(layers[layers.length - 1]!, 'package.json')))
    throw new PdbError('E_SOURCE_MISSING', `the ${kind}-app fixture overlay has no package.json`);
  rmSync(dest, { recursive: true, force: true });
  mkdirSync(dest, { recursive: true });
  for (const src of layers) {
    cpSync(src, dest, {
      recursive: true,
      filter: (p) => {
        const top = p.slice(src.length + 1).split('/')[0] ?? '';
        return !GENERATED_ROOTS.includes(top) && !GENERATED_NAMES.has(top);
      },
    });
  }
}

/** Compose the fixture into a fresh directory under `workDir`, committed as a git repository so git-worktree can use it. */
export async function prepareLaneFixture(kind: LaneKind, workDir: string, proc: ProcessRunner): Promise<Fixture> {
  const name = `${kind}-app`;
  const dest = join(workDir, name);
  composeLaneFixture(kind, dest);
  await writeEntryKinds(dest);
  const git = (args: string[]) =>
    proc.run('git', args, {
      cwd: dest,
      timeoutMs: 30_000,
      env: {
        GIT_AUTHOR_NAME: 'pdb-env',
        GIT_AUTHOR_EMAIL: 'fixture@pdb-env.invalid',
        GIT_COMMITTER_NAME: 'pdb-env',
        GIT_COMMITTER_EMAIL: 'fixture@pdb-env.invalid',
        GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z',
        GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z',
      },
    });
  try {
    const init = await git(['init', '-q', '-b', 'main']);
    if (init.exitCode === 0) {
      await git(['add', '-A']);
      await git(['-c', 'commit.gpgsign=false', 'commit', '-q', '-m', `${name} fixture`]);
    }
  } catch {
    /* git is optional: without it only the git-worktree backend is unavailable */
  }
  const lockName = kind === 'npm' ? 'package-lock.json' : 'pnpm-lock.yaml';
  const lockDigest = sha256Digest(readFileSync(join(dest, lockName), 'utf8')).slice('sha256:'.length, 'sha256:'.length + 8);
  return { name: `${name}@${LANE_FIXTURE_VERSION}+${lockDigest}`, sourceDir: dest };
}
