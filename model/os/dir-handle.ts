// Writes relative to directory handles, never through a path that a link swapped in could
// redirect. A handle is a directory opened with O_NOFOLLOW (each component from its parent's
// handle), and every call names one entry in it: a parent swapped for a link fails closed (ELOOP,
// ENOTDIR), and a directory renamed away is still written where it is, never where its old name
// now points. The campaign of issue 41 found apply, discard and restore following a component
// swapped by renameat2(RENAME_EXCHANGE) in a loop when they wrote by path.
//
// Three ways to make the calls, the first that this host has:
// - native: the addon's openat, fstatat, renameat2, linkat, unlinkat, mkdirat, symlinkat,
//   readlinkat and a listing by descriptor (native/os.c);
// - proc: Node's path calls on /proc/self/fd/N/NAME, which the kernel resolves from the handle
//   itself (the magic link is the descriptor's own directory), so the guarantee is the same;
// - path: Node's path calls on the path the handle was opened by, with the handle's directory
//   checked before and after each call (its device and inode, and its real path unchanged). That
//   refuses a component changed before or after the call, but a swap made and undone within the
//   one call is not seen; and a tree deeper than PATH_MAX cannot be removed. Used only where
//   there is neither the addon nor /proc (macOS without the addon).
// PDB_ENV_DIR_HANDLES=native|proc|path forces one (tests); PDB_ENV_NATIVE_OS=off leaves the addon out.
export {
  closeDir,
  dirHandleWay,
  exchangeAt,
  handlePath,
  hashFileAt,
  linkAt,
  listAt,
  mkdirAt,
  openDirAt,
  openFileAt,
  openParentAt,
  openRoot,
  readlinkAt,
  renameAt,
  rmdirAt,
  statAt,
  symlinkAt,
  unlinkAt,
  writeFileAt,
  type AtStat,
  type DirHandle,
  type DirHandleWay,
} from './at-calls.js';
export { rmTreeAt } from './rm-tree-at.js';
