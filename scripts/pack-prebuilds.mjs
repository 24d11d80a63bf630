#!/usr/bin/env node
// Makes the prebuilt native addon the package carries (npm pack's `prepack`), so that an install
// needs no install script to scan natively: npm 11 warns about a dependency's install script it
// was not told to allow, and says a coming release will skip them. Writes
// native/prebuilds/PLATFORM-ARCH/pdb_scan.node for linux-x64 and linux-arm64, each compiled by gcc
// straight from native/binding.gyp's sources, defines and flags plus those node-gyp's Release
// build adds, against N-API 8 (binding.gyp's NAPI_VERSION: any Node from 20 on loads it
// unchanged). The host's own target must build, pass its checks and load, or the pack fails;
// another target is made where its cross-compiler is (Debian: gcc-aarch64-linux-gnu) and skipped
// in one line where not. Each file is checked with readelf: made for its machine, needing only
// libc.so.6, no glibc symbol newer than GLIBC_CEILING, and nothing else unresolved but N-API (from
// node) and the weak OpenSSL SHA-256 functions (snapshot.c says why weak).
// `--clean` (the `postpack` script) removes native/prebuilds again, so the clone keeps loading its
// own build from source. Git ignores native/prebuilds: no binaries are committed.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const native = join(root, 'native');
const prebuilds = join(native, 'prebuilds');
const say = (line) => console.log(`pdb-env: ${line}`);

/** The targets shipped prebuilt: GNU triple (the cross-compiler's prefix) and the machine readelf names. */
const TARGETS = {
  'linux-x64': { triple: 'x86_64-linux-gnu', machine: 'Advanced Micro Devices X86-64' },
  'linux-arm64': { triple: 'aarch64-linux-gnu', machine: 'AArch64' },
};
// pthread_create and pthread_join moved into libc at 2.34, and lstat64/fstatat64 became symbols at
// 2.33; built on Debian 12 (glibc 2.36) the addon needs GLIBC_2.34: Debian 12, Ubuntu 22.04, RHEL 9
// and later. An older glibc refuses it at load (the loader then falls back and says why).
const GLIBC_CEILING = [2, 34];
const LIBS_ALLOWED = new Set(['libc.so.6', 'libpthread.so.0']);
const WEAK_ALLOWED = /^SHA256_(Init|Update|Final)$/;
// What node-gyp's Release build adds around binding.gyp's own (native/build/pdb_scan.target.mk):
// the C ones only, in its order, so the later -O3 wins over binding.gyp's -O2 as it does there.
const GYP_DEFINES = [
  'NODE_GYP_MODULE_NAME=pdb_scan',
  'BUILDING_NODE_EXTENSION',
  '_FILE_OFFSET_BITS=64',
  '_LARGEFILE_SOURCE',
  '__STDC_FORMAT_MACROS',
];
const GYP_CFLAGS_BEFORE = ['-fPIC', '-pthread', '-Wall', '-Wextra', '-Wno-unused-parameter'];
const GYP_CFLAGS_AFTER = ['-O3', '-fno-omit-frame-pointer'];

const run = (cmd, args) => spawnSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
const have = (cmd) => run('sh', ['-c', `command -v "${cmd}"`]).status === 0;

/** Node's C headers (node_api.h): beside this node, or where node-gyp downloaded them. */
function nodeHeaders() {
  const candidates = [
    join(dirname(process.execPath), '..', 'include', 'node'),
    join(homedir(), '.cache', 'node-gyp', process.versions.node, 'include', 'node'),
    join(homedir(), '.node-gyp', process.versions.node, 'include', 'node'),
  ];
  return candidates.find((d) => existsSync(join(d, 'node_api.h'))) ?? null;
}

/** Why the file at `file` is not fit to ship for `target`, or null. */
function check(file, target) {
  const header = run('readelf', ['-h', file]);
  if (header.status !== 0) return `readelf -h failed: ${header.stderr.trim()}`;
  const machine = /Machine:\s+(.+)/.exec(header.stdout)?.[1]?.trim();
  if (machine !== TARGETS[target].machine) return `made for ${machine}, not ${TARGETS[target].machine}`;
  const needed = [...run('readelf', ['-d', file]).stdout.matchAll(/\(NEEDED\).*\[(.+)\]/g)].map((m) => m[1]);
  const extra = needed.filter((l) => !LIBS_ALLOWED.has(l));
  if (extra.length) return `links ${extra.join(', ')}, which a target may lack`;
  const problems = [];
  for (const line of run('readelf', ['--dyn-syms', '-W', file]).stdout.split('\n')) {
    const cols = line.trim().split(/\s+/);
    if (cols[6] !== 'UND' || !cols[7]) continue;
    const [name, version] = cols[7].split('@');
    const glibc = /^GLIBC_(\d+)\.(\d+)/.exec(version ?? '');
    if (glibc) {
      const [major, minor] = [Number(glibc[1]), Number(glibc[2])];
      if (major > GLIBC_CEILING[0] || (major === GLIBC_CEILING[0] && minor > GLIBC_CEILING[1]))
        problems.push(`${cols[7]} (newer than GLIBC_${GLIBC_CEILING.join('.')})`);
    } else if (name.startsWith('napi_')) continue;
    else if (cols[4] === 'WEAK' && (WEAK_ALLOWED.test(name) || name.startsWith('_ITM_') || name === '__gmon_start__')) continue;
    else problems.push(`${cols[7]} (${cols[4]}, from no library a target has)`);
  }
  return problems.length ? `needs ${problems.join(', ')}` : null;
}

/** Compile `target` into native/prebuilds/TARGET/pdb_scan.node with `cc`; null, or why it failed. */
function build(target, cc, headers, gyp) {
  const dir = join(prebuilds, target);
  const out = join(dir, 'pdb_scan.node');
  mkdirSync(dir, { recursive: true });
  const args = [
    ...[...GYP_DEFINES, ...(gyp.defines ?? [])].map((d) => `-D${d}`),
    `-I${headers}`,
    ...GYP_CFLAGS_BEFORE,
    ...(gyp.cflags ?? []),
    ...GYP_CFLAGS_AFTER,
    '-shared',
    ...gyp.sources.map((s) => join(native, s)),
    '-o',
    `${out}.tmp`,
    ...(gyp.libraries ?? []),
  ];
  const r = run(cc, args);
  if (r.status !== 0) return `${cc} failed: ${(r.stderr || String(r.error ?? '')).trim().split('\n').slice(-3).join(' | ')}`;
  const unfit = check(`${out}.tmp`, target);
  if (unfit) {
    rmSync(`${out}.tmp`, { force: true });
    return unfit;
  }
  renameSync(`${out}.tmp`, out);
  return null;
}

/** For the host's target: the prebuilt loads in this node and has the scanner, or why not. */
function loads(file) {
  const probe = `const a = require(${JSON.stringify(file)}); if (typeof a.scan !== 'function') throw new Error('no scan()'); console.log(a.version)`;
  const r = run(process.execPath, ['-e', probe]);
  return r.status === 0
    ? { version: r.stdout.trim() }
    : {
        error:
          r.stderr
            .trim()
            .split('\n')
            .find((l) => /Error/.test(l)) ?? r.stderr.trim(),
      };
}

rmSync(prebuilds, { recursive: true, force: true }); // nothing stale is packed
if (process.argv.includes('--clean')) process.exit(0);

const host = `${process.platform}-${process.arch}`;
if (process.platform !== 'linux') {
  say(`no prebuilt native addon made on ${host} (they are made on Linux); installs build it from source`);
  process.exit(0);
}
const headers = nodeHeaders();
if (!headers) {
  console.error(
    `pdb-env: no Node headers (node_api.h) beside ${process.execPath} or in node-gyp's cache: run npx node-gyp install, then pack again`,
  );
  process.exit(1);
}
if (!have('readelf')) {
  console.error('pdb-env: readelf (binutils) not found: the prebuilts cannot be checked');
  process.exit(1);
}
const gyp = JSON.parse(readFileSync(join(native, 'binding.gyp'), 'utf8')).targets[0];
let failed = false;
for (const [target, { triple }] of Object.entries(TARGETS)) {
  const cc = target === host ? (process.env.CC ?? 'cc') : `${triple}-gcc`;
  if (target !== host && !have(cc)) {
    say(
      `no prebuilt for ${target}: ${cc} not found (Debian: apt-get install gcc-${triple.replace(/_/g, '-')}); installs there build from source`,
    );
    continue;
  }
  const why = build(target, cc, headers, gyp);
  if (why) {
    console.error(`pdb-env: prebuilt for ${target} not made: ${why}`);
    failed = true;
    continue;
  }
  if (target === host) {
    const loaded = loads(join(prebuilds, target, 'pdb_scan.node'));
    if (loaded.error) {
      console.error(`pdb-env: prebuilt for ${target} does not load in node ${process.version}: ${loaded.error}`);
      failed = true;
      continue;
    }
    say(`prebuilt for ${target} made with ${cc} (native addon version ${loaded.version}; loads in node ${process.version})`);
  } else say(`prebuilt for ${target} made with ${cc}`);
}
if (failed) process.exit(1);
