// Short digests: wherever a digest is taken (--base, --expect, pin), a unique prefix of at least 7
// hex characters (with or without "sha256:") names the object in the store that starts with it.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { isDigest, type Digest } from '../../model/canonical-json.js';
import { PdbError } from '../../model/errors.js';
import type { ObjectStore } from '../../model/store/object-store.js';

export const MIN_DIGEST_PREFIX = 7;

/** The full digest `arg` names: itself when complete, else the one object whose hex starts with it. */
export async function resolveDigestArg(store: ObjectStore, arg: string, what: string): Promise<Digest> {
  if (isDigest(arg)) return arg;
  const hex = arg.startsWith('sha256:') ? arg.slice(7) : arg;
  if (!/^[0-9a-f]+$/.test(hex) || hex.length < MIN_DIGEST_PREFIX || hex.length > 64)
    throw new PdbError(
      'E_USAGE',
      `${what} must be a digest (sha256:<64 hex>) or a unique prefix of at least ${MIN_DIGEST_PREFIX} hex characters, got "${arg}"`,
      {
        hint: 'pdb-env envs and pdb-env list show digests.',
      },
    );
  const names: string[] = [];
  for (const dir of [store.paths.objects, store.paths.chunked])
    // a document stored as chunks is named by its record
    names.push(...(await readdir(join(dir, hex.slice(0, 2))).catch(() => [] as string[])));
  const found = [...new Set(names)]
    .filter((n) => n.startsWith(hex.slice(2)) && n.length === 62)
    .map((n) => `sha256:${hex.slice(0, 2)}${n}` as Digest);
  if (found.length === 1) return found[0]!;
  if (found.length === 0)
    throw new PdbError('E_DIGEST_UNKNOWN', `${what}: no object in the store starts with ${hex}`, {
      hint: 'pdb-env envs and pdb-env list show digests.',
    });
  throw new PdbError('E_DIGEST_AMBIGUOUS', `${what}: ${hex} names ${found.length} objects: ${found.sort().join(', ')}`, {
    hint: 'Give more hex characters.',
  });
}
