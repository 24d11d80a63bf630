// An empty directory lost: every directory with nothing in it is not made.
import { rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { controlBackend } from './control.js';

export default controlBackend('control-empty-dir-lost', 'every empty directory left out', async (root, snapshot) => {
  const dirs = snapshot.entries.filter((e) => e.kind === 'dir').map((e) => e.path);
  const parents = new Set(snapshot.entries.map((e) => e.path.split('/').slice(0, -1).join('/')));
  const empty = dirs.filter((d) => !parents.has(d)).sort((a, b) => b.length - a.length);
  for (const d of empty) await rmdir(join(root, d));
  return empty;
});
