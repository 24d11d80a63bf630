// The fileops expectation: each step's effect on the tree, applied to the base entries in step
// order, so the oracle's result is known before any backend runs.
import type { Entry } from '../../model/snapshot.js';
import { TreeModel } from '../tree-model.js';
import {
  APPENDED_LOG,
  EDITED,
  editEvery,
  LARGE_PATH,
  largeDigest,
  newSmallPath,
  pseudoRandomChunk,
  readParams,
  REENTRY_MARKER,
  smallEdited,
  smallPath,
  TRUNCATE_BYTES,
  TRUNCATE_PATH,
  TRUNCATE_TO,
  type FileopsParams,
} from './matrix.js';
import { fileopsSteps } from './fileops-steps.js';

/** Each step's effect on the tree, applied in step order to compute the expected result. */
const MODEL: Record<string, (m: TreeModel, p: FileopsParams) => void> = {
  create(m) {
    m.write('out/a/b/c/new.txt', 'a new file in new nested directories\n');
    m.write('out/new-top.txt', 'a new top-level output\n');
    m.mkdir('out/empty-dir');
    for (let i = 0; i < 3; i++) m.write(`tmp/scratch-${i}.txt`, `scratch ${i}\n`);
  },
  read() {},
  edit(m, p) {
    m.write('src/edit-me.txt', EDITED);
    for (const i of editEvery(p)) m.write(smallPath(i), smallEdited(i));
  },
  append(m, p) {
    const old = 'log line 0\n';
    m.write('src/append-me.log', old + APPENDED_LOG);
    if (p.largeFileBytes > 0) {
      const d = largeDigest(p.largeFileBytes).appended;
      m.writeDigest(LARGE_PATH, d.digest, d.size);
    }
  },
  truncate(m) {
    m.write(TRUNCATE_PATH, pseudoRandomChunk(3, 0, TRUNCATE_BYTES).subarray(0, TRUNCATE_TO));
  },
  delete(m) {
    m.remove('src/delete-me.txt');
    m.remove('doomed-dir');
  },
  rename(m) {
    m.rename('src/rename-me.txt', 'src/renamed.txt');
    m.rename('src/moving-dir', 'src/moved-dir');
  },
  symlink(m) {
    m.symlink('links/to-edit', '../src/edit-me.txt');
    m.remove('links/readme');
    m.symlink('links/readme', '../src/keep.txt');
    m.symlink('links/out-dir', '../out/a');
  },
  exec(m) {
    m.chmod('bin/tool.sh', true);
    m.chmod('bin/was-exec.sh', false);
  },
  'small-tree'(m, p) {
    for (let i = 0; i < p.newSmallFiles; i++) m.write(newSmallPath(i), `new small file ${i}\n`);
  },
  reentry(m) {
    m.write('reentry/marker.txt', REENTRY_MARKER);
  },
  cleanup(m) {
    m.remove('tmp');
  },
};

/** The tree every backend must leave: the base with every step's modelled effect applied. */
export function expectedFileops(base: Entry[], params: Record<string, unknown>): Entry[] {
  const p = readParams(params);
  const m = new TreeModel(base);
  for (const step of fileopsSteps(params)) {
    const apply = MODEL[step.name];
    if (!apply) throw new Error(`fileops: no model for step ${step.name}`);
    apply(m, p);
  }
  return m.result();
}
