#!/usr/bin/env node
// Makes the V8 code cache of the checkpoint bundle (dist/cli/checkpoint-bundle.cache; cli/bundle-state.cts
// says how it is used): a throw-away session of a small tree is checkpointed by the bundle, with
// changes and without, so the functions a checkpoint runs are compiled, then their code is written
// beside the bundle. scripts/bundle-checkpoint.mjs runs this after each bundle; a failure here only
// means checkpoints compile the bundle as before. Output of the warm-up checkpoints is discarded.
import { spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const cliDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli');
// CommonJS, as start.cjs loads it (cli/bundle-state.cts).
const { loadBundle, writeBundleCache } = createRequire(import.meta.url)(join(cliDir, 'bundle-state.cjs'));

async function main() {
  const tmp = mkdtempSync(join(tmpdir(), 'pdb-env-warm-'));
  try {
    const src = join(tmp, 'src');
    const store = join(tmp, 'store');
    mkdirSync(join(src, 'lib', 'deep'), { recursive: true });
    writeFileSync(join(src, 'package.json'), '{"name":"warm"}\n');
    writeFileSync(join(src, 'lib', 'index.js'), 'export const x = 1;\n');
    writeFileSync(join(src, 'lib', 'deep', 'run.sh'), '#!/bin/sh\n');
    chmodSync(join(src, 'lib', 'deep', 'run.sh'), 0o755);
    symlinkSync('lib/index.js', join(src, 'main.js'));
    const made = spawnSync(
      process.execPath,
      [join(cliDir, 'bin.js'), 'create', 'warm', '--from', src, '--backend', 'full-copy', '--store', store],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
        encoding: 'utf8',
      },
    );
    if (made.status !== 0) throw new Error(`the warm-up session was not created: ${made.stderr.trim().split('\n').pop()}`);
    const bundle = loadBundle(cliDir);
    const fast = bundle.exports;
    const root = join(store, 'sessions', 'warm', 'root');
    const checkpoint = async () => {
      const code = await fast.runFast(fast.fastCheckpointArgs(['checkpoint', 'warm', '--store', store]));
      if (code !== 0) throw new Error(`a warm-up checkpoint exited ${code}`);
    };
    // Changed files (hashed, a Snapshot and a Changeset written, a whole index then a delta), then nothing changed.
    for (const round of [1, 2, 3]) {
      appendFileSync(join(root, 'lib', 'index.js'), `// ${round}\n`);
      if (round === 2) writeFileSync(join(root, `new-${round}.txt`), 'new\n');
      await checkpoint();
    }
    await checkpoint();
    if (!writeBundleCache(cliDir, bundle)) throw new Error(`no code cache to write (${bundle.compile})`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  },
);
