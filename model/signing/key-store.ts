// The key that signs this host's receipts: given by CI as a secret (PDB_ENV_SIGNING_KEY holds a
// PKCS#8 PEM), else made on first use and kept outside any project, readable by its owner alone
// ($XDG_CONFIG_HOME/pdb-env/keys/receipt-signing.pem, else ~/.config/...). ed25519: node:crypto
// makes and uses it with no dependency, and a signature is 64 bytes.
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { PdbError } from '../errors.js';
import { keyidOf } from './dsse.js';

/** The variable a CI secret puts the signing key in (a PKCS#8 PEM of an ed25519 private key). */
export const SIGNING_KEY_ENV = 'PDB_ENV_SIGNING_KEY';
const KEY_FILE = 'receipt-signing.pem';

export interface SigningKey {
  /** sha256 of the public key's SPKI DER, hex: how receipts and policies name the signer. */
  keyid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** Where it came from: the environment variable, or the host's key file. */
  source: 'env' | 'file';
  /** The key file (source 'file'); null for a key from the environment. */
  file: string | null;
}

export interface KeyStoreOptions {
  env?: NodeJS.ProcessEnv;
  /** Make the host's key when there is none (default true); false: null instead. */
  create?: boolean;
}

/** Where the host's key lives: $XDG_CONFIG_HOME/pdb-env/keys, else ~/.config/pdb-env/keys. */
export function keysDir(env: NodeJS.ProcessEnv = process.env): string {
  const config = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/') ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(config, 'pdb-env', 'keys');
}

function keyError(message: string, cause?: unknown): PdbError {
  return new PdbError('E_SIGNING_KEY', message, {
    cause,
    hint: `${SIGNING_KEY_ENV} must hold an ed25519 private key as PKCS#8 PEM (openssl genpkey -algorithm ed25519); unset, the host's key under ${keysDir()} is used, made on first use.`,
  });
}

function fromPem(pem: string, source: SigningKey['source'], file: string | null): SigningKey {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch (err) {
    throw keyError(`the signing key from ${file ?? SIGNING_KEY_ENV} does not parse: ${(err as Error).message}`, err);
  }
  if (privateKey.asymmetricKeyType !== 'ed25519')
    throw keyError(`the signing key from ${file ?? SIGNING_KEY_ENV} is ${privateKey.asymmetricKeyType}, not ed25519`);
  const publicKey = createPublicKey(privateKey);
  return { keyid: keyidOf(publicKey), privateKey, publicKey, source, file };
}

/** Read the host's key file, refusing one that others may read (as ssh does). */
function readKeyFile(file: string): SigningKey {
  const st = statSync(file);
  if ((st.mode & 0o077) !== 0)
    throw keyError(`the signing key ${file} may be read by others (mode ${(st.mode & 0o777).toString(8)}): chmod 600 it`);
  return fromPem(readFileSync(file, 'utf8'), 'file', file);
}

/**
 * The key that signs receipts here: PDB_ENV_SIGNING_KEY when set, else the host's key file, made
 * (0600, in a 0700 folder) when there is none. Null only when `create` is false and there is none.
 */
export function loadSigningKey(opts: KeyStoreOptions & { create: false }): SigningKey | null;
export function loadSigningKey(opts?: KeyStoreOptions): SigningKey;
export function loadSigningKey(opts: KeyStoreOptions = {}): SigningKey | null {
  const env = opts.env ?? process.env;
  const pem = env[SIGNING_KEY_ENV];
  if (pem && pem.trim()) return fromPem(pem, 'env', null);
  const dir = keysDir(env);
  const file = join(dir, KEY_FILE);
  try {
    return readKeyFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      throw err instanceof PdbError ? err : keyError(`the signing key ${file} cannot be read`, err);
  }
  if (opts.create === false) return null;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    const { privateKey } = generateKeyPairSync('ed25519');
    // wx: two runs making the host's key at once keep the first one's.
    writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }), { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw keyError(`the signing key ${file} cannot be made`, err);
  }
  return readKeyFile(file);
}
