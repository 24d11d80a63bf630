// One backend's module, loaded alone. A command on one session (checkpoint, diff, path, create
// with a named backend) needs only that backend, while the registry imports all seven and what
// they use (the AgentFS adapter, process runners): measured, about a fifth of a checkpoint's
// module loading.
import type { Backend } from './types.js';

export async function loadBackend(name: string, options: { allowTestOnly?: boolean } = {}): Promise<Backend> {
  switch (name) {
    case 'full-copy':
      return (await import('./full-copy.js')).fullCopyBackend;
    case 'overlay':
      return (await import('./overlay.js')).overlayBackend;
    case 'reflink':
      return (await import('./reflink.js')).reflinkBackend;
    case 'btrfs-snapshot':
      return (await import('./btrfs-snapshot.js')).btrfsSnapshotBackend;
    case 'apfs-clone':
      return (await import('./apfs-clone.js')).apfsCloneBackend;
    case 'git-worktree':
      return (await import('./git-worktree.js')).gitWorktreeBackend;
    default:
      // agentfs, the test-only backends and unknown names: the registry decides (and types the error).
      return (await import('./registry.js')).getBackend(name, options);
  }
}
