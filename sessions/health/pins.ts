// Pins: digests the user asked gc to keep (`pdb-env pin DIGEST`), one file each under
// `<store>/pins/<hex>`, so pinning and unpinning never rewrite a shared list.
import { readdir, mkdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { isDigest, type Digest } from '../../model/canonical-json.js';
import { PdbError, osErrorCode, toPdbError } from '../../model/errors.js';
import { REPAIR_HINT, writeFileAtomic, type ObjectStore } from '../../model/store/object-store.js';
import { resolveDigestArg } from '../records/digests.js';

function pinsDir(store: ObjectStore): string {
  return join(store.paths.root, 'pins');
}

/** Keep `digest` (and everything it reaches) through every gc until it is unpinned. */
export async function pin(store: ObjectStore, digest: string): Promise<{ digest: Digest; pinned: true }> {
  const d = isDigest(digest) ? digest : await resolveDigestArg(store, digest, 'pin');
  if (!store.has(d)) throw new PdbError('E_OBJECT_MISSING', `object ${d} is not in the store`, { hint: REPAIR_HINT });
  const file = join(pinsDir(store), d.slice(7));
  try {
    await mkdir(pinsDir(store), { recursive: true });
  } catch (err) {
    throw toPdbError(err, 'E_IO', { action: 'making the pins directory', path: pinsDir(store) });
  }
  await writeFileAtomic(store.paths, file, `${JSON.stringify({ digest: d, pinnedAt: new Date().toISOString() })}\n`);
  return { digest: d, pinned: true };
}

/** Stop keeping `digest`; `wasPinned: false` when it was not pinned (not an error). */
export async function unpin(store: ObjectStore, digest: string): Promise<{ digest: Digest; wasPinned: boolean }> {
  const d = isDigest(digest) ? digest : await resolveDigestArg(store, digest, 'unpin');
  try {
    await unlink(join(pinsDir(store), d.slice(7)));
    return { digest: d, wasPinned: true };
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') return { digest: d, wasPinned: false };
    throw toPdbError(err, 'E_IO', { action: `unpinning ${d}`, path: join(pinsDir(store), d.slice(7)) });
  }
}

/** The pinned digests, sorted. */
export async function listPins(store: ObjectStore): Promise<Digest[]> {
  const names = await readdir(pinsDir(store)).catch(() => [] as string[]);
  return names
    .map((n) => `sha256:${n}`)
    .filter((d): d is Digest => isDigest(d))
    .sort();
}
