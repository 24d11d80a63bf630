import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { findPathIssues, pathFreeViolation } from '../../../harness/receipt/path-free.js';
import { scrubText } from '../../../model/scrub.js';
import { assertValidReceipt, summarize, writeReceipt } from '../../../harness/receipt/receipt.js';
import type { CaseRecord, Receipt } from '../../../harness/receipt/receipt-types.js';
import { isPdbError } from '../../../model/errors.js';
import { cli, tempDir } from '../../helpers/index.js';

const NAMES = { userNames: ['alice'], hostNames: ['build-box-17'] };
const DIGEST = `sha256:${'ab'.repeat(32)}` as const;

function caseRecord(): CaseRecord {
  return {
    id: 'b0-p0',
    block: 0,
    position: 0,
    warmup: false,
    backend: 'full-copy',
    workload: 'fileops',
    startedAt: '2026-11-30T01:02:04.000Z',
    finishedAt: '2026-11-30T01:02:04.020Z',
    fixture: { name: 'fileops@1-10f-1m', workload: 'fileops', version: '1', paramsDigest: DIGEST, baseSnapshot: DIGEST },
    outcome: 'ok',
    failure: null,
    failures: [],
    phases: [
      {
        name: 'create',
        outcome: 'ok',
        durationMs: 12.5,
        exitCode: null,
        cpuUserMs: null,
        cpuSystemMs: null,
        peakRssBytes: null,
        timeoutMs: null,
        milestones: {},
      },
    ],
    checks: [{ name: 'expected', passed: true, evaluated: true, mismatches: 0, counts: null, paths: [], reference: null, detail: null }],
    diskBytes: 4096,
    cloneObserved: null,
    resultSnapshot: DIGEST,
    oracleSnapshot: DIGEST,
    wallMs: 20,
    overheadMs: 7.5,
    metrics: {},
  };
}

function receipt(): Receipt {
  const cases = [caseRecord()];
  return {
    schemaVersion: 2,
    kind: 'pdb-env-receipt',
    tool: { name: 'pdb-env', version: '0.1.0' },
    provenance: { commit: 'abcdef1'.padEnd(40, '0'), dirty: false, changedDuringRun: false },
    runId: '20261130T010203Z-abc123',
    planName: 'unit',
    planDigest: DIGEST,
    seed: 1,
    startedAt: '2026-11-30T01:02:03.000Z',
    finishedAt: '2026-11-30T01:03:03.000Z',
    host: {
      hostId: 'cd'.repeat(32),
      hostIdSource: 'machine-id',
      os: 'linux',
      kernel: '6.1.0',
      arch: 'x64',
      cpuModel: 'Some CPU',
      cores: 2,
      memoryBytes: 1024,
      loadAverage: [0.5, 0.4, 0.3],
      storeFs: { type: 'ext4', mountOptions: ['rw', 'relatime'] },
      tools: { node: '20.0.0', npm: null },
    },
    backends: [
      {
        name: 'full-copy',
        available: true,
        reason: null,
        detail: 'always available',
        experimental: false,
        evidence: { method: 'userspace read/write' },
        capabilities: {
          constantTimeCreate: false,
          sharesExtents: false,
          needsRemount: false,
          carriesFullSnapshot: true,
          securityIsolation: false,
        },
      },
    ],
    blocks: [{ index: 0, workload: 'fileops', warmup: false, order: ['full-copy'] }],
    cases,
    summary: summarize(cases, 1, 0),
  };
}

const rejects = (r: unknown, code: string) => {
  try {
    assertValidReceipt(r, NAMES);
  } catch (err) {
    assert.ok(isPdbError(err), 'a PdbError');
    assert.is((err as { code: string }).code, code);
    return (err as Error).message;
  }
  assert.unreachable(`expected ${code}`);
  return '';
};

test('a well-formed receipt passes schema and path-free checks', () => {
  assertValidReceipt(receipt(), NAMES);
});

test('an injected absolute path is caught, with its JSON pointer', () => {
  for (const leak of [
    '/tmp/pdb-bench-x/store',
    'failed at /home/alice/src',
    '/root',
    'see /work/main/x',
    '/mnt/btrfs',
    'C:\\Users\\x',
    'file:///etc/passwd',
    '/Users/bob/repo',
  ]) {
    const r = receipt();
    r.cases[0]!.failure = { code: 'E_IO', phase: 'create', message: leak };
    const msg = rejects(r, 'E_RECEIPT_NOT_PATH_FREE');
    assert.match(msg, '/cases/0/failure/message', `pointer named for ${leak}`);
  }
});

test('user and host names are caught anywhere, keys included; generic words are not', () => {
  const r = receipt();
  r.cases[0]!.metrics = { agent: 'run by alice' };
  assert.match(rejects(r, 'E_RECEIPT_NOT_PATH_FREE'), 'user name');
  const k = receipt();
  k.host.tools = { 'build-box-17': '1.0' };
  assert.match(rejects(k, 'E_RECEIPT_NOT_PATH_FREE'), 'host name');
  assert.is(pathFreeViolation('mount needs root; session root removed', { userNames: ['root'], hostNames: ['vm'] }), null);
  assert.is(pathFreeViolation('vmlinuz and relative/paths and 1/2 and application/json', { userNames: [], hostNames: ['vm'] }), null);
  assert.ok(pathFreeViolation('host vm is slow', { userNames: [], hostNames: ['vm'] }));
});

test('an extra property anywhere is rejected by the schema (strict, additionalProperties false)', () => {
  const r = receipt() as unknown as Record<string, unknown>;
  r.extra = 1;
  assert.match(rejects(r, 'E_SCHEMA_INVALID'), '/extra');
  const c = receipt();
  (c.cases[0]!.phases[0] as unknown as Record<string, unknown>).wallClock = 3;
  assert.match(rejects(c, 'E_SCHEMA_INVALID'), '/cases/0/phases/0/wallClock');
  const m = receipt();
  (m.summary as unknown as Record<string, unknown>).ok = 'yes';
  assert.match(rejects(m, 'E_SCHEMA_INVALID'), '/summary/ok');
});

test('a receipt that fails validation is not written', async () => {
  const t = tempDir();
  try {
    const file = join(t.dir, 'r.json');
    const bad = receipt();
    bad.backends[0]!.detail = 'probe dir /tmp/x';
    await writeReceipt(file, bad, NAMES).then(
      () => assert.unreachable('must throw'),
      (err) => assert.is(err.code, 'E_RECEIPT_NOT_PATH_FREE'),
    );
    assert.not.ok(existsSync(file));
    await writeReceipt(file, receipt(), NAMES);
    assert.ok(existsSync(file));
  } finally {
    t.cleanup();
  }
});

test('scrubText makes messages path-free', () => {
  const s = scrubText('EACCES: permission denied, open /tmp/pdb-x/store/a.txt by alice on build-box-17', NAMES);
  assert.is(findPathIssues(s, NAMES).length, 0, s);
  assert.match(s, '<path>');
});

test('pdb-env validate names the failing pointer and exits 1; accepts a good receipt', () => {
  const t = tempDir();
  try {
    const good = join(t.dir, 'good.json');
    writeFileSync(good, JSON.stringify(receipt()));
    const ok = cli(['validate', good]);
    assert.is(ok.code, 0, ok.stdout + ok.stderr);
    const r = receipt();
    r.cases[0]!.failure = { code: 'E_IO', phase: 'create', message: 'at /tmp/abc/def' };
    (r as unknown as Record<string, unknown>).bogus = true;
    const bad = join(t.dir, 'bad.json');
    writeFileSync(bad, JSON.stringify(r));
    const out = cli(['validate', bad, '--json']);
    assert.is(out.code, 1);
    const doc = JSON.parse(out.stdout) as { valid: boolean; files: Array<{ problems: Array<{ pointer: string; message: string }> }> };
    assert.is(doc.valid, false);
    const pointers = doc.files[0]!.problems.map((p) => p.pointer);
    assert.ok(pointers.includes('/bogus'), pointers.join(' '));
    assert.ok(pointers.includes('/cases/0/failure/message'), pointers.join(' '));
    const plan = cli(['validate', 'plans/default.json']);
    assert.is(plan.code, 0, plan.stdout + plan.stderr);
    // Receipts of schema version 1 (written before provenance) still validate, as version 1.
    const legacy = cli(['validate', 'test/fixtures/receipts-v1/synthetic-host-a.json']);
    assert.is(legacy.code, 0, legacy.stdout + legacy.stderr);
    const v1 = receipt() as unknown as Record<string, unknown>;
    v1.schemaVersion = 1;
    writeFileSync(bad, JSON.stringify(v1));
    const mixed = cli(['validate', bad, '--json']);
    assert.is(mixed.code, 1, 'a version 2 body claiming version 1 is checked against version 1');
    assert.ok(JSON.parse(mixed.stdout).files[0].problems.some((p: { pointer: string }) => p.pointer === '/provenance'));
  } finally {
    t.cleanup();
  }
});

test('JSON of any depth is a typed answer: the path-free walk does not recurse, and validate refuses a too-deep document of every kind (issue 41)', () => {
  let deep: unknown = '/tmp/leak';
  for (let i = 0; i < 100_000; i++) deep = i % 2 ? [deep] : { k: deep };
  const issues = findPathIssues(deep, NAMES);
  assert.is(issues.length, 1);
  assert.match(issues[0]!.pointer, /^\/0\/k\/0\/k/);
  const t = tempDir();
  try {
    const nest = (n: number) => '['.repeat(n) + ']'.repeat(n);
    const kinds = ['pdb-env-receipt', 'pdb-env-plan', 'pdb-env-cassette', 'pdb-env-policy'];
    for (const kind of kinds) {
      const file = join(t.dir, `${kind}.json`);
      writeFileSync(file, `{"kind":"${kind}","extra":${nest(5000)}}`);
      const r = cli(['validate', file, '--json']);
      assert.is(r.code, 1, `${kind}: ${r.stdout}${r.stderr}`);
      assert.not.match(r.stdout + r.stderr, 'E_INTERNAL', kind);
      assert.match(r.stdout, /nested deeper than/, kind);
    }
    const report = cli(['report', join(t.dir, 'pdb-env-receipt.json'), '--out', join(t.dir, 'out')]);
    assert.is(report.code, 1, report.stdout + report.stderr);
    assert.not.match(report.stderr, 'E_INTERNAL');
  } finally {
    t.cleanup();
  }
});

test.run();
