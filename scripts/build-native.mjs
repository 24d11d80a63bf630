#!/usr/bin/env node
// Builds the native scanner (native/walk.c, an N-API addon) with node-gyp; npm runs it at install,
// where npm's script policy lets it (npm 11 warns about a dependency's install script it was not
// told to allow and says a coming release will skip them; the root project's own always runs). Where the package carries a prebuilt for this platform
// (native/prebuilds/PLATFORM-ARCH, made at npm pack by scripts/pack-prebuilds.mjs) and it loads,
// there is nothing to build: it says so in one line (PDB_ENV_BUILD_NATIVE=1 builds anyway).
// A build that cannot run here (no compiler, no headers, no network for them) is not an install
// failure: pdb-env then scans with its JavaScript scanner, and `pdb-env doctor` says which one runs.
// PDB_ENV_SKIP_NATIVE=1 skips the build.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const say = (line) => console.log(`pdb-env: ${line}`);

function nodeGyp() {
  // npm hands its own node-gyp to install scripts; otherwise the one bundled with npm beside node.
  const candidates = [
    process.env.npm_config_node_gyp,
    join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
  ];
  return candidates.find((p) => p && existsSync(p)) ?? null;
}

if (process.env.PDB_ENV_SKIP_NATIVE === '1') {
  say('native scanner not built (PDB_ENV_SKIP_NATIVE=1); the JavaScript scanner will run');
  process.exit(0);
}
const target = `${process.platform}-${process.arch}`;
const prebuilt = join(root, 'native', 'prebuilds', target, 'pdb_scan.node');
if (existsSync(prebuilt) && process.env.PDB_ENV_BUILD_NATIVE !== '1') {
  try {
    createRequire(import.meta.url)(prebuilt);
    say(`native scanner prebuilt for ${target}: not built from source (PDB_ENV_BUILD_NATIVE=1 builds it)`);
    process.exit(0);
  } catch (err) {
    // An older glibc than the prebuilt needs, say: build here, where it can.
    say(`the prebuilt for ${target} does not load here (${err.message.split('\n')[0]}); building from source`);
  }
}
const gyp = nodeGyp();
if (!gyp) {
  say('native scanner not built (node-gyp not found); the JavaScript scanner will run');
  process.exit(0);
}
// Node's headers installed beside this node need no download (node-gyp fetches them otherwise).
const prefix = join(dirname(process.execPath), '..');
const nodedir = existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? [`--nodedir=${prefix}`] : [];
const r = spawnSync(process.execPath, [gyp, 'rebuild', `--directory=${join(root, 'native')}`, ...nodedir], {
  stdio: ['ignore', 'pipe', 'pipe'],
  encoding: 'utf8',
  timeout: 300_000,
});
if (r.status === 0 && existsSync(join(root, 'native', 'build', 'Release', 'pdb_scan.node'))) say('native scanner built');
else {
  const lines = (r.stderr || r.stdout || String(r.error ?? '')).trim().split('\n');
  // The line that says what failed (a compiler error, make's exit, a download), else the last one.
  const why = (lines.find((l) => /error:|Error:|not found|ENOENT|EACCES/.test(l)) ?? lines[lines.length - 1] ?? '').trim();
  say(`native scanner not built (${why || `node-gyp exited ${r.status}`}); the JavaScript scanner will run`);
}
