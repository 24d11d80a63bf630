// The lane's deterministic edits, and the source tree they lead to, computed in advance so every
// backend's result (the oracle's included) can be checked byte for byte.
import { sha256Digest } from '../../model/canonical-json.js';
import { PdbError } from '../../model/errors.js';
import type { Entry } from '../../model/snapshot.js';
import { isGenerated, readLaneFixtureFile, type LaneKind } from './fixture.js';

/** Deterministic edits, so every backend's result can equal the oracle's byte for byte. */
export const LANE_EDITS = {
  viteMessage: { path: 'src/vite/message.ts', content: "export const message = 'Vite says hello after an edit';\n" },
  jestTest: {
    path: 'tests/jest/math.test.ts',
    append: "\ntest('an edit adds this case', () => {\n  expect(sum([4, 5])).toBe(9);\n});\n",
  },
  vitestTest: {
    path: 'tests/vitest/greeting.test.ts',
    append: "\ntest('an edit adds this case', () => {\n  expect(initials('Ada Lovelace')).toBe('AL');\n});\n",
  },
  /** In tsserver's memory only; never written to disk. */
  tsserverTypeError: { path: 'src/lib/math.ts', insert: "export const broken: number = 'not a number';\n" },
} as const;

/** The steps that edit a file: Vite's HMR step, and the Jest and Vitest watch steps. */
const EDITING_STEPS = ['vite-dev-hmr', 'jest-watch', 'vitest-watch'] as const;

/**
 * The oracle's source tree, computed in advance: the base with the lane's three deterministic
 * file edits applied, of the steps that run (the tsserver edit lives only in tsserver's memory).
 */
export function expectedLaneSources(kind: LaneKind, base: Entry[], steps: readonly string[] = EDITING_STEPS): Entry[] {
  const byPath = new Map(base.map((e) => [e.path, e]));
  const replace = (path: string, bytes: Buffer) => {
    const e = byPath.get(path);
    if (!e || e.kind !== 'file')
      throw new PdbError('E_SOURCE_CHANGED', `the base has no file ${path}; it is not the ${kind}-app fixture`, { path });
    byPath.set(path, { ...e, digest: sha256Digest(bytes), size: bytes.length });
  };
  if (steps.includes('vite-dev-hmr')) replace(LANE_EDITS.viteMessage.path, Buffer.from(LANE_EDITS.viteMessage.content));
  const appends = [
    ...(steps.includes('jest-watch') ? [LANE_EDITS.jestTest] : []),
    ...(steps.includes('vitest-watch') ? [LANE_EDITS.vitestTest] : []),
  ];
  for (const edit of appends) {
    const original = readLaneFixtureFile(kind, edit.path);
    const e = byPath.get(edit.path);
    if (!e || e.kind !== 'file' || e.digest !== sha256Digest(original)) {
      throw new PdbError(
        'E_SOURCE_CHANGED',
        `${edit.path} in the base differs from the committed ${kind}-app fixture, so the expected result cannot be computed`,
        { path: edit.path },
      );
    }
    replace(edit.path, Buffer.concat([original, Buffer.from(edit.append)]));
  }
  return [...byPath.values()].filter((e) => !isGenerated(e.path));
}
