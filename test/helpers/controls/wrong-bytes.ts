// Wrong bytes under a valid signature: the first byte of every text file flipped, size and mtime kept.
import { open, stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { controlBackend, isTextFile } from './control.js';

export default controlBackend('control-wrong-bytes', 'one byte of each text file flipped, size and mtime kept', async (root, snapshot) => {
  const out: string[] = [];
  for (const e of snapshot.entries) {
    if (e.kind !== 'file' || e.size === 0 || !isTextFile(e.path)) continue;
    const path = join(root, e.path);
    const before = await stat(path);
    const fh = await open(path, 'r+');
    const b = Buffer.alloc(1);
    await fh.read(b, 0, 1, 0);
    b[0] = b[0]! ^ 0x20;
    await fh.write(b, 0, 1, 0);
    await fh.close();
    await utimes(path, before.atime, before.mtime);
    out.push(e.path);
  }
  return out;
});
