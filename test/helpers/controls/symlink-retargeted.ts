// A symlink retargeted: every symlink points somewhere else (its target with "-elsewhere" appended).
import { rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { controlBackend } from './control.js';

export default controlBackend('control-symlink-retargeted', 'every symlink pointed elsewhere', async (root, snapshot) => {
  const out: string[] = [];
  for (const e of snapshot.entries) {
    if (e.kind !== 'symlink') continue;
    await rm(join(root, e.path));
    await symlink(`${e.target}-elsewhere`, join(root, e.path));
    out.push(e.path);
  }
  return out;
});
