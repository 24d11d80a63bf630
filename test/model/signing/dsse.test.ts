// DSSE as its specification gives it: PAE byte for byte (protocol.md's test vector), and an
// ed25519 signature that verifies over the payload it was made for and over nothing else.
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createDsseEnvelope, isDsseEnvelope, keyidOf, pae, verifyDsse } from '../../../model/signing/dsse.js';

test("PAE is the specification's test vector: lengths in bytes, fields separated by one space", () => {
  assert.is(
    pae('http://example.com/HelloWorld', Buffer.from('hello world')).toString(),
    'DSSEv1 29 http://example.com/HelloWorld 11 hello world',
  );
  // Lengths count bytes, not characters: "é" is two bytes.
  assert.is(pae('t', Buffer.from('é')).toString(), 'DSSEv1 1 t 2 é');
});

test('a signature verifies over its payload and type; an edited payload, type or keyid does not', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const env = createDsseEnvelope('application/x-test', Buffer.from('{"a":1}'), [privateKey]);
  assert.ok(isDsseEnvelope(env));
  assert.equal(verifyDsse(env), [{ keyid: keyidOf(publicKey), valid: true, problem: null }]);
  assert.match(env.signatures[0]!.keyid, /^[0-9a-f]{64}$/);
  const edited = { ...env, payload: Buffer.from('{"a":2}').toString('base64') };
  assert.is(verifyDsse(edited)[0]!.problem, 'the signature does not match the payload');
  assert.is(verifyDsse({ ...env, payloadType: 'application/x-other' })[0]!.valid, false, 'the type is signed too');
  const renamed = { ...env, signatures: [{ ...env.signatures[0]!, keyid: 'f'.repeat(64) }] };
  assert.match(verifyDsse(renamed)[0]!.problem ?? '', 'keyid is not the sha256 of its public key');
  const other = generateKeyPairSync('ed25519');
  const swapped = {
    ...env,
    signatures: [
      { ...createDsseEnvelope('application/x-test', Buffer.from('x'), [other.privateKey]).signatures[0]!, sig: env.signatures[0]!.sig },
    ],
  };
  assert.is(verifyDsse(swapped)[0]!.valid, false, "another key's public half does not verify this signature");
});

test('a key that is not ed25519 is refused, and an envelope shape is told from a plain document', () => {
  const { privateKey } = generateKeyPairSync('ed25519');
  const env = createDsseEnvelope('t', Buffer.from('x'), [privateKey]);
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
  const spoof = {
    ...env,
    signatures: [{ ...env.signatures[0]!, keyid: keyidOf(ec), publicKey: ec.export({ type: 'spki', format: 'der' }).toString('base64') }],
  };
  assert.match(verifyDsse(spoof)[0]!.problem ?? '', 'not ed25519');
  assert.not.ok(isDsseEnvelope({ kind: 'pdb-env-receipt', cases: [] }));
  assert.not.ok(isDsseEnvelope(null));
});

test.run();
