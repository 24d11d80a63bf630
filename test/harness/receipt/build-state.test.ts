// The build in provenance: a digest of the built package that ran, and a bench refused while the
// build is older than its sources (E_STALE_BUILD names the newest stale source and its build time)
// unless --allow-stale-build, which marks the receipt as not evidence.
import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runBench } from '../../../harness/bench.js';
import { readBuildState } from '../../../harness/receipt/provenance.js';
import { isPdbError } from '../../../model/errors.js';
import { readReceipt } from '../../../reports/receipts/receipts.js';
import { REPO_ROOT, tempDir } from '../../helpers/index.js';
import { base, workloads } from '../../helpers/bench-workloads.js';

const t = tempDir('pdb-build-');
test.after(() => t.cleanup());

/** A package with two sources and their builds, all written at `at` (seconds since the epoch). */
function pkg(dir: string, at: number): string {
  mkdirSync(join(dir, 'lib'), { recursive: true });
  mkdirSync(join(dir, 'dist', 'lib'), { recursive: true });
  mkdirSync(join(dir, 'test'), { recursive: true });
  const files = ['package.json', 'index.ts', 'lib/a.ts', 'dist/index.js', 'dist/lib/a.js', 'test/x.test.ts'];
  for (const f of files) {
    writeFileSync(join(dir, f), f === 'package.json' ? '{"name":"p"}' : `// ${f}\n`);
    utimesSync(join(dir, f), at, at);
  }
  return dir;
}

test('a fresh build: a digest of dist (tests and types left out) and package.json, nothing stale', () => {
  const dir = pkg(join(t.dir, 'fresh'), 1_800_000_000);
  const a = readBuildState(dir);
  assert.match(a.digest ?? '', /^sha256:[0-9a-f]{64}$/);
  assert.is(a.stale, null);
  writeFileSync(join(dir, 'dist', 'index.d.ts'), 'export {};\n');
  mkdirSync(join(dir, 'dist', 'test'));
  writeFileSync(join(dir, 'dist', 'test', 'x.test.js'), '//\n');
  assert.is(readBuildState(dir).digest, a.digest, 'types and tests are not what runs');
  writeFileSync(join(dir, 'dist', 'lib', 'a.js'), '// changed\n');
  utimesSync(join(dir, 'dist', 'lib', 'a.js'), 1_800_000_000, 1_800_000_000);
  assert.is.not(readBuildState(dir).digest, a.digest, 'a changed output changes the digest');
});

test('the digest covers everything that runs: the .cjs bundles, their V8 code caches and the native addon that loads', () => {
  const dir = pkg(join(t.dir, 'runs'), 1_800_000_000);
  mkdirSync(join(dir, 'dist', 'cli'), { recursive: true });
  writeFileSync(join(dir, 'dist', 'cli', 'cli-bundle.cjs'), '// bundle\n');
  writeFileSync(join(dir, 'dist', 'cli', 'cli-bundle.cache'), 'cache');
  const addon = join(dir, 'native', 'build', 'Release', 'pdb_scan.node');
  mkdirSync(join(dir, 'native', 'build', 'Release'), { recursive: true });
  writeFileSync(addon, 'not an ELF file: loading it would say why');
  const seen = new Set([readBuildState(dir).digest]);
  const change = (file: string, what: string) => {
    writeFileSync(file, `${what} changed`);
    const d = readBuildState(dir).digest;
    assert.not.ok(seen.has(d), `changing ${what} changes the digest`);
    seen.add(d);
  };
  change(join(dir, 'dist', 'cli', 'cli-bundle.cjs'), 'a .cjs bundle');
  change(join(dir, 'dist', 'cli', 'cli-bundle.cache'), 'a code cache');
  change(addon, 'the native addon');
  writeFileSync(join(dir, 'dist', 'cli', 'cli-bundle.d.cts'), 'export {};\n');
  assert.ok(seen.has(readBuildState(dir).digest), 'a declaration file does not run');
});

test('a source newer than its output, or without one, is stale: the newest such source is named', () => {
  const dir = pkg(join(t.dir, 'stale'), 1_800_000_000);
  utimesSync(join(dir, 'lib', 'a.ts'), 1_800_000_100, 1_800_000_100);
  const s = readBuildState(dir).stale;
  assert.is(s?.source, 'lib/a.ts');
  assert.is(s?.builtAt, new Date(1_800_000_000_000).toISOString());
  writeFileSync(join(dir, 'lib', 'b.ts'), '// new\n');
  utimesSync(join(dir, 'lib', 'b.ts'), 1_800_000_200, 1_800_000_200);
  assert.equal(readBuildState(dir).stale?.source, 'lib/b.ts');
  assert.is(readBuildState(dir).stale?.builtAt, null, 'no build of it at all');
  // A test source newer than the build does not make what runs stale.
  const fresh = pkg(join(t.dir, 'tests-only'), 1_800_000_000);
  utimesSync(join(fresh, 'test', 'x.test.ts'), 1_800_000_500, 1_800_000_500);
  assert.is(readBuildState(fresh).stale, null);
});

test('bench refuses a stale build before any filesystem work; --allow-stale-build runs and marks the receipt as not evidence', async () => {
  const dir = pkg(join(t.dir, 'bench'), 1_800_000_000);
  utimesSync(join(dir, 'index.ts'), 1_800_000_900, 1_800_000_900);
  const plan = base({ name: 'stale', workloads: [{ name: 'test-count' }] });
  const out = join(t.dir, 'out');
  try {
    await runBench({ plan, outDir: out, storeParent: t.dir, workloads, buildRoot: dir });
    assert.unreachable('a stale build must be refused');
  } catch (err) {
    assert.ok(isPdbError(err, 'E_STALE_BUILD'), String(err));
    assert.match((err as Error).message, 'index.ts changed at');
    assert.match((err as Error).message, `its build is from ${new Date(1_800_000_000_000).toISOString()}`);
  }
  assert.not.ok(existsSync(out), 'nothing was written');
  const { receipt } = await runBench({ plan, outDir: out, storeParent: t.dir, workloads, buildRoot: dir, allowStaleBuild: true });
  assert.is(receipt.provenance.staleBuild, true);
  assert.is(receipt.provenance.buildDigest, readBuildState(dir).digest);
  assert.is(readReceipt(receipt).gateEvidence.ok, false);
});

test("this package's own run records its build, and it is fresh (npm test builds first)", async () => {
  const plan = base({ name: 'own', workloads: [{ name: 'test-count' }] });
  const { receipt } = await runBench({ plan, outDir: join(t.dir, 'own'), storeParent: t.dir, workloads });
  assert.is(receipt.provenance.buildDigest, readBuildState(REPO_ROOT).digest);
  assert.is(receipt.provenance.staleBuild, false);
});

test.run();
