#!/usr/bin/env node
// Makes the V8 code cache of one bundle (dist/cli/NAME-bundle.cache; cli/bundle.cts says how
// it is used): the bundle runs the commands it is for on a throw-away store of a small tree, so
// the functions they run are compiled, then their code is written beside the bundle.
// scripts/build-bundles.mjs runs this after each bundle (`node scripts/warm-bundle-cache.mjs NAME`);
// a failure here only means the bundle is compiled in each process, as before. Output of the
// warm-up commands is discarded by the caller.
import { spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const cliDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli');
// CommonJS, as the executable loads them (cli/pdb-env.cts).
const require = createRequire(import.meta.url);
const { loadBundle, writeBundleCache } = require(join(cliDir, 'bundle.cjs'));
const { cheapCall } = require(join(cliDir, 'command-table.cjs'));
const name = process.argv[2];

/** A small tree with a nested file, an executable and a symlink. */
function makeSource(src) {
  mkdirSync(join(src, 'lib', 'deep'), { recursive: true });
  writeFileSync(join(src, 'package.json'), '{"name":"warm"}\n');
  writeFileSync(join(src, 'lib', 'index.js'), 'export const x = 1;\n');
  writeFileSync(join(src, 'lib', 'deep', 'run.sh'), '#!/bin/sh\n');
  chmodSync(join(src, 'lib', 'deep', 'run.sh'), 0o755);
  symlinkSync('lib/index.js', join(src, 'main.js'));
}

/** Checkpoints through the cheap path: changed files (a Snapshot, a Changeset, a whole index then a delta), then nothing changed. */
async function warmCheckpoint(bundle, src, store) {
  const made = spawnSync(
    process.execPath,
    [join(cliDir, 'pdb-env.cjs'), 'create', 'warm', '--from', src, '--backend', 'full-copy', '--store', store],
    { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', env: { ...process.env, PDB_ENV_NO_BUNDLE: '1' } },
  );
  if (made.status !== 0) throw new Error(`the warm-up session was not created: ${made.stderr.trim().split('\n').pop()}`);
  const root = join(store, 'sessions', 'warm', 'root');
  const checkpoint = async () => {
    const code = await bundle.exports.runCheap(cheapCall(['checkpoint', 'warm', '--store', store]));
    if (code !== 0) throw new Error(`a warm-up checkpoint exited ${code}`);
  };
  for (const round of [1, 2, 3]) {
    appendFileSync(join(root, 'lib', 'index.js'), `// ${round}\n`);
    if (round === 2) writeFileSync(join(root, `new-${round}.txt`), 'new\n');
    await checkpoint();
  }
  await checkpoint();
}

/** The session commands a user and an agent launcher run most, through the whole command line. */
async function warmCli(bundle, src, store) {
  const { main } = bundle.exports;
  const run = async (...args) => {
    const code = await main([...args, '--store', store]);
    if (code !== 0) throw new Error(`warm-up: pdb-env ${args.join(' ')} exited ${code}`);
  };
  await run('create', 'warm', '--from', src, '--backend', 'full-copy', '--json');
  await run('create', 'warm2', '--from', src, '--backend', 'full-copy');
  const root = join(store, 'sessions', 'warm', 'root');
  appendFileSync(join(root, 'lib', 'index.js'), '// changed\n');
  await run('list');
  await run('list', '--json');
  await run('path', 'warm');
  await run('diff', 'warm');
  await run('envs');
  await run('checkpoint', 'warm', '--json', '--verify');
  await run('discard', 'warm2');
  await run('discard', 'warm');
}

async function main() {
  if (name !== 'checkpoint' && name !== 'cli') throw new Error(`usage: node scripts/warm-bundle-cache.mjs checkpoint|cli (got ${name})`);
  const tmp = mkdtempSync(join(tmpdir(), 'pdb-env-warm-'));
  try {
    const src = join(tmp, 'src');
    makeSource(src);
    const bundle = loadBundle(cliDir, name);
    await (name === 'checkpoint' ? warmCheckpoint : warmCli)(bundle, src, join(tmp, 'store'));
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
