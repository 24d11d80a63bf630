// The projection drops a workload's volatile paths before any comparison and counts what each
// pattern dropped: a directory pattern takes the directory and everything under it, "**/" matches
// at any depth, dot files are matched, and the first matching pattern is the one counted.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Entry } from '../../../model/snapshot.js';
import { dropVolatile, projectResult, volatileMatcher } from '../../../harness/case/projection.js';
import { repoWorkload } from '../../../workloads/repo/repo.js';

const dir = (path: string): Entry => ({ path, kind: 'dir' });
const file = (path: string): Entry => ({ path, kind: 'file', digest: `sha256:${'0'.repeat(64)}`, size: 0, exec: false });

test('volatile patterns drop what they match and count it per pattern', () => {
  const entries = [
    dir('node_modules'),
    dir('node_modules/.vite'),
    file('node_modules/.vite/deps.json'),
    file('node_modules/react/index.js'),
    dir('packages'),
    file('packages/a/tsconfig.tsbuildinfo'),
    file('tsconfig.tsbuildinfo'),
    file('.eslintcache'),
    file('src/index.ts'),
  ];
  const r = dropVolatile(entries, ['node_modules/.vite/**', '**/*.tsbuildinfo', '**/.eslintcache', 'never/**']);
  assert.equal(
    r.entries.map((e) => e.path),
    ['node_modules', 'node_modules/react/index.js', 'packages', 'src/index.ts'],
  );
  assert.equal(r.record, {
    volatile: ['node_modules/.vite/**', '**/*.tsbuildinfo', '**/.eslintcache', 'never/**'],
    dropped: [
      { pattern: 'node_modules/.vite/**', entries: 2 },
      { pattern: '**/*.tsbuildinfo', entries: 2 },
      { pattern: '**/.eslintcache', entries: 1 },
    ],
  });
  assert.is(volatileMatcher(['a/**', '**/b'])('a/b'), 0, 'the first matching pattern counts');
  assert.equal(dropVolatile(entries, []).entries, entries);
});

test("the repo workload's projection: its volatile parameter, then identity", () => {
  const params = { ...repoWorkload.defaultParams, volatile: ['dist/**'] };
  const r = projectResult(repoWorkload, params, [dir('dist'), file('dist/a.js'), file('src/a.ts')]);
  assert.equal(
    r.entries.map((e) => e.path),
    ['src/a.ts'],
  );
  assert.equal(r.record.dropped, [{ pattern: 'dist/**', entries: 2 }]);
});

test.run();
