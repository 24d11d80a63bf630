// Which copy of the checkpoint fast path runs: CommonJS, so that cli/start.cts (the executable's
// first module) can ask before Node's ES module loader is started, and cli/fast-entry.ts asks
// the same from the ES modules.
//
// `npm run build` (and `npm test`) bundle the fast path and every module a plain checkpoint loads
// into cli/checkpoint-bundle.cjs (scripts/bundle-checkpoint.mjs). The bundle runs only while the
// dist files it was made from are the ones on disk (the same size and mtime, listed in
// cli/checkpoint-bundle.json); otherwise (a bare `tsc`, a bundle missing or cut short,
// PDB_ENV_NO_BUNDLE=1) the modules themselves run, which do the same.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The bundle's record of what it was built from: [path under dist/, size, mtimeMs] per file. */
export interface BundleManifest {
  inputs: Array<[string, number, number]>;
}

export const BUNDLE_FILE = 'checkpoint-bundle.cjs';
export const BUNDLE_MANIFEST = 'checkpoint-bundle.json';

/** Is the bundle in the directory `cliDir` built from the files under `distDir` as they are now? */
export function bundleIsFresh(cliDir: string, distDir: string): boolean {
  let manifest: BundleManifest;
  try {
    manifest = JSON.parse(readFileSync(join(cliDir, BUNDLE_MANIFEST), 'utf8')) as BundleManifest;
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

/** Which copy of the fast path a plain checkpoint runs from the dist/cli directory `cliDir`, and why (`pdb-env doctor` says it). */
export function checkpointBundleState(cliDir: string): { bundled: boolean; reason: string } {
  if (process.env.PDB_ENV_NO_BUNDLE === '1') return { bundled: false, reason: 'PDB_ENV_NO_BUNDLE=1' };
  if (!bundleIsFresh(cliDir, join(cliDir, '..')))
    return { bundled: false, reason: 'no bundle built from dist as it is (npm run build makes one)' };
  return { bundled: true, reason: `dist/cli/${BUNDLE_FILE}, built from dist as it is` };
}
