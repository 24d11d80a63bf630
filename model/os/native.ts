// pdb-env's native addon (native/, an N-API addon in C that npm install builds where a compiler
// is), loaded in one place: the scanner's walk and Snapshot writer (model/scan/scanner.ts) and the
// system calls of native/os.c (mount, umount, the port probe), each with the program or the Node
// API it replaces as the fallback where the addon is not built.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import { packageFile } from '../paths.js';

/** Where node-gyp puts the addon (scripts/build-native.mjs builds it at npm install). */
export const NATIVE_ADDON = packageFile('native', 'build', 'Release', 'pdb_scan.node');

let addonLoad: { addon: unknown; reason: string } | null = null;

/** The addon (loaded once), or null and why not. */
export function loadNativeAddon(): { addon: unknown; reason: string } {
  if (addonLoad) return addonLoad;
  if (!existsSync(NATIVE_ADDON))
    return (addonLoad = { addon: null, reason: 'the native addon is not built (npm install builds it where a C compiler is)' });
  try {
    const addon = createRequire(import.meta.url)(NATIVE_ADDON) as { version: string };
    return (addonLoad = { addon, reason: `native addon version ${addon.version}` });
  } catch (err) {
    return (addonLoad = { addon: null, reason: `the native addon did not load: ${(err as Error).message.split('\n')[0]}` });
  }
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
