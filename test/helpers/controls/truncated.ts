// A file truncated with its size and mtime kept: each text file's bytes become zeros (the length
// restored by extending it again), so size, mtime and the recorded signature all still look right.
import { stat, truncate, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { controlBackend, isTextFile } from './control.js';

export default controlBackend(
  'control-truncated',
  'text files truncated and extended back to their size (zeros), mtime kept',
  async (root, snapshot) => {
    const out: string[] = [];
    for (const e of snapshot.entries) {
      if (e.kind !== 'file' || e.size === 0 || !isTextFile(e.path)) continue;
      const path = join(root, e.path);
      const before = await stat(path);
      await truncate(path, 0);
      await truncate(path, e.size);
      await utimes(path, before.atime, before.mtime);
      out.push(e.path);
    }
    return out;
  },
);
