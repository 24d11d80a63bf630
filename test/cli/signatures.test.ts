// Signed receipts through the commands (issue 40): `keys` shows the host's key; `validate` and
// `report` check each envelope and name its signers; a policy's `signers` refuses a receipt signed
// by another key or by none; and the reflink gate cannot be flipped by editing a signed receipt
// (the edit the audit made: half of reflink's fileops create time moved into overheadMs).
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readReceiptFile, receiptEnvelopeText } from '../../harness/receipt/envelope.js';
import type { Receipt } from '../../harness/receipt/receipt-types.js';
import { keyidOf } from '../../model/signing/dsse.js';
import { loadSigningKey, SIGNING_KEY_ENV } from '../../model/signing/key-store.js';
import { cli, cliJson, REPO_ROOT, tempDir } from '../helpers/index.js';

const t = tempDir('pdb-signed-');
test.after(() => t.cleanup());
const pem = () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const K_PEM = pem();
const K = loadSigningKey({ env: { [SIGNING_KEY_ENV]: K_PEM } });
const L = loadSigningKey({ env: { [SIGNING_KEY_ENV]: pem() } });

/** The committed harness receipts (top level of receipts/), as receipts. */
const committed = readdirSync(join(REPO_ROOT, 'receipts'))
  .filter((f) => f.endsWith('.json'))
  .map((f) => ({ name: f, receipt: readReceiptFile(join(REPO_ROOT, 'receipts', f)).document as Receipt }));

function moveCreateIntoOverhead(r: Receipt): Receipt {
  const copy = structuredClone(r);
  for (const c of copy.cases.filter((x) => x.backend === 'reflink' && x.workload === 'fileops')) {
    const create = c.phases.find((p) => p.name === 'create')!;
    c.overheadMs += create.durationMs / 2;
    create.durationMs /= 2;
  }
  // Coordinated, as the audit made it: the summary's overhead shares follow the cases.
  const shares = copy.cases.filter((c) => c.wallMs > 0).map((c) => c.overheadMs / c.wallMs);
  const sorted = [...shares].sort((a, b) => a - b);
  const m = sorted.length >> 1;
  copy.summary.overheadShareMedian = sorted.length % 2 ? sorted[m]! : (sorted[m - 1]! + sorted[m]!) / 2;
  copy.summary.overheadShareMax = Math.max(...shares);
  return copy;
}

/** A folder of the committed receipts, each signed by K; `edit` changes the full-plan ones (signed by `resign`, or keeping K's signature). */
function evidence(name: string, edit?: { resign: typeof L | null; move?: boolean }): string {
  const dir = join(t.dir, name);
  mkdirSync(dir);
  for (const { name: f, receipt } of committed) {
    const signed = receiptEnvelopeText(receipt, [K]);
    if (!edit || !f.startsWith('full-')) writeFileSync(join(dir, f), signed);
    else if (edit.resign)
      writeFileSync(join(dir, f), receiptEnvelopeText(edit.move === false ? receipt : moveCreateIntoOverhead(receipt), [edit.resign]));
    else {
      const env = JSON.parse(signed);
      env.payload = Buffer.from(`${JSON.stringify(moveCreateIntoOverhead(receipt), null, 2)}\n`).toString('base64');
      writeFileSync(join(dir, f), JSON.stringify(env, null, 2));
    }
  }
  return dir;
}

function policy(name: string, signers?: string[]): string {
  const doc = JSON.parse(readFileSync(join(REPO_ROOT, 'policies', 'reflink-linux.json'), 'utf8'));
  delete doc.$schema;
  const file = join(t.dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(signers ? { ...doc, signers } : doc));
  return file;
}

test('keys shows the keyid and public half of the host key (a CI secret when given)', () => {
  const env = { XDG_CONFIG_HOME: join(t.dir, 'config'), [SIGNING_KEY_ENV]: '' };
  const made = cliJson(['keys'], { env });
  assert.match(made.keyid, /^[0-9a-f]{64}$/);
  assert.is(made.file, join(t.dir, 'config', 'pdb-env', 'keys', 'receipt-signing.pem'));
  assert.is(cliJson(['keys'], { env }).keyid, made.keyid, 'the same key on the next use');
  const ci = cli(['keys'], { env: { ...env, [SIGNING_KEY_ENV]: K_PEM } });
  assert.is(ci.code, 0, ci.stderr);
  assert.match(ci.stdout, new RegExp(`^keyid: ${K.keyid}$`, 'm'));
  assert.match(ci.stdout, /^from: PDB_ENV_SIGNING_KEY$/m);
  assert.match(ci.stdout, /BEGIN PUBLIC KEY/);
  assert.is(keyidOf(K.publicKey), K.keyid);
});

test('validate checks the signature and names the signer; an edited signed receipt fails, an unsigned one says so', () => {
  const dir = join(t.dir, 'validate');
  mkdirSync(dir);
  const { receipt } = committed.find((c) => c.name.startsWith('full-'))!;
  writeFileSync(join(dir, 'signed.json'), receiptEnvelopeText(receipt, [K]));
  const env = JSON.parse(receiptEnvelopeText(receipt, [K]));
  env.payload = Buffer.from(JSON.stringify(moveCreateIntoOverhead(receipt))).toString('base64');
  writeFileSync(join(dir, 'edited.json'), JSON.stringify(env));
  const ok = cliJson(['validate', join(dir, 'signed.json')]);
  assert.equal(ok.files[0].signers, [K.keyid]);
  const bad = cli(['validate', join(dir, 'edited.json'), '--json']);
  assert.is(bad.code, 1);
  assert.match(
    JSON.parse(bad.stdout).files[0].problems[0].message,
    /^E_RECEIPT_SIGNATURE: signature [0-9a-f]{16}: the signature does not match the payload/,
  );
  const legacy = cli(['validate', join(REPO_ROOT, 'receipts', 'lanes-blocks-20261201T132431Z-ea3a69.json')]);
  assert.match(legacy.stdout, /^ok .*unsigned\)$/m);
});

test('the reflink gate cannot be flipped by editing a signed receipt: report refuses the edit, and a policy naming K refuses it signed again by L', () => {
  const honest = cli(['report', evidence('honest'), '--policy', policy('k-only', [K.keyid]), '--out', join(t.dir, 'honest-out')]);
  assert.is(honest.code, 0, honest.stderr);
  assert.match(honest.stdout, /^REJECT: reflink under policy reflink-linux$/m, 'the committed evidence, signed by K, rejects reflink');
  const edited = cli(['report', evidence('edited', { resign: null }), '--policy', policy('any')]);
  assert.is(edited.code, 1);
  assert.match(
    edited.stderr,
    /E_RECEIPT_SIGNATURE: (edited\/)?full-[^ ]+\.json fails its signature: signature [0-9a-f]{16}: the signature does not match the payload/,
  );
  // Signed again by another key, the edit is still refused: a version 4 receipt records each
  // phase's start, and validate's replay finds the time moved out of create (the gap rule).
  const resignedEdit = cli(['report', evidence('resigned-edit', { resign: L }), '--policy', policy('any')]);
  assert.is(resignedEdit.code, 1);
  assert.match(
    resignedEdit.stderr,
    /E_RECEIPT_INCONSISTENT: .*full-[^ ]+\.json disagrees with itself or its plan: .*\/phases\/\d+\/startMs/,
  );
  // An honest receipt signed by another key: a policy naming K refuses it; without a signers rule it
  // is read, the listing shows who signed it, and the verdict is the honest one.
  const resigned = evidence('resigned', { resign: L, move: false });
  const refused = cli(['report', resigned, '--policy', policy('k-only', [K.keyid])]);
  assert.is(refused.code, 1);
  assert.match(refused.stderr, new RegExp(`E_RECEIPT_SIGNER: .*full-[^ ]+\\.json is signed by ${L.keyid.slice(0, 16)}`), refused.stderr);
  const listed = cli(['report', resigned, '--policy', policy('any'), '--out', join(t.dir, 'out')]);
  assert.is(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, new RegExp(`full-[^ ]+\\.json: signed by ${L.keyid}`));
  assert.match(listed.stdout, new RegExp(`default-[^ ]+\\.json: signed by ${K.keyid}`));
  assert.match(listed.stdout, /^REJECT: reflink under policy reflink-linux$/m);
  // The written report lists the signers too: a column of its Receipts table, and by run id in report.json.
  const md = readFileSync(join(t.dir, 'out', 'report.md'), 'utf8');
  assert.match(md, /\| signed by \|\n/);
  assert.match(md, new RegExp(`\\| 20261203T121559Z-fe5770 \\|.*\\| ${L.keyid.slice(0, 16)} \\|`));
  const json = JSON.parse(readFileSync(join(t.dir, 'out', 'report.json'), 'utf8'));
  assert.equal(json.signers['20261203T121559Z-fe5770'], [L.keyid]);
});

test('a policy with signers refuses unsigned receipts', () => {
  const r = cli([
    'report',
    join(REPO_ROOT, 'receipts', 'lanes-blocks-20261201T132431Z-ea3a69.json'),
    '--policy',
    policy('k-only', [K.keyid]),
  ]);
  assert.is(r.code, 1);
  assert.match(r.stderr, /E_RECEIPT_SIGNER: .* is unsigned/);
});

test.run();
