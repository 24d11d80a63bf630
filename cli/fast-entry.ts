// Which copy of the checkpoint fast path bin.js runs.
//
// `npm run build` (and `npm test`) bundle the fast path and every module a plain checkpoint loads
// into cli/checkpoint-bundle.js (scripts/bundle-checkpoint.mjs): Node 20 resolves, reads and links
// each ES module on its own, and about forty of them were a large share of a checkpoint's start.
// The bundle runs only while the dist files it was made from are the ones on disk (the same size
// and mtime, listed in cli/checkpoint-bundle.json); otherwise (a bare `tsc`, a bundle missing or
// cut short, PDB_ENV_NO_BUNDLE=1) the modules themselves run, which do the same.
import { readFileSync, statSync } from 'node:fs';
import type { CheckpointArgs } from './fast-args.js';

/** The bundle's record of what it was built from: [path under dist/, size, mtimeMs] per file. */
export interface BundleManifest {
  inputs: Array<[string, number, number]>;
}

export const BUNDLE_FILE = 'checkpoint-bundle.js';
export const BUNDLE_MANIFEST = 'checkpoint-bundle.json';

/** Is the bundle in `cliDir` built from the files under `distDir` as they are now? */
export function bundleIsFresh(cliDir: URL, distDir: URL): boolean {
  let manifest: BundleManifest;
  try {
    manifest = JSON.parse(readFileSync(new URL(BUNDLE_MANIFEST, cliDir), 'utf8')) as BundleManifest;
  } catch {
    return false; // no bundle built, or a manifest cut short
  }
  if (!Array.isArray(manifest?.inputs) || manifest.inputs.length === 0) return false;
  for (const input of manifest.inputs) {
    if (!Array.isArray(input) || typeof input[0] !== 'string') return false;
    const st = statSync(new URL(input[0], distDir), { throwIfNoEntry: false });
    if (!st || st.size !== input[1] || st.mtimeMs !== input[2]) return false;
  }
  return true;
}

/** What cli/fast-path.ts exports to bin.js. */
export interface FastPath {
  /** Run a plain checkpoint call; its exit status. */
  runFast(args: CheckpointArgs): Promise<number>;
}

/** Which copy of the fast path a plain checkpoint runs here, and why (`pdb-env doctor` says it). */
export function checkpointBundleState(): { bundled: boolean; reason: string } {
  const cli = new URL('./', import.meta.url);
  if (process.env.PDB_ENV_NO_BUNDLE === '1') return { bundled: false, reason: 'PDB_ENV_NO_BUNDLE=1' };
  if (!bundleIsFresh(cli, new URL('../', cli)))
    return { bundled: false, reason: 'no bundle built from dist as it is (npm run build makes one)' };
  return { bundled: true, reason: `dist/cli/${BUNDLE_FILE}, built from dist as it is` };
}

/** The fast path to run: the bundle when it is fresh, else the modules. */
export async function loadFastPath(): Promise<FastPath> {
  if (checkpointBundleState().bundled) return (await import(new URL(BUNDLE_FILE, import.meta.url).href)) as FastPath;
  return import('./fast-path.js');
}
