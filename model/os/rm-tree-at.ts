// rmTreeAt of model/os/dir-handle.ts: a tree removed by directory handles, at any depth.
import { closeSync, fchmodSync, openSync } from 'node:fs';
import { E, O_DIR, closeDir, hasProc, listAt, openDirAt, openOne, rmdirAt, statAt, unlinkAt, viaPath, type DirHandle } from './at-calls.js';
import { osError } from './native.js';

/**
 * Remove `name` in `h` and everything below it, never following a link, at any depth: it climbs
 * back by '..' (checked against the device and inode it came from) instead of holding a
 * descriptor per level, so a 10,000-level tree needs two descriptors and no path. A read-only
 * directory is made writable first. Nothing there is not an error.
 */
export function rmTreeAt(h: DirHandle, name: string): void {
  const top = statAt(h, name);
  if (!top) return;
  if (!top.isDirectory()) return ignoreGone(() => unlinkAt(h, name));
  // The directories entered below `name`: the name taken and the device and inode of the one it is in.
  const trail: Array<{ name: string; dev: bigint; ino: bigint; path: string }> = [];
  let cur = openDirAt(h, name);
  try {
    for (;;) {
      const sub = emptyOf(cur);
      if (sub !== null) {
        const next = openEntered(cur, sub);
        trail.push({ name: sub, dev: cur.dev, ino: cur.ino, path: cur.path });
        closeDir(cur);
        cur = next;
        continue;
      }
      const step = trail.pop();
      if (!step) break;
      const up = openOne(cur, '..', step.path);
      if (up.dev !== step.dev || up.ino !== step.ino) {
        closeDir(up);
        throw osError(E.ESTALE, cur.path, 'the tree being removed was moved meanwhile');
      }
      closeDir(cur);
      cur = up;
      writable(cur, () => ignoreGone(() => rmdirAt(cur, step.name)));
    }
  } finally {
    closeDir(cur);
  }
  writable(h, () => ignoreGone(() => rmdirAt(h, name)));
}

/** Remove every non-directory in `d`; the first subdirectory's name, or null when `d` is empty now. */
function emptyOf(d: DirHandle): string | null {
  for (const e of listAt(d)) {
    const st = statAt(d, e);
    if (!st) continue;
    if (st.isDirectory()) return e;
    writable(d, () => ignoreGone(() => unlinkAt(d, e)));
  }
  return null;
}

/** Open a subdirectory to empty it; one that cannot be read (mode 0) is made readable first. */
function openEntered(d: DirHandle, name: string): DirHandle {
  try {
    return openDirAt(d, name);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EACCES') throw err;
    // chmod through the parent's handle; the entry was a directory a moment ago (a link swapped in gets its target's mode changed at worst: never written into).
    viaPathAlways(d, name, (p) => statAt(d, name)?.isDirectory() && mkdirModeFix(p));
    return openDirAt(d, name);
  }
}

function mkdirModeFix(p: string): void {
  const fd = openSync(p, O_DIR);
  try {
    fchmodSync(fd, 0o700);
  } finally {
    closeSync(fd);
  }
}

function viaPathAlways<T>(h: DirHandle, name: string, call: (p: string) => T): T {
  return hasProc() ? call(`/proc/self/fd/${h.fd}/${name}`) : viaPath(h, name, call);
}

/** Run `fn`; when the directory refuses (EACCES, EPERM: an agent's chmod 0555), make it writable and run it again. */
function writable(d: DirHandle, fn: () => void): void {
  try {
    fn();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EPERM') throw err;
    fchmodSync(d.fd, 0o700);
    fn();
  }
}

function ignoreGone(fn: () => void): void {
  try {
    fn();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
