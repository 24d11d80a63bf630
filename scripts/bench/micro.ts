// Micro-benchmarks of the inner loops (scan, hash, copy, canonical JSON) with tinybench, so a
// regression in them is visible. In-process only; whole-command timings live in full-copy.ts.
//   npm run bench:micro
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bench } from 'tinybench';
import { canonicalJson } from '../../model/canonical-json.js';
import { FsPool } from '../../model/scan/fs-pool.js';
import { runFsTask } from '../../model/scan/fs-worker.js';
import { materializeTree } from '../../model/store/materialize.js';
import { ObjectStore } from '../../model/store/object-store.js';
import { scanTree, walkEntries } from '../../model/scan/scan.js';
import { createSnapshot, sortEntries } from '../../model/snapshot.js';

const dir = mkdtempSync(join(tmpdir(), 'pdb-micro-'));
try {
  const src = join(dir, 'src');
  for (let d = 0; d < 40; d++) {
    mkdirSync(join(src, `d${d}`), { recursive: true });
    for (let f = 0; f < 50; f++) writeFileSync(join(src, `d${d}`, `f${f}.js`), `module.exports = ${d * 50 + f};\n`.repeat(20));
  }
  const big = join(dir, 'big.bin');
  writeFileSync(big, Buffer.alloc(16 << 20, 7));
  const store = await ObjectStore.init(join(dir, 'store'));
  const pool = new FsPool();
  const scanned = await scanTree(src, { excludes: [], store, pool });
  const snapshot = createSnapshot(scanned.entries, []);
  const many = Array.from({ length: 20000 }, (_, i) => ({
    path: `node_modules/p${i % 977}/lib/f${i}.js`,
    kind: 'file' as const,
    digest: `sha256:${'a'.repeat(64)}` as const,
    size: i,
    exec: false,
  }));
  let n = 0;

  const bench = new Bench({ time: 1500, warmupTime: 200 });
  bench
    .add('walk 2,000 files (lstat only)', async () => {
      for (const _ of walkEntries(src, { excludes: [] }));
    })
    .add('scan 2,000 files (walk + sha256, pool)', async () => {
      await scanTree(src, { excludes: [], pool });
    })
    .add('sha256 16 MiB file (one thread)', () => {
      runFsTask({ op: 'hash', paths: [big] }, 0o022);
    })
    .add('materialize + remove 2,000 files (explicit copy)', async () => {
      const dst = join(dir, `out-${n++}`);
      await materializeTree(store, snapshot, dst, pool);
      rmSync(dst, { recursive: true, force: true });
    })
    .add('canonical JSON of 20,000 entries', () => {
      canonicalJson(createSnapshot(many, []));
    })
    .add('sort 20,000 paths by UTF-8 bytes', () => {
      sortEntries([...many].reverse());
    });
  await bench.run();
  console.table(bench.table());
  await pool.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
