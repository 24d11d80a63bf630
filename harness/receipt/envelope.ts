// Receipts as written: a DSSE envelope (model/signing/dsse.ts) whose payload is the receipt's JSON,
// signed by this host's key or CI's (model/signing/key-store.ts). Beside the three DSSE fields the
// file keeps an unsigned copy of kind, startedAt, finishedAt and the host's id and load, so readers
// that only peek (the repository's before-stop hook: overlapping runs, loaded machines) still see
// them; a reader here checks that copy against the signed payload and refuses one that differs.
// A receipt written before signing (plain JSON) still reads, as unsigned.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rename, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  createDsseEnvelope,
  dssePayload,
  isDsseEnvelope,
  verifyDsse,
  type DsseEnvelope,
  type SignatureCheck,
} from '../../model/signing/dsse.js';
import type { SigningKey } from '../../model/signing/key-store.js';

/** The payload type of each kind of receipt. */
export const RECEIPT_PAYLOAD_TYPES = {
  'pdb-env-receipt': 'application/vnd.pdb-env.receipt+json',
  'pdb-env-bench-receipt': 'application/vnd.pdb-env.bench-receipt+json',
} as const;
export type ReceiptKind = keyof typeof RECEIPT_PAYLOAD_TYPES;

/** What of a receipt the envelope repeats, unsigned, for readers that do not open it. */
interface EnvelopeHeader {
  kind: ReceiptKind;
  startedAt: string;
  finishedAt: string;
  host: { hostId: string; loadAverage: number[] | null };
}

export type ReceiptEnvelope = DsseEnvelope & EnvelopeHeader;

interface Sealable {
  kind: ReceiptKind;
  startedAt: string;
  finishedAt: string;
  host: { hostId: string; loadAverage?: number[] | null };
}

function headerOf(doc: Sealable): EnvelopeHeader {
  return {
    kind: doc.kind,
    startedAt: doc.startedAt,
    finishedAt: doc.finishedAt,
    host: { hostId: doc.host.hostId, loadAverage: doc.host.loadAverage ?? null },
  };
}

/** The envelope of `doc` signed by `keys` (the payload is the JSON a plain receipt file held). */
export function sealReceipt(doc: Sealable, keys: SigningKey[]): ReceiptEnvelope {
  const body = Buffer.from(`${JSON.stringify(doc, null, 2)}\n`);
  return {
    ...createDsseEnvelope(
      RECEIPT_PAYLOAD_TYPES[doc.kind],
      body,
      keys.map((k) => k.privateKey),
    ),
    ...headerOf(doc),
  };
}

/** The file text of a sealed receipt. */
export function receiptEnvelopeText(doc: Sealable, keys: SigningKey[]): string {
  return `${JSON.stringify(sealReceipt(doc, keys), null, 2)}\n`;
}

/** Write `doc` sealed by `key` to `file` atomically (a temp file in the same directory, then rename). */
export async function writeSealedReceipt(file: string, doc: Sealable, key: SigningKey): Promise<void> {
  const tmp = join(dirname(file), `.${randomBytes(6).toString('hex')}.tmp`);
  await writeFile(tmp, receiptEnvelopeText(doc, [key]), { flag: 'wx' });
  try {
    await rename(tmp, file);
  } catch (err) {
    await unlink(tmp).catch(() => {}); // rollback: the rename's error is the one to report
    throw err;
  }
}

/** A receipt document as read: its signed content and who signed it. */
export interface OpenedReceipt {
  /** The receipt (the payload of an envelope, or the plain document of an unsigned one). */
  document: unknown;
  /** Null: an unsigned receipt (plain JSON, written before receipts were signed). */
  signatures: SignatureCheck[] | null;
  /** Why the envelope does not hold (a signature that fails, a payload that is not JSON, a header that differs); empty when it does. */
  problems: string[];
}

/** The keyids whose signatures verify; 'unsigned' for a plain receipt. */
export function signersOf(o: OpenedReceipt): string[] | 'unsigned' {
  return o.signatures === null ? 'unsigned' : o.signatures.filter((s) => s.valid).map((s) => s.keyid);
}

function sameHeader(env: Record<string, unknown>, doc: unknown): string[] {
  const kind = (doc as { kind?: unknown } | null)?.kind;
  if (typeof kind !== 'string' || !(kind in RECEIPT_PAYLOAD_TYPES)) return [];
  const signed = headerOf(doc as Sealable) as unknown as Record<string, unknown>;
  const out: string[] = [];
  for (const key of ['kind', 'startedAt', 'finishedAt', 'host'] as const) {
    if (!(key in env)) continue; // another producer's envelope need not repeat anything
    if (JSON.stringify(env[key]) !== JSON.stringify(signed[key]))
      out.push(`its unsigned ${key} (${JSON.stringify(env[key])}) differs from the signed payload's (${JSON.stringify(signed[key])})`);
  }
  return out;
}

/** Open a parsed receipt file: verify an envelope's signatures and return its payload, or take a plain receipt as unsigned. */
export function openReceipt(doc: unknown): OpenedReceipt {
  if (!isDsseEnvelope(doc)) return { document: doc, signatures: null, problems: [] };
  const problems: string[] = [];
  const signatures = verifyDsse(doc);
  if (signatures.length === 0) problems.push('the envelope has no signature');
  for (const s of signatures) if (!s.valid) problems.push(`signature ${s.keyid.slice(0, 16) || '(no keyid)'}: ${s.problem}`);
  let document: unknown = null;
  try {
    document = JSON.parse(dssePayload(doc).toString('utf8'));
  } catch (err) {
    problems.push(`its payload is not JSON: ${(err as Error).message}`);
  }
  const kind = (document as { kind?: unknown } | null)?.kind;
  const expected = typeof kind === 'string' ? RECEIPT_PAYLOAD_TYPES[kind as ReceiptKind] : undefined;
  if (expected !== undefined && doc.payloadType !== expected)
    problems.push(`its payloadType ${doc.payloadType} is not ${expected} (the payload's kind is ${String(kind)})`);
  problems.push(...sameHeader(doc as unknown as Record<string, unknown>, document));
  return { document, signatures, problems };
}

/** Read and open a receipt file (JSON.parse errors are thrown as they are). */
export function readReceiptFile(file: string): OpenedReceipt {
  return openReceipt(JSON.parse(readFileSync(file, 'utf8')));
}
