// model/os/native.ts and native-addon-file.cts: which file of the addon loads, on temporary addon
// folders (PDB_ENV_NATIVE_DIR): the prebuilt for this platform where no build from source is (and
// `pdb-env doctor` names it), a build from source before a prebuilt, and a prebuilt for another
// architecture, or one that does not load, refused with the reason while the JavaScript scanner runs.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { elfArch, nativeAddonFiles, nativeTarget } from '../../../model/os/native-addon-file.cjs';
import { loadNativeAddon, nativeAddonPath } from '../../../model/os/native.js';
import { cli, skipPart, tempDir } from '../../helpers/index.js';

const NATIVE_MODULE = new URL('../../../model/os/native.js', import.meta.url).href;
// Neither a forced scanner nor forced programs from the environment the tests run in.
const CLEAN = { PDB_ENV_SCANNER: '', PDB_ENV_NATIVE_OS: '' };

/** loadNativeAddon() in a fresh process (it loads once per process) with the addon folder `dir`. */
function loadIn(dir: string): { reason: string; kind: string | null; path: string | null; version: string | null } {
  const script = `import { loadNativeAddon } from ${JSON.stringify(NATIVE_MODULE)};
const l = loadNativeAddon();
console.log(JSON.stringify({ reason: l.reason, kind: l.kind, path: l.path, version: l.addon?.version ?? null }));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, ...CLEAN, PDB_ENV_NATIVE_DIR: dir },
    encoding: 'utf8',
  });
  assert.is(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

/** The doctor's last line (which scanner, and why) with the addon folder `dir`. */
function doctorScanner(dir: string, store: string): string {
  const r = cli(['doctor', '--store', store], { env: { ...CLEAN, PDB_ENV_NATIVE_DIR: dir } });
  assert.is(r.code, 0, r.stderr);
  return /^scanner: .*$/m.exec(r.stdout)?.[0] ?? r.stdout;
}

/** A 64-bit little-endian ELF header made for `machine` (62 x86-64, 183 AArch64), and nothing else. */
function elfHeader(machine: number): Buffer {
  const b = Buffer.alloc(64);
  b.writeUInt32BE(0x7f454c46, 0);
  b[4] = 2; // 64-bit
  b[5] = 1; // little-endian
  b[6] = 1;
  b.writeUInt16LE(3, 16); // a shared object
  b.writeUInt16LE(machine, 18);
  return b;
}

const target = nativeTarget();
const OTHER =
  process.arch === 'arm64'
    ? { arch: 'x64', machine: 62, target: `${process.platform}-x64` }
    : { arch: 'arm64', machine: 183, target: `${process.platform}-arm64` };

test('with no build from source, the prebuilt for this platform loads, and doctor names it', () => {
  const built = nativeAddonPath();
  if (!built) return skipPart('loading a prebuilt', 'native-scan', 'no native addon here to copy');
  const t = tempDir('pdb-native-');
  try {
    mkdirSync(join(t.dir, 'prebuilds', target), { recursive: true });
    copyFileSync(built, join(t.dir, 'prebuilds', target, 'pdb_scan.node'));
    const l = loadIn(t.dir);
    assert.is(l.kind, 'prebuilt');
    assert.is(l.path, join(t.dir, 'prebuilds', target, 'pdb_scan.node'));
    assert.ok(l.version, 'the addon answered');
    assert.is(l.reason, `prebuilt for ${target}, native addon version ${l.version}`);
    assert.match(
      doctorScanner(t.dir, join(t.dir, 'no-store')),
      new RegExp(`^scanner: native \\(prebuilt for ${target}, native addon version ${l.version}, \\d+ lstat threads\\)$`),
    );

    // A build from source, where there is one, comes first (made on purpose: the clone's install, or PDB_ENV_BUILD_NATIVE=1).
    mkdirSync(join(t.dir, 'build', 'Release'), { recursive: true });
    copyFileSync(built, join(t.dir, 'build', 'Release', 'pdb_scan.node'));
    assert.is(loadIn(t.dir).kind, 'source');
    assert.match(
      doctorScanner(t.dir, join(t.dir, 'no-store')),
      /^scanner: native \(built from source, native addon version \S+, \d+ lstat threads\)$/,
    );
  } finally {
    t.cleanup();
  }
});

test('a prebuilt for another architecture is refused with the reason, and the JavaScript scanner runs', () => {
  const t = tempDir('pdb-native-');
  try {
    const file = join(t.dir, 'prebuilds', target, 'pdb_scan.node');
    mkdirSync(join(t.dir, 'prebuilds', target), { recursive: true });
    writeFileSync(file, elfHeader(OTHER.machine));
    assert.is(elfArch(file), OTHER.arch);
    const files = nativeAddonFiles(t.dir);
    assert.equal(
      files.files.map((f) => [f.kind, f.refused]),
      [['prebuilt', `the prebuilt for ${target} is made for ${OTHER.arch}, not this ${process.arch}`]],
    );
    const l = loadIn(t.dir);
    assert.equal([l.kind, l.path, l.version], [null, null, null]);
    assert.is(l.reason, `the prebuilt for ${target} is made for ${OTHER.arch}, not this ${process.arch}; ${files.missing}`);
    assert.match(files.missing!, /^no build from source \(npm install builds one/);
    assert.is(doctorScanner(t.dir, join(t.dir, 'no-store')), `scanner: js (JavaScript fallback: ${l.reason})`);

    // Made for this machine but not a loadable addon: dlopen's refusal is the reason, not a crash.
    writeFileSync(file, elfHeader(process.arch === 'arm64' ? 183 : 62));
    const broken = loadIn(t.dir);
    assert.is(broken.kind, null);
    assert.match(broken.reason, new RegExp(`^the addon prebuilt for ${target} did not load: .+; no build from source`));
  } finally {
    t.cleanup();
  }
});

test('only prebuilts for other platforms: the reason names the ones there are', () => {
  const t = tempDir('pdb-native-');
  try {
    mkdirSync(join(t.dir, 'prebuilds', OTHER.target), { recursive: true });
    writeFileSync(join(t.dir, 'prebuilds', OTHER.target, 'pdb_scan.node'), elfHeader(OTHER.machine));
    const { files, missing } = nativeAddonFiles(t.dir);
    assert.equal(files, []);
    assert.is(
      missing,
      `no prebuilt for ${target} (prebuilt for ${OTHER.target} only) and no build from source (npm install builds one where python3, make and a C compiler are)`,
    );
    assert.is(loadIn(t.dir).reason, missing);
    // A file that is no ELF (a Mach-O, say) is not judged by its header: loading it says what is wrong.
    writeFileSync(join(t.dir, 'not-elf'), 'cafebabe');
    assert.is(elfArch(join(t.dir, 'not-elf')), null);
    assert.is(elfArch(join(t.dir, 'absent')), null);
  } finally {
    t.cleanup();
  }
});

test("sizesOf: each name below a directory, its lstat size or -errno, in order (assertStored checks a Snapshot's chunks with it)", () => {
  const addon = loadNativeAddon().addon as { sizesOf?: (dir: string, names: Buffer) => Float64Array } | null;
  if (!addon?.sizesOf) return skipPart('sizesOf', 'native-scan', 'the native addon is not built here');
  const t = tempDir('pdb-native-');
  const dir = join(t.dir, 'sizes');
  mkdirSync(join(dir, 'ab'), { recursive: true });
  writeFileSync(join(dir, 'ab', 'cd'), 'abc');
  writeFileSync(join(dir, 'ab', 'empty'), '');
  symlinkSync('a-target-of-15b', join(dir, 'ab', 'link'));
  const names = Buffer.from(['ab/cd', 'ab/missing', 'ab/empty', 'ab/link', 'ab/cd/under-a-file'].map((n) => `${n}\0`).join(''));
  assert.equal(Array.from(addon.sizesOf(dir, names)), [3, -2, 0, 15, -20]); // ENOENT 2, ENOTDIR 20; a link not followed
  assert.equal(
    Array.from(addon.sizesOf(join(dir, 'nowhere'), Buffer.from('ab/cd\0'))),
    [-2],
    'the directory missing: its errno for every name',
  );
  assert.equal(Array.from(addon.sizesOf(dir, Buffer.alloc(0))), []);
  assert.throws(() => addon.sizesOf!(dir, 'ab/cd' as unknown as Buffer), /sizesOf takes/);
  t.cleanup();
});

test.run();
