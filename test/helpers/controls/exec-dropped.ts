// An exec bit dropped: every executable file made 0644.
import { chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { controlBackend } from './control.js';

export default controlBackend('control-exec-dropped', 'the exec bit of every executable file dropped', async (root, snapshot) => {
  const out: string[] = [];
  for (const e of snapshot.entries) {
    if (e.kind !== 'file' || !e.exec) continue;
    await chmod(join(root, e.path), 0o644);
    out.push(e.path);
  }
  return out;
});
