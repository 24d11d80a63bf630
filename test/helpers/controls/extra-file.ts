// An extra file: one file the Snapshot does not have, at the root.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { controlBackend } from './control.js';

export const EXTRA_FILE = 'control-extra-file.txt';

export default controlBackend('control-extra-file', `an extra file (${EXTRA_FILE}) at the root`, async (root) => {
  await writeFile(join(root, EXTRA_FILE), 'not in the Snapshot\n');
  return [EXTRA_FILE];
});
