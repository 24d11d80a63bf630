// Trusted signers (issue 52): a policy with requireSigned counts only receipts signed by a key of
// policies/signers.json that is not revoked, for a host and hardware that key may sign for; every
// other receipt is shown with a typed reason and not counted. A receipt copied under another name
// (run id changed) is counted once. `receipt show` prints the payload and who signed it, and
// `keys --signer-entry` prints the row that makes this host trusted.
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseTrustedSigners, trustOf, type TrustedSigner, type TrustedSigners } from '../../harness/receipt/admission.js';
import { readReceiptFile, receiptEnvelopeText } from '../../harness/receipt/envelope.js';
import type { Receipt } from '../../harness/receipt/receipt-types.js';
import { loadSigningKey, SIGNING_KEY_ENV, type SigningKey } from '../../model/signing/key-store.js';
import { cli, cliJson, REPO_ROOT, tempDir } from '../helpers/index.js';

const t = tempDir('pdb-trusted-');
test.after(() => t.cleanup());
const pem = () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const key = (p = pem()): SigningKey & { pem: string } => ({ ...loadSigningKey({ env: { [SIGNING_KEY_ENV]: p } }), pem: p });
const [K, L, M] = [key(), key(), key()];
const FULL = readReceiptFile(join(REPO_ROOT, 'receipts', 'full-20261203T121559Z-fe5770.json')).document as Receipt;
const SMALL = readReceiptFile(join(REPO_ROOT, 'receipts', 'real-agents-20261203T122956Z-4ed07b.json')).document as Receipt;
const FULL_XFS = readReceiptFile(join(REPO_ROOT, 'receipts', 'full-20261203T122257Z-1daced.json')).document as Receipt;

function row(k: SigningKey, over: Partial<TrustedSigner> = {}): TrustedSigner {
  return {
    keyid: k.keyid,
    publicKey: k.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    host: 'dev-a',
    role: 'host',
    hostIds: [FULL.host.hostId],
    hardware: { os: 'linux', arch: 'x64', cpuModel: FULL.host.cpuModel, cores: FULL.host.cores },
    added: '2026-12-05',
    revoked: null,
    ...over,
  };
}

const list = (...signers: TrustedSigner[]): TrustedSigners => ({ kind: 'pdb-env-signers', version: 1, signers });

test('the signers document: schema, keyid against its public key, a key listed once, a host key names its hosts', () => {
  assert.is(parseTrustedSigners(list(row(K), row(L, { host: 'dev-b' }))).signers.length, 2);
  assert.throws(() => parseTrustedSigners(list(row(K, { keyid: L.keyid }))), /E_SIGNERS_INVALID|is not its public key/);
  assert.throws(() => parseTrustedSigners(list(row(K), row(K))), /listed twice/);
  assert.throws(() => parseTrustedSigners(list(row(K, { hostIds: [] }))), /names the host ids/);
  assert.throws(() => parseTrustedSigners({ ...list(row(K)), extra: 1 }), /E_SIGNERS_INVALID|extra/);
  assert.is(parseTrustedSigners(list(row(K, { role: 'ci', hostIds: [] }))).signers[0]!.role, 'ci');
});

test('trust: unsigned, unknown, revoked, another host id, other hardware; a ci key signs any host of its OS and architecture', () => {
  const trusted = list(
    row(K),
    row(L, { host: 'old', revoked: { on: '2026-12-04', reason: 'key left on a shared disk' } }),
    row(M, { host: 'ci', role: 'ci', hostIds: [], hardware: { os: 'linux', arch: 'x64' } }),
  );
  const h = FULL.host;
  assert.is(trustOf([K.keyid], h, trusted).status, 'trusted');
  const code = (s: string[] | 'unsigned', host = h) => {
    const x = trustOf(s, host, trusted);
    return x.status === 'refused' ? x.code : 'trusted';
  };
  assert.is(code('unsigned'), 'E_RECEIPT_UNSIGNED');
  assert.is(code([key().keyid]), 'E_SIGNER_UNKNOWN');
  assert.is(code([L.keyid]), 'E_SIGNER_REVOKED');
  assert.is(code([K.keyid], { ...h, hostId: 'f'.repeat(64) }), 'E_SIGNER_HOST');
  assert.is(code([K.keyid], { ...h, cpuModel: 'Apple M3' }), 'E_SIGNER_HOST', 'a host claiming other hardware');
  assert.is(code([M.keyid], { ...h, hostId: 'e'.repeat(64) }), 'trusted', 'a fresh CI runner is a host of its own');
  assert.is(code([M.keyid], { ...h, arch: 'arm64' }), 'E_SIGNER_HOST');
  assert.match((trustOf([L.keyid], h, trusted) as { reason: string }).reason, 'key left on a shared disk');
});

/** A folder with a policy requiring signatures and its signers.json; receipts are written by the caller. */
function setup(name: string, signers: TrustedSigners): { dir: string; receipts: string; policy: string } {
  const dir = join(t.dir, name);
  const receipts = join(dir, 'receipts');
  mkdirSync(receipts, { recursive: true });
  const doc = JSON.parse(readFileSync(join(REPO_ROOT, 'policies', 'overlay-linux.json'), 'utf8'));
  delete doc.$schema;
  writeFileSync(join(dir, 'policy.json'), JSON.stringify({ ...doc, requireSigned: true, trustedSigners: 'trusted.json' }));
  writeFileSync(join(dir, 'trusted.json'), JSON.stringify(signers));
  return { dir, receipts, policy: join(dir, 'policy.json') };
}

test('requireSigned: a receipt of an unknown or revoked key, or unsigned, is shown and not counted; a trusted one counts', () => {
  const s = setup('require', list(row(K), row(L, { host: 'old', revoked: { on: '2026-12-04', reason: 'lost' } })));
  writeFileSync(join(s.receipts, 'trusted.json'), receiptEnvelopeText(FULL, [K]));
  writeFileSync(join(s.receipts, 'revoked.json'), receiptEnvelopeText(FULL_XFS, [L]));
  const r = cliJson(['report', s.receipts, '--policy', s.policy, '--json']);
  const ignored = Object.fromEntries(r.gate.ignoredReceipts.map((x: { runId: string; reason: string }) => [x.runId, x.reason]));
  assert.match(ignored[FULL_XFS.runId], /^E_SIGNER_REVOKED/);
  assert.is(ignored[FULL.runId], undefined, 'the trusted receipt counts');
  assert.is(r.admission[FULL.runId].trustedHost, 'dev-a');
  assert.is(r.admission[FULL_XFS.runId].counted, false);
  assert.is(r.receipts.length, 2, 'both are shown');
  // The same receipt signed by an unknown key, and plain: left out, named.
  writeFileSync(join(s.receipts, 'revoked.json'), receiptEnvelopeText(FULL_XFS, [key()]));
  const unknown = cliJson(['report', s.receipts, '--policy', s.policy, '--json']);
  assert.match(unknown.gate.ignoredReceipts.find((x: { runId: string }) => x.runId === FULL_XFS.runId).reason, /^E_SIGNER_UNKNOWN/);
  writeFileSync(join(s.receipts, 'revoked.json'), JSON.stringify(FULL_XFS));
  const text = cli(['report', s.receipts, '--policy', s.policy, '--out', join(s.dir, 'out')]);
  assert.is(text.code, 0, text.stderr);
  assert.match(text.stdout, /revoked\.json: unsigned - not counted, E_RECEIPT_UNSIGNED/);
  assert.match(text.stdout, /trusted\.json: signed by [0-9a-f]{64} \(trusted: dev-a\)/);
  assert.match(readFileSync(join(s.dir, 'out', 'report.md'), 'utf8'), 'not counted: E_RECEIPT_UNSIGNED');
  // Without requireSigned the unsigned version 4 receipt counts, and the report says it was admitted unsigned.
  const open = cli(['report', s.receipts, '--policy', join(REPO_ROOT, 'policies', 'reflink-linux.json'), '--out', join(s.dir, 'out2')]);
  assert.match(open.stdout, /admitted unsigned: .*revoked\.json/);
});

test('a receipt under another name with another run id is counted once (E_RECEIPT_DUPLICATE), whichever comes first', () => {
  const s = setup('dup', list(row(K)));
  const copy = structuredClone(FULL_XFS);
  copy.runId = `${FULL_XFS.runId.slice(0, -6)}ffffff`;
  writeFileSync(join(s.receipts, 'a.json'), JSON.stringify(copy));
  writeFileSync(join(s.receipts, 'b.json'), JSON.stringify(FULL_XFS));
  const r = cliJson(['report', s.receipts, '--json']);
  assert.is(r.receipts.length, 1);
  assert.is(r.repeats.length, 1);
  assert.match(r.repeats[0].reason, /timings are .*, to the last digit/);
  // The same measurements shifted a day later are still the same measurements.
  const shifted = structuredClone(copy);
  const day = (iso: string) => new Date(Date.parse(iso) + 86_400_000).toISOString();
  shifted.startedAt = day(shifted.startedAt);
  shifted.finishedAt = day(shifted.finishedAt);
  for (const c of shifted.cases) [c.startedAt, c.finishedAt] = [day(c.startedAt), day(c.finishedAt)];
  writeFileSync(join(s.receipts, 'a.json'), JSON.stringify(shifted));
  const again = cliJson(['report', s.receipts, '--json']);
  assert.is(again.receipts.length, 1, 'shifted in time, still one');
  const text = cli(['report', s.receipts, '--out', join(s.dir, 'out')]);
  assert.match(text.stdout, /not counted, E_RECEIPT_DUPLICATE: .*a\.json repeats/);
});

test('receipt show: the payload and who signed it, named by the trusted signers; a tampered envelope exits 1', () => {
  const s = setup('show', list(row(K, { host: 'dev-show' })));
  const file = join(s.receipts, 'r.json');
  writeFileSync(file, receiptEnvelopeText(SMALL, [K]));
  const j = cliJson(['receipt', 'show', file, '--signers', join(s.dir, 'trusted.json'), '--json']);
  assert.equal(
    [j.kind, j.signed, j.signatures.length, j.signatures[0].valid, j.signatures[0].trusted.host],
    ['pdb-env-receipt', true, 1, true, 'dev-show'],
  );
  assert.is(j.payload.runId, SMALL.runId);
  assert.equal(j.payload, SMALL);
  const text = cli(['receipt', 'show', file, '--signers', join(s.dir, 'trusted.json')]);
  assert.is(text.code, 0, text.stderr);
  assert.match(text.stdout, new RegExp(`signature ${K.keyid}: valid; trusted signer dev-show \\(host\\)`));
  assert.match(text.stdout, `"runId": "${SMALL.runId}"`);
  const env = JSON.parse(readFileSync(file, 'utf8'));
  env.payload = Buffer.from(JSON.stringify({ ...SMALL, seed: 1 })).toString('base64');
  writeFileSync(file, JSON.stringify(env));
  const bad = cli(['receipt', 'show', file, '--signers', join(s.dir, 'trusted.json')]);
  assert.is(bad.code, 1);
  assert.match(bad.stdout, 'INVALID (the signature does not match the payload)');
  writeFileSync(file, JSON.stringify(SMALL));
  assert.match(cli(['receipt', 'show', file]).stdout, 'unsigned (plain JSON');
  writeFileSync(file, '{"kind":"pdb-env-plan"}');
  const notReceipt = cli(['receipt', 'show', file]);
  assert.is(notReceipt.code, 1);
  assert.match(notReceipt.stderr + notReceipt.stdout, 'E_SCHEMA_INVALID');
});

test('keys --signer-entry prints a row that validates and trusts what this key signs on this host', () => {
  const env = { [SIGNING_KEY_ENV]: K.pem };
  const entry = cliJson(['keys', '--signer-entry', '--host', 'dev-test'], { env }) as TrustedSigner;
  assert.is(entry.keyid, K.keyid);
  const doc = parseTrustedSigners(list(entry));
  const here = {
    ...FULL.host,
    hostId: entry.hostIds[0]!,
    cpuModel: entry.hardware.cpuModel!,
    cores: entry.hardware.cores!,
    arch: entry.hardware.arch,
    os: entry.hardware.os,
  };
  assert.is(trustOf([K.keyid], here, doc).status, 'trusted');
  assert.is(cli(['keys', '--signer-entry', '--host', '/etc/passwd'], { env }).code, 2, 'a label that is a path is refused (E_USAGE)');
  const ci = cliJson(['keys', '--signer-entry', '--ci', '--host', 'ci'], { env }) as TrustedSigner;
  assert.equal([ci.role, ci.hostIds], ['ci', []]);
});

test.run();
