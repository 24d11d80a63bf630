// One backend's module, loaded alone, for a command on one session (checkpoint, diff, path). The
// table's row imports just that module. The registry (the test-only rule, users' modules), which
// the checkpoint bundle leaves out, is loaded only for a name that is not a user backend of the table.
import { backendRow } from './table.js';
import type { Backend } from './types.js';

export async function loadBackend(name: string, options: { allowTestOnly?: boolean } = {}): Promise<Backend> {
  const row = backendRow(name);
  if (row && !row.traits.testOnly) return row.load();
  return (await import('./registry.js')).getBackend(name, options);
}
