// Which copy of the checkpoint fast path bin.js runs (cli/bundle-state.cts says how that is
// decided; cli/start.cts asks the same before any ES module is loaded).
import { fileURLToPath } from 'node:url';
import type { CheckpointArgs } from './fast-args.js';
import { checkpointBundleState as stateIn, loadBundle } from './bundle-state.cjs';

export { BUNDLE_FILE, BUNDLE_MANIFEST, bundleIsFresh, type BundleManifest } from './bundle-state.cjs';

/** What cli/fast-path.ts exports to bin.js and start.cjs. */
export interface FastPath {
  /** Run a plain checkpoint call; its exit status. `direct`: print with write(2) on fds 1 and 2 (output.ts). */
  runFast(args: CheckpointArgs, options?: { direct?: boolean }): Promise<number>;
  fastCheckpointArgs(argv: readonly string[]): CheckpointArgs | null;
}

const CLI_DIR = fileURLToPath(new URL('./', import.meta.url));

/** Which copy of the fast path a plain checkpoint runs here, and why (`pdb-env doctor` says it). */
export function checkpointBundleState(): { bundled: boolean; reason: string } {
  return stateIn(CLI_DIR);
}

/**
 * The fast path to run: the bundle when it is fresh (loaded as CommonJS with its code cache, as
 * start.cjs does: an import of a CommonJS file would first scan all of it for its exports), else
 * the modules.
 */
export async function loadFastPath(): Promise<FastPath> {
  if (checkpointBundleState().bundled) return loadBundle(CLI_DIR).exports as FastPath;
  return import('./fast-path.js');
}
