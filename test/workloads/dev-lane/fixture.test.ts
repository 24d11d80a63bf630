// The lanes' fixture is composed from one shared dev app, a per-package-manager overlay and one
// entry of each contract kind (kinds/). Receipts name the fixture ("npm-app@2+73eddfd2") and its
// base Snapshot, so the composed tree is pinned: a change to it must bump the fixture's version.
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readSourceConfig, scanTree } from '../../../model/scan/scan.js';
import { createSnapshot, snapshotDigest, type Entry } from '../../../model/snapshot.js';
import { composeLaneFixture, prepareLaneFixture, readLaneFixtureFile, type LaneKind } from '../../../workloads/dev-lane/fixture.js';
import { createProcessRunner } from '../../../workloads/process-runner.js';
import { tempDir } from '../../helpers/index.js';

/** The composed fixtures of version 2 (version 1 had no kinds/). */
const PINNED: Record<LaneKind, { name: string; base: string; entries: number; overlay: string[] }> = {
  npm: {
    name: 'npm-app@2+73eddfd2',
    base: 'sha256:6155fd5676391d5bd3ae08962c5f0240faaab630cc35d0d96c3b3c2fe6efada6',
    entries: 36,
    overlay: ['package-lock.json', 'package.json'],
  },
  pnpm: {
    name: 'pnpm-app@2+46ef2db9',
    base: 'sha256:db7f668f55d661c18c852b9949362f4e4046bbe19a43923eb347cdb8017c9b1d',
    entries: 36,
    overlay: ['package.json', 'pnpm-lock.yaml'],
  },
};

const t = tempDir('pdb-lane-fixture-');
test.after(() => t.cleanup());

async function baseSnapshot(dir: string): Promise<{ digest: string; entries: Entry[] }> {
  const { excludes } = await readSourceConfig(dir);
  const { entries } = await scanTree(dir, { excludes });
  return { digest: snapshotDigest(createSnapshot(entries, excludes)), entries };
}

const listing = (entries: Entry[]) => entries.map((e) => `${e.path} ${e.kind === 'file' ? e.digest.slice(7, 19) : e.kind}`).join('\n');

for (const kind of ['npm', 'pnpm'] as const) {
  test(`${kind}: the composed fixture has the pinned name and base Snapshot`, async () => {
    const fixture = await prepareLaneFixture(kind, join(t.dir, 'prepared'), createProcessRunner());
    assert.is(fixture.name, PINNED[kind].name);
    const { digest, entries } = await baseSnapshot(fixture.sourceDir);
    assert.is(entries.length, PINNED[kind].entries, listing(entries));
    assert.is(digest, PINNED[kind].base, `the composed ${kind} fixture changed:\n${listing(entries)}`);
  });
}

test('the two lanes differ only in their overlays (package.json and the lockfile)', async () => {
  const trees = {} as Record<LaneKind, Entry[]>;
  for (const kind of ['npm', 'pnpm'] as const) {
    composeLaneFixture(kind, join(t.dir, 'composed', kind));
    const overlay = new Set(PINNED[kind].overlay);
    const { entries } = await baseSnapshot(join(t.dir, 'composed', kind));
    assert.equal(
      entries.filter((e) => overlay.has(e.path)).map((e) => e.path),
      PINNED[kind].overlay,
    );
    trees[kind] = entries.filter((e) => !overlay.has(e.path));
  }
  assert.equal(trees.npm, trees.pnpm);
  assert.ok(trees.npm.some((e) => e.path === 'tests/jest/math.test.ts'));
});

test('a fixture file is read from the layer that provides it', () => {
  assert.match(readLaneFixtureFile('pnpm', 'package.json').toString(), '"packageManager": "pnpm@');
  assert.not.match(readLaneFixtureFile('npm', 'package.json').toString(), 'packageManager');
  assert.equal(readLaneFixtureFile('npm', 'src/lib/math.ts'), readLaneFixtureFile('pnpm', 'src/lib/math.ts'));
  assert.throws(() => readLaneFixtureFile('npm', 'pnpm-lock.yaml'), /no file pnpm-lock\.yaml/);
});

test.run();
