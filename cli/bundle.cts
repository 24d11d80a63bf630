// The bundles the command line runs from, and how one is loaded. `npm run build` (and `npm test`,
// `npm pack`) make two with esbuild after tsc (scripts/build-bundles.mjs):
// - `checkpoint`: the cheap path (cli/cheap-path.ts) and every module a plain checkpoint (or restore) loads,
//   without commander (an agent loop calls it between steps);
// - `cli`: the whole command line (cli/main.ts) with the session layer, the backends and the
//   model; the harness, the workloads, the reports and the agents stay modules, loaded when a
//   command that needs them runs.
// Node 20 resolves, reads and links every ES module on its own; in one file they cost less.
//
// Which build a bundle belongs to is decided by the build, not at each start: the build writes the
// id of the bundles it made into this file (BUILD_ID below, in dist/cli/bundle.cjs), and each bundle
// carries the same id in its first line. tsc writes this file back with no id, so after a bare tsc
// the modules run, never a bundle of older sources; and an installed package, whose files all get
// new mtimes, still runs its bundles. PDB_ENV_NO_BUNDLE=1 runs the modules too.
//
// A bundle is compiled with a V8 code cache when there is one made for it (written by the build
// after a warm-up run of its commands: scripts/warm-bundle-cache.mjs), so a command does not parse
// and compile its functions again in every process. V8 itself checks only the source's length,
// its own version and its flags (and rejects the cache then: a plain compile follows), not the
// cache's bytes: so the cache names the build it was made for and carries the sha256 of its
// data, and one that does not match is not used.
import { closeSync, openSync, readFileSync, readSync, renameSync, writeFileSync } from 'node:fs';
import Module from 'node:module';
import { dirname, join, resolve } from 'node:path';
import vm from 'node:vm';
import { nativeAddonPath } from '../model/os/native-addon-file.cjs';

/** The id of the bundles built with this dist; null: none were (scripts/build-bundles.mjs writes it, keep it one line). */
const BUILD_ID: string | null = null;

/** The bundles a build makes (scripts/build-bundles.mjs). */
export const BUNDLE_NAMES = ['checkpoint', 'cli'] as const;
export type BundleName = (typeof BUNDLE_NAMES)[number];

/** A bundle's files in dist/cli: the bundle and its code cache. */
export function bundleFiles(name: BundleName): { file: string; cache: string } {
  return { file: `${name}-bundle.cjs`, cache: `${name}-bundle.cache` };
}

/** The variable whose value, in the bundle's first line, names its build. */
export const BUNDLE_ID = '__pdbBundleId';
/** What the bundle calls for a dynamic import (loadBundle passes it; a plain require() of the bundle gets its own import()). */
export const BUNDLE_IMPORT = '__pdbImport';

/**
 * The sha256 of a code cache: by the native addon where it loads (what model/os/hash.ts uses:
 * node:crypto, with the streams it loads, costs ~11 ms of a command that needs it for nothing
 * else), else by node:crypto. The package lies two levels above dist/cli.
 */
function sha256(data: Uint8Array, cliDir: string): Buffer {
  try {
    const addon = require(nativeAddonPath(join(cliDir, '..', '..')) ?? '') as { sha256?: (parts: Uint8Array[]) => Buffer | null };
    const digest = typeof addon.sha256 === 'function' ? addon.sha256([data]) : null;
    if (digest) return digest;
  } catch {
    // none here (or not loadable): node:crypto below
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
 * fits; null when `build` is given and the bundle is not of that build. A vm script has no
 * import() of its own (only an experimental loader that warns), so the bundle's dynamic imports
 * come to this module's.
 */
export function loadBundle(cliDir: string, name: BundleName, build?: string): LoadedBundle | null {
  const files = bundleFiles(name);
  const file = resolve(cliDir, files.file);
  const source = readFileSync(file, 'utf8');
  const id = buildIdOf(source);
  if (build !== undefined && id !== build) return null;
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
  const req = Module.createRequire(file);
  const mod = new Module(file);
  mod.filename = file;
  // Where a bare name is looked up from the bundle's file, as for a module Node loads itself.
  mod.paths = req.resolve.paths('a-package') ?? [];
  require.cache[file] = mod;
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void;
  wrapper.call(mod.exports, mod.exports, req, mod, file, dirname(file), importFromCli);
  mod.loaded = true;
  return {
    name,
    exports: mod.exports,
    compile: cachedData === undefined ? 'no code cache' : script.cachedDataRejected ? 'code cache rejected' : 'code cache',
    cacheData: () => script.createCachedData(),
    id,
  };
}

/** Whether the modules run instead of the bundles here, and why; null: the bundles run. */
function modulesReason(): string | null {
  if (process.env.PDB_ENV_NO_BUNDLE === '1') return 'PDB_ENV_NO_BUNDLE=1';
  return BUILD_ID === null ? 'dist was compiled without its bundles' : null;
}

/**
 * The bundle `name` of this build, loaded, or null: the modules run (no bundle built with this
 * dist, the file missing or of another build, or PDB_ENV_NO_BUNDLE=1). The executable's only
 * check: the id in the bundle's first line, read anyway to compile it.
 */
export function bundleToRun(name: BundleName): LoadedBundle | null {
  if (modulesReason() !== null) return null;
  try {
    return loadBundle(__dirname, name, BUILD_ID!);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Whether the bundle `name` runs here, and why (`pdb-env doctor` says it). */
export function bundleState(name: BundleName): { bundled: boolean; reason: string } {
  const off = modulesReason();
  if (off !== null) return { bundled: false, reason: off };
  const file = bundleFiles(name).file;
  const head = Buffer.alloc(80);
  let fd = -1;
  try {
    fd = openSync(join(__dirname, file), 'r');
    readSync(fd, head, 0, head.length, 0);
  } catch {
    return { bundled: false, reason: `dist/cli/${file} is missing` };
  } finally {
    if (fd >= 0) closeSync(fd);
  }
  if (buildIdOf(head.toString('latin1')) !== BUILD_ID) return { bundled: false, reason: `dist/cli/${file} is of another build` };
  return { bundled: true, reason: `dist/cli/${file}, build ${BUILD_ID!.slice(0, 8)}` };
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
