// SHA-256 and random names without loading node:crypto where nothing else needs it. node:crypto
// brings Node's streams with it: ~11 ms of every command line on the 2-core VM measured here
// (a create --base took ~145 ms in all, docs/evidence.md). SHA-256 comes from the native addon
// (the OpenSSL Node carries, as the Snapshot writer uses it) and random bytes from /dev/urandom;
// node:crypto, loaded on first use, where either is not to be had. Hashing file contents (the
// fs workers) and probes that write random data still use node:crypto.
import { closeSync, openSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { realpathOr } from '../paths.js';
import { loadNativeAddon } from './native.js';

type Crypto = typeof import('node:crypto');
let crypto: Crypto | undefined;
/** node:crypto, loaded when first asked for. */
export const nodeCrypto = (): Crypto => (crypto ??= createRequire(import.meta.url)('node:crypto') as Crypto);

type AddonSha256 = (parts: Uint8Array[]) => Buffer | null;
let addonSha256: AddonSha256 | null | undefined;

function nativeSha256(): AddonSha256 | null {
  if (addonSha256 === undefined) {
    const addon = loadNativeAddon().addon as { sha256?: AddonSha256 } | null;
    addonSha256 = typeof addon?.sha256 === 'function' ? addon.sha256.bind(addon) : null;
  }
  return addonSha256;
}

const bytesOf = (data: string | Uint8Array): Uint8Array => (typeof data === 'string' ? Buffer.from(data, 'utf8') : data);

/** The SHA-256 of `parts` one after the other (a string as its UTF-8 bytes): 32 bytes. */
export function sha256(...parts: Array<string | Uint8Array>): Buffer {
  const bytes = parts.map(bytesOf);
  const native = nativeSha256()?.(bytes);
  if (native) return native;
  const h = nodeCrypto().createHash('sha256');
  for (const b of bytes) h.update(b);
  return h.digest();
}

/** The SHA-256 of `data` in lowercase hex. */
export const sha256Hex = (...parts: Array<string | Uint8Array>): string => sha256(...parts).toString('hex');

/** `n` random bytes in hex (names and tokens that must not collide; nothing secret). */
export function randomHex(n: number): string {
  const buf = Buffer.allocUnsafe(n);
  try {
    const fd = openSync('/dev/urandom', 'r');
    try {
      if (readSync(fd, buf, 0, n, null) === n) return buf.toString('hex');
    } finally {
      closeSync(fd);
    }
  } catch {
    // no /dev/urandom here (or it cannot be read): node:crypto below
  }
  return nodeCrypto().randomBytes(n).toString('hex');
}

/** A short stable key for a source directory (hash of its real path); never written into receipts. */
export function sourceKey(dir: string, length = 16): string {
  return sha256Hex(realpathOr(dir)).slice(0, length);
}
