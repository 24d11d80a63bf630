// Scale: a generated 50,000-entry repository (small files; a real pnpm monorepo is ~700 MB, which
// changes the bytes copied, not the number of entries the harness holds and compares) on full-copy
// and a CoW backend (overlay; CI runs as root), one block, an edit step. Every case must end ok,
// the overlay case checked against full-copy's, with the harness's own peak RSS recorded for each
// phase and bounded: the manifest is held once (siblings and unchanged base scans share the base's
// entries; results are read back one at a time for the oracle), not once per location and case.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runBench } from '../../harness/bench.js';
import { isRoot, skipPart, tempDir } from '../helpers/index.js';
import { repoPlan } from '../helpers/repo-fixture.js';

const DIRS = 2_500;
const FILES_PER_DIR = 19; // + the directory itself: 20 entries each, 50,000 in all

function generate(root: string): number {
  let entries = 0;
  for (let d = 0; d < DIRS; d++) {
    const dir = join(root, `pkg-${Math.floor(d / 50)}`, `mod-${d}`);
    mkdirSync(dir, { recursive: true });
    entries++;
    for (let f = 0; f < FILES_PER_DIR; f++) {
      writeFileSync(join(dir, `f${f}.js`), `export const v${d}_${f} = ${d * FILES_PER_DIR + f};\n`);
      entries++;
    }
  }
  return entries + DIRS / 50; // the pkg-* directories
}

test('a 50,000-entry source runs on full-copy and overlay with the manifest held once and every phase measured', async () => {
  const t = tempDir();
  try {
    const source = join(t.dir, 'big');
    const entries = generate(source);
    assert.ok(entries >= 50_000, `${entries} entries`);
    const cow = isRoot();
    if (!cow) skipPart('scale on overlay', 'overlay', 'overlay mounts need root; full-copy only');
    const plan = repoPlan('scale', [{ name: 'edit', run: 'echo changed > pkg-0/mod-0/f0.js && mkdir -p out && echo built > out/x.js' }], {
      backends: cow ? ['full-copy', 'overlay'] : ['full-copy'],
      caseTimeoutMs: 600_000,
    });
    const t0 = performance.now();
    const { receipt } = await runBench({ plan, outDir: join(t.dir, 'out'), storeParent: t.dir, vars: { SOURCE: source } });
    const seconds = (performance.now() - t0) / 1000;
    console.log(`scale: ${entries} entries, ${receipt.cases.length} case(s) in ${seconds.toFixed(0)} s`);
    for (const c of receipt.cases)
      console.log(`  ${c.backend}: ${c.phases.map((p) => `${p.name} ${(p.durationMs / 1000).toFixed(1)} s`).join(', ')}`);
    for (const c of receipt.cases) assert.is(c.outcome, 'ok', `${c.backend}: ${JSON.stringify(c.failures)}`);
    if (cow) {
      const overlay = receipt.cases.find((c) => c.backend === 'overlay')!;
      const oracle = overlay.checks.find((k) => k.name === 'oracle')!;
      assert.equal([oracle.evaluated, oracle.passed], [true, true]);
    }
    const h = receipt.harness!;
    assert.ok(h.processMaxRssBytes > 0);
    if (h.method === 'vmhwm-reset') {
      const peaks = [...h.phases.map((p) => p.peakRssBytes!), ...receipt.cases.flatMap((c) => c.phases.map((p) => p.harnessPeakRssBytes!))];
      assert.ok(
        peaks.every((p) => p > 0),
        'every phase has its peak',
      );
      // Generous: the entries take tens of megabytes; a copy per location, sibling and case would be several times more.
      assert.ok(h.processMaxRssBytes < 1.5 * 1024 ** 3, `harness peak ${(h.processMaxRssBytes / 2 ** 20).toFixed(0)} MiB`);
    }
  } finally {
    t.cleanup();
  }
});

test.run();
