// pdb-env's native addon (native/, an N-API addon in C, shipped prebuilt for linux-x64 and
// linux-arm64 and built by npm install where none fits and a C compiler is), loaded in one place:
// the scanner's walk and Snapshot writer (model/scan/scanner.ts) and the system calls of
// native/os.c (mount, umount, the port probe), each with the program or the Node API it replaces
// as the fallback where no addon loads; and the *at(2) calls on directory handles that
// model/os/dir-handle.ts makes (native addon version 5 on), with /proc/self/fd paths or checked
// paths as its fallback. Which file is tried first: native-addon-file.cts.
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import { packageFile, packageRoot } from '../paths.js';
import { nativeAddonFiles, nativeAddonPath as addonPathUnder, nativeDir, nativeTarget, type AddonKind } from './native-addon-file.cjs';

/** Where node-gyp puts the addon it builds from source (scripts/build-native.mjs, the install script). */
export const NATIVE_ADDON = packageFile('native', 'build', 'Release', 'pdb_scan.node');

/** The addon file that would be loaded here (a build from source, else this platform's prebuilt), or null: for anyone who require()s it by path. */
export function nativeAddonPath(): string | null {
  return addonPathUnder(packageRoot());
}

export interface NativeAddonLoad {
  addon: unknown;
  /** Which file loaded (prebuilt for linux-x64, or built from source) and its version; or why none did. */
  reason: string;
  /** How the loaded file came to be; null when none loaded. */
  kind: AddonKind | null;
  path: string | null;
}

let addonLoad: NativeAddonLoad | null = null;

/** The addon (loaded once), or null and why not. */
export function loadNativeAddon(): NativeAddonLoad {
  if (addonLoad) return addonLoad;
  const { files, missing } = nativeAddonFiles(nativeDir(packageRoot()));
  const why: string[] = [];
  for (const f of files) {
    const what = f.kind === 'prebuilt' ? `prebuilt for ${nativeTarget()}` : 'built from source';
    if (f.refused) {
      why.push(f.refused);
      continue;
    }
    try {
      const addon = createRequire(import.meta.url)(f.path) as { version: string };
      return (addonLoad = { addon, reason: `${what}, native addon version ${addon.version}`, kind: f.kind, path: f.path });
    } catch (err) {
      // An older glibc than the prebuilt's, say ("version `GLIBC_2.34' not found"): the next file, or the fallback.
      why.push(`the addon ${what} did not load: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  if (missing) why.push(missing);
  return (addonLoad = { addon: null, reason: why.join('; '), kind: null, path: null });
}

/** The system calls of native/os.c. Each returns 0 or an errno (portsFree: 1, 0 or a negative errno per port). */
export interface NativeOs {
  mount(source: string, target: string, fsType: string, data: string): number;
  umount(target: string): number;
  /** Per port: 1 when bindable on 127.0.0.1 and on ::1 (an address the host lacks counts as free), 0 when not, or -errno. */
  portsFree(ports: number[]): number[];
}

/**
 * The addon's system calls; null where it is not built, was built before them, or
 * PDB_ENV_NATIVE_OS=off asks for the programs (mount, umount) and Node's servers instead (read each
 * time: tests switch it).
 */
export function nativeOs(): NativeOs | null {
  if (process.env.PDB_ENV_NATIVE_OS === 'off') return null;
  const addon = loadNativeAddon().addon as Partial<NativeOs> | null;
  return addon && typeof addon.mount === 'function' && typeof addon.umount === 'function' && typeof addon.portsFree === 'function'
    ? (addon as NativeOs)
    : null;
}

const ERRNO_NAMES = new Map(Object.entries(constants.errno).map(([name, n]) => [n, name]));

/** An OS error as Node's fs would throw it (code, errno, path), for the callers' one classifier. */
export function osError(errno: number, path: string, syscall?: string): NodeJS.ErrnoException {
  const code = ERRNO_NAMES.get(errno) ?? 'EIO';
  return Object.assign(new Error(`${code}: ${syscall ? `${syscall} ` : ''}${path}`), { code, errno: -errno, path, syscall });
}
