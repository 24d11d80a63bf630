// Which file of the native addon to load: a build from source (native/build/Release, made by the
// install script where a C compiler is) or the prebuilt one the package ships for this platform
// (native/prebuilds/PLATFORM-ARCH, made by scripts/pack-prebuilds.mjs at npm pack), whose loading
// needs no install step. CommonJS, so that cli/bundle.cts, which runs before Node's ES module
// loader starts, finds the same file as model/os/native.ts.
import { closeSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The file name of the addon, in every place it is looked for. */
export const ADDON_FILE_NAME = 'pdb_scan.node';

/** How a file of the addon came to be: built here from native/*.c, or shipped prebuilt. */
export type AddonKind = 'source' | 'prebuilt';

export interface AddonFile {
  kind: AddonKind;
  path: string;
  /** Why it is not loaded (it is made for another machine), or null when it may be. */
  refused: string | null;
}

/** The platform a prebuilt must be made for: `linux-x64`, as its folder under native/prebuilds is named. */
export function nativeTarget(): string {
  return `${process.platform}-${process.arch}`;
}

/** The addon's folder: the package's native/, or PDB_ENV_NATIVE_DIR (tests point it at a temporary tree). */
export function nativeDir(packageRoot: string): string {
  return process.env.PDB_ENV_NATIVE_DIR || join(packageRoot, 'native');
}

// ELF e_machine of each Node architecture (the System V ABI's numbers).
const ELF_MACHINE: Record<string, number> = { x64: 62, arm64: 183, ia32: 3, arm: 40, ppc64: 21, s390x: 22, riscv64: 243, loong64: 258 };

/** The architecture an ELF file is made for ('arm64', or 'ELF machine N'), or null when the file is no ELF (a Mach-O, say) or unreadable. */
export function elfArch(path: string): string | null {
  const head = Buffer.alloc(20);
  let fd = -1;
  try {
    fd = openSync(path, 'r');
    if (readSync(fd, head, 0, 20, 0) < 20 || head.readUInt32BE(0) !== 0x7f454c46) return null;
  } catch {
    return null; // unreadable: loading it says why
  } finally {
    if (fd >= 0) closeSync(fd);
  }
  const machine = head[5] === 2 ? head.readUInt16BE(18) : head.readUInt16LE(18);
  return Object.keys(ELF_MACHINE).find((a) => ELF_MACHINE[a] === machine) ?? `ELF machine ${machine}`;
}

const isFile = (p: string) => statSync(p, { throwIfNoEntry: false })?.isFile() === true;

/**
 * The files of the addon in the folder `dir` (nativeDir) to try, in order: the build from source (made on purpose, by the clone's
 * npm install or PDB_ENV_BUILD_NATIVE=1), then the prebuilt one for this platform; each refused,
 * with why, when it is made for another architecture (dlopen's own message for one is "cannot
 * open shared object file: No such file or directory"). `missing` says which of the two is not there (null: both are).
 */
export function nativeAddonFiles(dir: string): { files: AddonFile[]; missing: string | null } {
  const target = nativeTarget();
  const files: AddonFile[] = [];
  const add = (kind: AddonKind, path: string) => {
    if (!isFile(path)) return;
    const arch = ELF_MACHINE[process.arch] === undefined ? null : elfArch(path);
    const what = kind === 'prebuilt' ? `the prebuilt for ${target}` : 'the build from source';
    files.push({ kind, path, refused: arch && arch !== process.arch ? `${what} is made for ${arch}, not this ${process.arch}` : null });
  };
  add('source', join(dir, 'build', 'Release', ADDON_FILE_NAME));
  add('prebuilt', join(dir, 'prebuilds', target, ADDON_FILE_NAME));
  let shipped: string[] = [];
  try {
    shipped = readdirSync(join(dir, 'prebuilds')).filter((t) => t !== target);
  } catch {
    // no prebuilds folder: a clone, or a package packed without them
  }
  const missing = [
    files.some((f) => f.kind === 'prebuilt')
      ? ''
      : `no prebuilt for ${target}${shipped.length ? ` (prebuilt for ${shipped.sort().join(', ')} only)` : ''}`,
    files.some((f) => f.kind === 'source') ? '' : 'no build from source (npm install builds one where python3, make and a C compiler are)',
  ].filter(Boolean);
  return { files, missing: missing.length ? missing.join(' and ') : null };
}

/** The path of the addon file to load (the first of nativeAddonFiles not refused), or null. */
export function nativeAddonPath(packageRoot: string): string | null {
  return nativeAddonFiles(nativeDir(packageRoot)).files.find((f) => !f.refused)?.path ?? null;
}
