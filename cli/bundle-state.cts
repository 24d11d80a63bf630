// Which copy of the command line runs: one of the two bundles, or the modules. CommonJS, so that
// cli/start.cts (the executable's first module) can ask before Node's ES module loader is started,
// and cli/fast-entry.ts asks the same from the ES modules.
//
// `npm run build` (and `npm test`) make two bundles with esbuild (scripts/build-bundles.mjs):
// - `checkpoint`: the fast path of a plain checkpoint (cli/fast-path.ts) and every module it
//   loads, without commander (an agent loop calls it between steps);
// - `cli`: the whole command line (cli/cli-entry.ts) with the session layer, the backends and the
//   model; the harness, the workloads, the reports and the agents stay modules, loaded when a
//   command that needs them runs.
// Node 20 resolves, reads and links every ES module on its own; in one file they cost less. A
// bundle runs only while the dist files it was made from are the ones on disk (the same size and
// mtime, listed in its manifest); otherwise (a bare `tsc`, a bundle missing or cut short,
// PDB_ENV_NO_BUNDLE=1) the modules themselves run, which do the same.
//
// A bundle is compiled with a V8 code cache when there is one made for it (written by the build
// after a warm-up run of its commands: scripts/warm-bundle-cache.mjs), so a command does not parse
// and compile its functions again in every process. V8 itself checks only the source's length,
// its own version and its flags (and rejects the cache then: a plain compile follows), not the
// cache's bytes: so the cache names the build it was made for (BUNDLE_ID in the bundle's first
// line) and carries the sha256 of its data, and one that does not match is not used.
import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import Module from 'node:module';
import { dirname, join, resolve } from 'node:path';
import vm from 'node:vm';

/** The bundle's record of what it was built from: [path under dist/, size, mtimeMs] per file. */
export interface BundleManifest {
  inputs: Array<[string, number, number]>;
}

/** The bundles a build makes (scripts/build-bundles.mjs). */
export const BUNDLE_NAMES = ['checkpoint', 'cli'] as const;
export type BundleName = (typeof BUNDLE_NAMES)[number];

/** A bundle's files in dist/cli: the bundle, its manifest (what it was made from) and its code cache. */
export function bundleFiles(name: BundleName): { file: string; manifest: string; cache: string } {
  return { file: `${name}-bundle.cjs`, manifest: `${name}-bundle.json`, cache: `${name}-bundle.cache` };
}

/** The checkpoint bundle's files (the names tests and docs use). */
export const BUNDLE_FILE = bundleFiles('checkpoint').file;
export const BUNDLE_MANIFEST = bundleFiles('checkpoint').manifest;
export const BUNDLE_CACHE = bundleFiles('checkpoint').cache;
/** The variable whose value, in the bundle's first line, names its build. */
export const BUNDLE_ID = '__pdbBundleId';
/** What the bundle calls for a dynamic import (loadBundle passes it; a plain require() of the bundle gets its own import()). */
export const BUNDLE_IMPORT = '__pdbImport';

/**
 * The sha256 of a code cache: by the native addon where it is built (what model/os/hash.ts uses:
 * node:crypto, with the streams it loads, costs ~11 ms of a command that needs it for nothing
 * else), else by node:crypto. The addon lies two levels above dist/cli.
 */
function sha256(data: Uint8Array, cliDir: string): Buffer {
  try {
    const addon = require(join(cliDir, '..', '..', 'native', 'build', 'Release', 'pdb_scan.node')) as {
      sha256?: (parts: Uint8Array[]) => Buffer | null;
    };
    const digest = typeof addon.sha256 === 'function' ? addon.sha256([data]) : null;
    if (digest) return digest;
  } catch {
    // not built here (or not loadable): node:crypto below
  }
  return (require('node:crypto') as typeof import('node:crypto')).createHash('sha256').update(data).digest();
}

/**
 * A bundle's first two lines (scripts/build-bundles.mjs writes them): the id of its build,
 * then its import(), the loader's (a parameter, loadBundle) or under a plain require() its own.
 */
export function bundleHead(id: string): string[] {
  return [
    `"use strict";const ${BUNDLE_ID} = "${id}";`,
    `var ${BUNDLE_IMPORT} = typeof ${BUNDLE_IMPORT} === 'function' ? ${BUNDLE_IMPORT} : (specifier) => import(specifier);`,
  ];
}

/** The build a bundle's source names (bundleHead's first line), or null. */
function buildIdOf(source: string): string | null {
  const m = new RegExp(`^"use strict";const ${BUNDLE_ID} = "([0-9a-f]{32})";`).exec(source);
  return m ? m[1]! : null;
}

/** How the bundle was compiled: with its code cache, or without one (none made, or V8 rejected it). */
export type BundleCompile = 'code cache' | 'no code cache' | 'code cache rejected';

export interface LoadedBundle {
  name: BundleName;
  exports: unknown;
  compile: BundleCompile;
  /** A code cache of the bundle as it has run so far (the build writes it after a warm-up). */
  cacheData(): Buffer;
  /** The bundle's build id (what a code cache is written for). */
  id: string | null;
}

/** A bundle's dynamic imports (scripts/build-bundles.mjs writes them as calls of this), resolved from dist/cli as the bundle's own would be. */
const importFromCli = (specifier: string): Promise<unknown> => import(specifier);

/**
 * Load the bundle `name` in `cliDir` as require() would, compiled with its code cache where one
 * fits. A vm script has no import() of its own (only an experimental loader that warns), so the
 * bundle's dynamic imports come to this module's.
 */
export function loadBundle(cliDir: string, name: BundleName = 'checkpoint'): LoadedBundle {
  const files = bundleFiles(name);
  const file = resolve(cliDir, files.file);
  const source = readFileSync(file, 'utf8');
  const id = buildIdOf(source);
  let cachedData: Buffer | undefined;
  try {
    const cache = readFileSync(join(cliDir, files.cache));
    const data = cache.subarray(64);
    if (id && cache.subarray(0, 32).toString('latin1') === id && sha256(data, cliDir).equals(cache.subarray(32, 64))) cachedData = data;
  } catch {
    // no cache made: a plain compile
  }
  const wrapped = `(function (exports, require, module, __filename, __dirname, ${BUNDLE_IMPORT}) {${source}\n})`;
  const script = new vm.Script(wrapped, { filename: file, cachedData });
  const mod = new Module(file);
  mod.filename = file;
  mod.paths = (Module as unknown as { _nodeModulePaths(dir: string): string[] })._nodeModulePaths(dirname(file));
  require.cache[file] = mod;
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void;
  wrapper.call(mod.exports, mod.exports, Module.createRequire(file), mod, file, dirname(file), importFromCli);
  mod.loaded = true;
  return {
    name,
    exports: mod.exports,
    compile: cachedData === undefined ? 'no code cache' : script.cachedDataRejected ? 'code cache rejected' : 'code cache',
    cacheData: () => script.createCachedData(),
    id,
  };
}

/** Write the code cache of a loaded bundle beside it (atomically); false when there is none to write. */
export function writeBundleCache(cliDir: string, bundle: LoadedBundle): boolean {
  if (!bundle.id) return false;
  const data = bundle.cacheData();
  const file = join(cliDir, bundleFiles(bundle.name).cache);
  writeFileSync(`${file}.tmp`, Buffer.concat([Buffer.from(bundle.id, 'latin1'), sha256(data, cliDir), data]));
  renameSync(`${file}.tmp`, file);
  return true;
}

/** Is the bundle `name` in the directory `cliDir` built from the files under `distDir` as they are now? */
export function bundleIsFresh(cliDir: string, distDir: string, name: BundleName = 'checkpoint'): boolean {
  let manifest: BundleManifest;
  try {
    manifest = JSON.parse(readFileSync(join(cliDir, bundleFiles(name).manifest), 'utf8')) as BundleManifest;
  } catch {
    return false; // no bundle built, or a manifest cut short
  }
  if (!Array.isArray(manifest?.inputs) || manifest.inputs.length === 0) return false;
  for (const input of manifest.inputs) {
    if (!Array.isArray(input) || typeof input[0] !== 'string') return false;
    const st = statSync(join(distDir, input[0]), { throwIfNoEntry: false });
    if (!st || st.size !== input[1] || st.mtimeMs !== input[2]) return false;
  }
  return true;
}

/** Whether the bundle `name` in the dist/cli directory `cliDir` runs, and why (`pdb-env doctor` says it). */
export function bundleState(cliDir: string, name: BundleName): { bundled: boolean; reason: string } {
  if (process.env.PDB_ENV_NO_BUNDLE === '1') return { bundled: false, reason: 'PDB_ENV_NO_BUNDLE=1' };
  if (!bundleIsFresh(cliDir, join(cliDir, '..'), name))
    return { bundled: false, reason: 'no bundle built from dist as it is (npm run build makes one)' };
  return { bundled: true, reason: `dist/cli/${bundleFiles(name).file}, built from dist as it is` };
}

/** Which copy of the fast path a plain checkpoint runs from `cliDir`, and why. */
export const checkpointBundleState = (cliDir: string) => bundleState(cliDir, 'checkpoint');
