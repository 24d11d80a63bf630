// Bytes leave the store hashed: every file object the way back copies out (apply's staging, the
// blobs of a patch or an export commit) is written by the model's materialize, whose copy hashes
// the bytes as they pass. An object that no longer matches its digest is E_OBJECT_CORRUPT naming
// the path it was for, and is moved to the quarantine (the next import of a source that holds the
// bytes installs them again); an absent one is E_OBJECT_MISSING naming the path.
import type { Digest } from '../../model/canonical-json.js';
import { PdbError, isPdbError } from '../../model/errors.js';
import type { ProgressFn } from '../../model/progress.js';
import { materializeTree } from '../../model/store/materialize.js';
import type { ObjectStore } from '../../model/store/object-store.js';
import { SNAPSHOT_VERSION, type Entry } from '../../model/snapshot.js';

export interface ObjectCopy {
  /** The contract path the bytes are for (errors name it). */
  path: string;
  digest: Digest;
  size: number;
  exec: boolean;
  /** The file name the copy gets in the directory; it must not exist there. */
  name: string;
}

/** Copy file objects out of the store into `dir`, verified. Other failures are thrown as the model typed them (the caller names where). */
export async function copyObjectsOut(
  store: ObjectStore,
  dir: string,
  items: readonly ObjectCopy[],
  onProgress?: ProgressFn,
): Promise<void> {
  if (items.length === 0) return;
  const entries: Entry[] = items.map((i) => ({ path: i.name, kind: 'file', digest: i.digest, size: i.size, exec: i.exec }));
  try {
    await materializeTree(store, { version: SNAPSHOT_VERSION, base: null, excludes: [], entries }, dir, undefined, onProgress);
  } catch (err) {
    if (!isPdbError(err, 'E_OBJECT_CORRUPT') && !isPdbError(err, 'E_OBJECT_MISSING')) throw err;
    // materialize names the copy's own name; say which path of the changes it was for.
    const path = items.find((i) => i.name === err.path)?.path ?? '?';
    throw new PdbError(err.code, `${err.message.replace(`of ${err.path} (`, `of ${path} (`)}; nothing was written`, {
      path,
      cause: err,
      hint: err.hint,
    });
  }
}
