// Which copy of the command line bin.js runs (cli/bundle-state.cts says how that is decided;
// cli/start.cts asks the same before any ES module is loaded).
import { fileURLToPath } from 'node:url';
import type { CheckpointArgs } from './fast-args.js';
import { bundleState, loadBundle, type BundleName } from './bundle-state.cjs';

export {
  BUNDLE_FILE,
  BUNDLE_MANIFEST,
  BUNDLE_NAMES,
  bundleFiles,
  bundleIsFresh,
  type BundleManifest,
  type BundleName,
} from './bundle-state.cjs';

/** What cli/fast-path.ts exports to bin.js and start.cjs. */
export interface FastPath {
  /** Run a plain checkpoint call; its exit status. `direct`: print with write(2) on fds 1 and 2 (output.ts). */
  runFast(args: CheckpointArgs, options?: { direct?: boolean }): Promise<number>;
  fastCheckpointArgs(argv: readonly string[]): CheckpointArgs | null;
}

/** What cli/cli-entry.ts exports to bin.js and start.cjs. */
export interface CliEntry {
  runCli(argv: string[]): Promise<number>;
}

const CLI_DIR = fileURLToPath(new URL('./', import.meta.url));

/** Whether the bundle `name` runs here, and why (`pdb-env doctor` says it). */
export function bundleStateHere(name: BundleName): { bundled: boolean; reason: string } {
  return bundleState(CLI_DIR, name);
}

/** Which copy of the fast path a plain checkpoint runs here, and why. */
export const checkpointBundleState = () => bundleStateHere('checkpoint');

/**
 * The fast path to run: the bundle when it is fresh (loaded as CommonJS with its code cache, as
 * start.cjs does: an import of a CommonJS file would first scan all of it for its exports), else
 * the modules.
 */
export async function loadFastPath(): Promise<FastPath> {
  if (bundleStateHere('checkpoint').bundled) return loadBundle(CLI_DIR, 'checkpoint').exports as FastPath;
  return import('./fast-path.js');
}

/** The command line to run: the `cli` bundle when it is fresh, else the modules. */
export async function loadCli(): Promise<CliEntry> {
  if (bundleStateHere('cli').bundled) return loadBundle(CLI_DIR, 'cli').exports as CliEntry;
  return import('./cli-entry.js');
}
