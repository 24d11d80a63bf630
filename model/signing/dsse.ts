// DSSE, the Dead Simple Signing Envelope that in-toto and Sigstore use
// (github.com/secure-systems-lab/dsse, protocol 1.0): a payload, its type, and signatures over
// PAE(type, payload), never over the JSON around them, so re-serializing an envelope cannot change
// what was signed. ed25519 through node:crypto; each signature carries its public key (SPKI DER,
// base64; DSSE lets a producer add fields), so a reader can check it without a key server, and the
// keyid (sha256 of that DER, hex) names the signer: a receipt edited and signed again shows another.
import { createHash, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';

export interface DsseSignature {
  /** sha256 of the signer's public key (SPKI DER), hex. */
  keyid: string;
  /** The ed25519 signature over PAE(payloadType, payload), base64. */
  sig: string;
  /** The signer's public key, SPKI DER, base64 (a field of ours: DSSE consumers ignore it). */
  publicKey: string;
}

export interface DsseEnvelope {
  payloadType: string;
  /** The signed bytes, base64. */
  payload: string;
  signatures: DsseSignature[];
}

/** One signature as checked: its keyid and whether it verifies (why not, when it does not). */
export interface SignatureCheck {
  keyid: string;
  valid: boolean;
  /** Why it does not verify; null when it does. */
  problem: string | null;
}

/** The pre-authentication encoding: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, lengths in bytes. */
export function pae(payloadType: string, body: Buffer): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([Buffer.from(`DSSEv1 ${type.length} `), type, Buffer.from(` ${body.length} `), body]);
}

/** The keyid of a public key: sha256 of its SPKI DER, hex. */
export function keyidOf(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex');
}

/** Whether `doc` has the shape of a DSSE JSON envelope (payload, payloadType and a signatures array). */
export function isDsseEnvelope(doc: unknown): doc is DsseEnvelope {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) return false;
  const d = doc as Record<string, unknown>;
  return typeof d.payload === 'string' && typeof d.payloadType === 'string' && Array.isArray(d.signatures);
}

/** A signature by `privateKey` (ed25519) over `body` of type `payloadType`. */
export function signDsse(payloadType: string, body: Buffer, privateKey: KeyObject): DsseSignature {
  const publicKey = createPublicKey(privateKey);
  return {
    keyid: keyidOf(publicKey),
    sig: sign(null, pae(payloadType, body), privateKey).toString('base64'),
    publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
  };
}

/** An envelope of `body` signed by each key. */
export function createDsseEnvelope(payloadType: string, body: Buffer, keys: KeyObject[]): DsseEnvelope {
  return { payloadType, payload: body.toString('base64'), signatures: keys.map((k) => signDsse(payloadType, body, k)) };
}

/** The payload's bytes (DSSE allows standard or URL-safe base64; Buffer reads both). */
export function dssePayload(env: DsseEnvelope): Buffer {
  return Buffer.from(env.payload, 'base64');
}

function checkOne(s: unknown, message: Buffer): SignatureCheck {
  const sig = (s ?? {}) as Partial<DsseSignature>;
  const keyid = typeof sig.keyid === 'string' ? sig.keyid : '';
  const bad = (problem: string): SignatureCheck => ({ keyid, valid: false, problem });
  if (typeof sig.sig !== 'string' || typeof sig.publicKey !== 'string') return bad('no sig or publicKey');
  let key: KeyObject;
  try {
    key = createPublicKey({ key: Buffer.from(sig.publicKey, 'base64'), format: 'der', type: 'spki' });
  } catch (err) {
    return bad(`its public key does not parse (${(err as Error).message})`);
  }
  if (key.asymmetricKeyType !== 'ed25519') return bad(`its key is ${key.asymmetricKeyType}, not ed25519`);
  if (keyidOf(key) !== keyid) return bad(`its keyid is not the sha256 of its public key (${keyidOf(key)})`);
  if (!verify(null, message, key, Buffer.from(sig.sig, 'base64'))) return bad('the signature does not match the payload');
  return { keyid, valid: true, problem: null };
}

/** Every signature of `env` checked against its payload and type (an envelope with none has nothing valid). */
export function verifyDsse(env: DsseEnvelope): SignatureCheck[] {
  const message = pae(env.payloadType, dssePayload(env));
  return env.signatures.map((s) => checkOne(s, message));
}
