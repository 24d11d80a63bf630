// Documents this process wrote or read lately, by digest, frozen: a digest names its bytes, so a
// kept document is never stale. A checkpoint reads the session's last Changeset and writes the
// next, which holds most of the same changes; kept (frozen, every object in it), the last one is
// not read and parsed again, and the changes carried over are not serialized again
// (model/canonical-json.ts keeps the canonical JSON of a frozen object). What is kept says nothing
// of whether a store holds that object: `has` and `verify` ask the store.
import type { Digest } from '../canonical-json.js';
import type { ObjectStore } from './object-store.js';

const LIMIT = 8;
const kept = new Map<Digest, unknown>();

/** Freeze `value` and every object in it (what is frozen already is taken as frozen through). */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  for (const v of Object.values(value)) deepFreeze(v);
  return Object.freeze(value);
}

/** Keep `value`, the document named `digest`, frozen through; returns it. */
export function keepDocument<T>(digest: Digest, value: T): T {
  kept.delete(digest);
  kept.set(digest, deepFreeze(value));
  for (const k of kept.keys()) {
    if (kept.size <= LIMIT) break;
    kept.delete(k);
  }
  return value;
}

/** The document named `digest`, frozen: kept, or read from `store` (and kept). */
export function keptDocument<T>(store: ObjectStore, digest: Digest, what: string): T {
  const hit = kept.get(digest);
  if (hit !== undefined) return hit as T;
  return keepDocument(digest, store.getDocument<T>(digest, what));
}
