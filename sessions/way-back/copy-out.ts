// Bytes leave the store hashed: every file object the way back copies out (apply's staging, the
// blobs of a patch or an export commit) goes through the model's verified copy, which hashes the
// bytes as they pass. An object that no longer matches its digest is E_OBJECT_CORRUPT naming the
// path it was for, and is moved to the quarantine (the next import of a source that holds the
// bytes installs them again); an absent one is E_OBJECT_MISSING naming the path.
import type { Digest } from '../../model/canonical-json.js';
import { PdbError, isPdbError } from '../../model/errors.js';
import { sharedFsPool } from '../../model/scan/fs-pool.js';
import type { CopyItem } from '../../model/scan/fs-worker.js';
import { REPAIR_HINT, type ObjectStore } from '../../model/store/object-store.js';

export interface ObjectCopy {
  /** The contract path the bytes are for (errors name it). */
  path: string;
  digest: Digest;
  exec: boolean;
  /** Where the copy goes; it must not exist. */
  dst: string;
}

/** Copy file objects out of the store, verified. Other failures are thrown as the pool typed them (the caller names where). */
export async function copyObjectsOut(store: ObjectStore, items: readonly ObjectCopy[]): Promise<void> {
  const byDst = new Map(items.map((i) => [i.dst, i.path]));
  const copies: CopyItem[] = items.map((i) => [
    store.objectPath(i.digest),
    i.dst,
    i.exec ? 0o755 : 0o644,
    i.digest.slice('sha256:'.length),
  ]);
  try {
    await sharedFsPool().map(copies, (batch) => ({ op: 'copy', items: batch }));
  } catch (err) {
    throw objectError(store, err, byDst);
  }
}

function objectError(store: ObjectStore, err: unknown, byDst: ReadonlyMap<string, string>): unknown {
  if (!isPdbError(err, 'E_OBJECT_CORRUPT') && !isPdbError(err, 'E_OBJECT_MISSING')) return err;
  const cause = err.cause as { path?: string; object?: string } | undefined;
  const rel = (cause?.path && byDst.get(cause.path)) ?? '?';
  const digest = (cause?.object ? `sha256:${cause.object.split('/').slice(-2).join('')}` : '?') as Digest;
  if (err.code === 'E_OBJECT_MISSING')
    return new PdbError('E_OBJECT_MISSING', `the object of ${rel} (${digest}) is missing from the store: nothing was written`, {
      path: rel,
      cause: err,
      hint: REPAIR_HINT,
    });
  const aside = store.quarantineObject(digest);
  return new PdbError(
    'E_OBJECT_CORRUPT',
    `the object of ${rel} (${digest}) is corrupt: ${err.message}; nothing was written, and the object ${aside ? 'was moved' : 'is already'} in the quarantine`,
    { path: rel, cause: err, hint: REPAIR_HINT },
  );
}
