// The create-time modules of the backends, loaded where used: a checkpoint, a diff or a run only
// resumes a session (a mount check at most), and module loading is a large share of a
// checkpoint's fixed cost. One home for the forwarders, so every backend spells them one way.
export const baseTree = () => import('./base-tree.js');
export const cloneTreeModule = () => import('./clone-tree.js');
export const diskUsage = () => import('./disk-usage.js');
export const materialize = () => import('../../model/store/materialize.js');

export const toolOutput: typeof import('../../model/os/run-tool.js').toolOutput = async (...args) =>
  (await import('../../model/os/run-tool.js')).toolOutput(...args);

export const removeTree: typeof import('../../model/os/remove-tree.js').removeTree = async (...args) =>
  (await import('../../model/os/remove-tree.js')).removeTree(...args);
