// Signed receipts (issue 40): a committed receipt sealed in a DSSE envelope opens to the same
// receipt with its signer; an edit of the signed payload fails its signature; the same edit signed
// again by another key verifies, as another signer; the unsigned copy the hook reads is checked
// against the payload; a receipt written before signing reads as unsigned.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openReceipt, readReceiptFile, receiptEnvelopeText, sealReceipt, signersOf } from '../../../harness/receipt/envelope.js';
import type { Receipt } from '../../../harness/receipt/receipt-types.js';
import { loadSigningKey, SIGNING_KEY_ENV, type SigningKey } from '../../../model/signing/key-store.js';
import { REPO_ROOT } from '../../helpers/index.js';

const COMMITTED = join(REPO_ROOT, 'receipts', 'full-20261203T121559Z-fe5770.json');
const newKey = (): SigningKey =>
  loadSigningKey({
    env: { [SIGNING_KEY_ENV]: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
  });
const K = newKey();
const L = newKey();
const receipt = (): Receipt => readReceiptFile(COMMITTED).document as Receipt;

/** The coordinated edit: half of reflink's fileops create time moved into overheadMs. */
function moveCreateIntoOverhead(r: Receipt): Receipt {
  for (const c of r.cases.filter((x) => x.backend === 'reflink' && x.workload === 'fileops')) {
    const create = c.phases.find((p) => p.name === 'create')!;
    c.overheadMs += create.durationMs / 2;
    create.durationMs /= 2;
  }
  return r;
}

test('a committed receipt, sealed, opens to the same receipt signed by its key; the plain file reads as unsigned', () => {
  const committed = readReceiptFile(COMMITTED);
  assert.equal(committed.problems, []);
  assert.is((signersOf(committed) as string[]).length, 1, 'the committed evidence is signed');
  const dir = mkdtempSync(join(tmpdir(), 'pdb-envelope-'));
  try {
    const plain = join(dir, 'plain.json');
    writeFileSync(plain, JSON.stringify(committed.document, null, 2));
    const legacy = readReceiptFile(plain);
    assert.equal([legacy.signatures, legacy.problems, signersOf(legacy)], [null, [], 'unsigned']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const opened = openReceipt(JSON.parse(receiptEnvelopeText(receipt(), [K])));
  assert.equal(opened.problems, []);
  assert.equal(signersOf(opened), [K.keyid]);
  assert.equal(opened.document, committed.document);
});

test('the envelope is DSSE, and keeps what the before-stop hook reads (kind, startedAt, finishedAt, host id and load) beside it', () => {
  const r = receipt();
  const env = sealReceipt(r, [K]) as unknown as Record<string, any>;
  assert.equal(Object.keys(env).slice(0, 3), ['payloadType', 'payload', 'signatures']);
  assert.is(env.payloadType, 'application/vnd.pdb-env.receipt+json');
  assert.equal(Object.keys(env.signatures[0]).sort(), ['keyid', 'publicKey', 'sig']);
  assert.equal(
    [env.kind, env.startedAt, env.finishedAt, env.host.hostId, env.host.loadAverage],
    [r.kind, r.startedAt, r.finishedAt, r.host.hostId, r.host.loadAverage],
  );
});

test('an edit of a signed receipt fails its signature; signed again by another key it shows that signer', () => {
  const env = sealReceipt(receipt(), [K]);
  const edited = { ...env, payload: Buffer.from(`${JSON.stringify(moveCreateIntoOverhead(receipt()), null, 2)}\n`).toString('base64') };
  const opened = openReceipt(edited);
  assert.match(opened.problems.join('\n'), 'the signature does not match the payload');
  assert.equal(signersOf(opened), []);
  const resigned = openReceipt(sealReceipt(moveCreateIntoOverhead(receipt()), [L]));
  assert.equal(resigned.problems, []);
  assert.equal(signersOf(resigned), [L.keyid], 'a valid signature, by another signer');
  assert.not.equal(L.keyid, K.keyid);
});

test('the unsigned copy beside the payload is held to it: an edited load, start or kind is refused', () => {
  const env = sealReceipt(receipt(), [K]);
  assert.match(openReceipt({ ...env, host: { ...env.host, loadAverage: [0.5, 0.5, 0.5] } }).problems.join(), 'unsigned host');
  assert.match(openReceipt({ ...env, startedAt: '2026-12-01T12:48:00.000Z' }).problems.join(), 'unsigned startedAt');
  assert.match(openReceipt({ ...env, payloadType: 'application/vnd.pdb-env.bench-receipt+json' }).problems.join(), 'payloadType');
  assert.match(openReceipt({ ...env, signatures: [] }).problems.join(), 'no signature');
});

test.run();
