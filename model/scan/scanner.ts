// Which stat walk runs: the native scanner (native/walk.c, an N-API addon built at install when a
// compiler is there) or the JavaScript one (tree-walk.ts), the fallback and the oracle. Both give
// the same RawScan (a property test holds them to it). PDB_ENV_SCANNER=js forces JavaScript;
// PDB_ENV_SCANNER=native makes a missing addon an error instead of a fallback.
import { availableParallelism } from 'node:os';
import { PdbError } from '../errors.js';
import { NATIVE_ADDON, loadNativeAddon } from '../os/native.js';
import { walkWithIndex, type RawScan, type WalkInput } from './tree-walk.js';
import { nativeWalk, type NativeAddon } from './native-walk.js';

export { NATIVE_ADDON };

export interface ScannerInfo {
  /** The scanner a scan uses now. */
  scanner: 'native' | 'js';
  /** Why: the addon loaded, was not built, failed to load, or PDB_ENV_SCANNER chose. */
  reason: string;
  /** Threads the native scanner lstats with. */
  threads: number;
}

let loaded: { addon: NativeAddon | null; reason: string; wanted: string } | null = null;

const loadAddon = () => loadNativeAddon() as { addon: NativeAddon | null; reason: string };

/** The scanner PDB_ENV_SCANNER asks for (read each time: tests switch it). */
function load(): { addon: NativeAddon | null; reason: string } {
  const wanted = process.env.PDB_ENV_SCANNER ?? 'auto';
  if (loaded?.wanted === wanted) return loaded;
  loaded = wanted === 'js' ? { addon: null, reason: 'PDB_ENV_SCANNER=js', wanted } : { ...loadAddon(), wanted };
  if (!loaded.addon && wanted === 'native')
    throw new PdbError('E_TOOL_MISSING', `PDB_ENV_SCANNER=native, but ${loaded.reason}`, {
      hint: 'Run npm rebuild (python3, make and a C compiler are needed), or unset PDB_ENV_SCANNER.',
    });
  return loaded;
}

/** lstat threads of the native scanner: one per core, at most 4 (PDB_ENV_SCAN_THREADS overrides). */
export function scanThreads(): number {
  const n = Number(process.env.PDB_ENV_SCAN_THREADS);
  return Number.isInteger(n) && n >= 1 && n <= 64 ? n : Math.max(1, Math.min(4, availableParallelism()));
}

export function scannerInfo(): ScannerInfo {
  const { addon, reason } = load();
  return { scanner: addon ? 'native' : 'js', reason, threads: addon ? scanThreads() : 1 };
}

/** Why the native addon cannot run here, or null when it can (whatever PDB_ENV_SCANNER says). */
export function nativeUnavailable(): string | null {
  const { addon, reason } = loadAddon();
  return addon ? null : reason;
}

/** The addon a call uses: the scanner in use ('auto'), or the one named ('js': none), and why not. */
function addonFor(scanner: 'auto' | 'js' | 'native'): { addon: NativeAddon | null; reason: string } {
  return scanner === 'js' ? { addon: null, reason: '' } : scanner === 'native' ? loadAddon() : load();
}

/** The native Snapshot writer when the native scanner is the one in use (or `scanner` names it), else null. */
export function nativeSnapshotWriter(scanner: 'auto' | 'js' | 'native' = 'auto'): NativeAddon['snapshotBytes'] | null {
  const { addon } = addonFor(scanner);
  return addon && typeof addon.snapshotBytes === 'function' ? addon.snapshotBytes.bind(addon) : null;
}

/** The addon's writer of a Snapshot from the one before it (native/snapshot.c snapshotSplice), where it has one. */
export function nativeSnapshotSplice(scanner: 'auto' | 'js' | 'native' = 'auto'): NonNullable<NativeAddon['snapshotSplice']> | null {
  const { addon } = addonFor(scanner);
  return addon && typeof addon.snapshotSplice === 'function' ? addon.snapshotSplice.bind(addon) : null;
}

/** The stat walk of `input.root` against its index, by the scanner in use ('auto'), or the one named. */
export function scanWalk(input: WalkInput, scanner: 'auto' | 'js' | 'native' = 'auto'): RawScan {
  const { addon, reason } = addonFor(scanner);
  if (!addon) {
    if (scanner === 'native') throw new PdbError('E_TOOL_MISSING', `the native scanner is not available: ${reason}`);
    return walkWithIndex(input);
  }
  return nativeWalk(addon, input, scanThreads());
}
