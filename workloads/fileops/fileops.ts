// The core file-operation matrix: create, read, edit, append, truncate, delete, rename, relative
// symlink, exec bit, nested directories, a large file, a tree of many small files, re-entry in a
// second process through `pdb-env run`, cleanup. Every operation is deterministic, and its effect
// on the tree is modelled too, so the oracle's expected result is computed in advance from the
// base entries (and the full-copy case is checked against it like every other backend). The
// matrix's inputs, fixture, steps and expectation live in fileops/.
import { expectedFileops } from './expected.js';
import { prepareFileopsFixture } from './fixture.js';
import { FILEOPS_DEFAULTS } from './matrix.js';
import { fileopsSteps } from './fileops-steps.js';
import type { Workload } from '../types.js';

export const fileopsWorkload: Workload = {
  name: 'fileops',
  description:
    'deterministic file-operation matrix (create, read, edit, append, truncate, delete, rename, symlink, exec bit, nested dirs, large file, many small files, re-entry, cleanup)',
  deterministic: true,
  sessions: 1,
  defaultParams: { ...FILEOPS_DEFAULTS },
  prepareFixture: prepareFileopsFixture,
  steps: fileopsSteps,
  project: (entries) => entries,
  projectionNote: 'identity: every entry of the result is compared',
  async expected(base, params) {
    return expectedFileops(base, params);
  },
};
