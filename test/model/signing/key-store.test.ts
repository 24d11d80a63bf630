// The host's signing key: made on first use outside the project (0600 in a 0700 folder), the same
// key on every later use, a CI secret in PDB_ENV_SIGNING_KEY taking its place, and a key others may
// read, or one that is not ed25519, refused with E_SIGNING_KEY.
import { generateKeyPairSync } from 'node:crypto';
import { chmodSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isPdbError } from '../../../model/errors.js';
import { keysDir, loadSigningKey, SIGNING_KEY_ENV } from '../../../model/signing/key-store.js';
import { tempDir } from '../../helpers/index.js';

const t = tempDir('pdb-keys-');
test.after(() => t.cleanup());

test('made on first use under $XDG_CONFIG_HOME/pdb-env/keys, owner-only, and the same key after', () => {
  const env = { XDG_CONFIG_HOME: join(t.dir, 'config') };
  assert.is(loadSigningKey({ env, create: false }), null, 'nothing made when asked not to');
  const key = loadSigningKey({ env });
  assert.is(key.source, 'file');
  assert.is(key.file, join(t.dir, 'config', 'pdb-env', 'keys', 'receipt-signing.pem'));
  assert.is(keysDir(env), join(t.dir, 'config', 'pdb-env', 'keys'));
  assert.is(statSync(key.file!).mode & 0o777, 0o600);
  assert.is(statSync(keysDir(env)).mode & 0o777, 0o700);
  assert.match(key.keyid, /^[0-9a-f]{64}$/);
  assert.is(loadSigningKey({ env }).keyid, key.keyid);
  chmodSync(key.file!, 0o644);
  assert.throws(
    () => loadSigningKey({ env }),
    (e: unknown) => isPdbError(e, 'E_SIGNING_KEY') && /chmod 600/.test((e as Error).message),
  );
});

test('a CI secret in PDB_ENV_SIGNING_KEY is used instead; a key that is not ed25519 is refused', () => {
  const pem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const env = { XDG_CONFIG_HOME: join(t.dir, 'unused'), [SIGNING_KEY_ENV]: pem };
  const key = loadSigningKey({ env });
  assert.equal([key.source, key.file], ['env', null]);
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  assert.throws(
    () => loadSigningKey({ env: { [SIGNING_KEY_ENV]: rsa } }),
    (e: unknown) => isPdbError(e, 'E_SIGNING_KEY') && /rsa, not ed25519/.test((e as Error).message),
  );
  assert.throws(
    () => loadSigningKey({ env: { [SIGNING_KEY_ENV]: 'not a key' } }),
    (e: unknown) => isPdbError(e, 'E_SIGNING_KEY'),
  );
});

test.run();
