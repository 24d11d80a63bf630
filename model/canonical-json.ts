import { sha256Hex } from './os/hash.js';

/** A JSON value that canonical serialization accepts (no undefined, no non-finite numbers). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * RFC 8785-style canonical JSON: object keys sorted by UTF-16 code units, no whitespace,
 * numbers in ECMAScript shortest form. Our documents only hold strings, integers, booleans and null,
 * where this agrees with JCS exactly.
 */
export function canonicalJson(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') {
    const hit = frozenJson.get(value);
    if (hit !== undefined) return hit;
    const text = objectJson(value);
    if (Object.isFrozen(value) && frozenThrough(value)) frozenJson.set(value, text);
    return text;
  }
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('canonical JSON cannot hold a non-finite number');
      return JSON.stringify(value);
    case 'string':
      return JSON.stringify(value);
    default:
      throw new TypeError(`canonical JSON cannot hold a ${typeof value}`);
  }
}

function objectJson(value: object): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}

// The canonical JSON of objects frozen through (model/store/kept-documents.ts freezes the
// documents it keeps): such an object cannot change, so neither can its text. An object is kept
// only when every object in it was (each was serialized first, so kept if it could be).
const frozenJson = new WeakMap<object, string>();
function frozenThrough(value: object): boolean {
  for (const v of Object.values(value)) if (v !== null && typeof v === 'object' && !frozenJson.has(v)) return false;
  return true;
}

export type Digest = `sha256:${string}`;

export const DIGEST_PATTERN = /^sha256:[0-9a-f]{64}$/;

export function isDigest(value: unknown): value is Digest {
  return typeof value === 'string' && DIGEST_PATTERN.test(value);
}

export function sha256Digest(bytes: string | Uint8Array): Digest {
  return `sha256:${sha256Hex(bytes)}`;
}

/** Digest of a document's canonical bytes, and the bytes themselves. */
export function canonicalBytes(value: unknown): { bytes: Buffer; digest: Digest } {
  const bytes = Buffer.from(canonicalJson(value), 'utf8');
  return { bytes, digest: sha256Digest(bytes) };
}
