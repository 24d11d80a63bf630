// No unverified claims: `pdb-env backends --json` and receipts carry declared capabilities only for
// backends probed available; agentfs, unavailable on this host (and with the STAND-IN pinned too),
// reports its typed reason and no capabilities. Runs the built CLI, as users do.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AGENTFS_BIN_ENV, AGENTFS_CONFIG_FILE, AGENTFS_SHA256_ENV } from '../../../backends/agentfs/pin.js';
import type { Receipt } from '../../../harness/receipt/receipt-types.js';
import { validateAgainst } from '../../../model/schemas.js';
import { cli, tempDir } from '../../helpers/index.js';
import { STAND_IN, sha256Of, standInEnv } from '../../helpers/agentfs-stand-in.js';
import { readReceiptFile } from '../../../harness/receipt/envelope.js';

const t = tempDir('pdb-agentfs-report-');
test.after(() => t.cleanup());

interface Listed {
  name: string;
  available: boolean;
  reason: string | null;
  evidence: Record<string, unknown>;
  capabilities?: Record<string, boolean>;
}

/** This host without AgentFS: no AgentFS variables, and PATH without a directory holding an agentfs. */
function hostEnv(): Record<string, string> {
  const path = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((d) => d && !existsSync(join(d, 'agentfs')))
    .join(delimiter);
  const env: Record<string, string> = { PATH: path };
  for (const k of [AGENTFS_BIN_ENV, AGENTFS_SHA256_ENV]) env[k] = '';
  return env;
}

function listBackends(store: string, env: Record<string, string>): Listed[] {
  const r = cli(['backends', '--json', '--store', store], { env });
  assert.is(r.code, 0, r.stdout + r.stderr);
  return (JSON.parse(r.stdout) as { backends: Listed[] }).backends;
}

function assertNoClaimsWhenUnavailable(backends: { name: string; available: boolean; capabilities?: unknown }[]): void {
  for (const b of backends) {
    if (b.available) assert.ok(b.capabilities, `${b.name} is available and declares its capabilities`);
    else assert.not.ok('capabilities' in b, `${b.name} is unavailable and claims nothing`);
  }
}

test('backends --json: agentfs is unavailable with E_AGENTFS_MISSING and no capabilities; available backends keep theirs', () => {
  const backends = listBackends(join(t.dir, 'store-plain'), hostEnv());
  const agentfs = backends.find((b) => b.name === 'agentfs')!;
  assert.equal([agentfs.available, agentfs.reason], [false, 'E_AGENTFS_MISSING']);
  assert.not.ok('capabilities' in agentfs);
  assert.ok(backends.find((b) => b.name === 'full-copy')?.capabilities, 'full-copy is available everywhere');
  assertNoClaimsWhenUnavailable(backends);
});

test('backends --json with the stand-in pinned (variable or store file): still unavailable, E_AGENTFS_PROBE or E_AGENTFS_CHECKSUM', () => {
  const pinned = { ...hostEnv(), ...(standInEnv('ok') as Record<string, string>), [AGENTFS_BIN_ENV]: STAND_IN };
  const viaEnv = listBackends(join(t.dir, 'store-env'), { ...pinned, [AGENTFS_SHA256_ENV]: sha256Of(STAND_IN) });
  const a = viaEnv.find((b) => b.name === 'agentfs')!;
  assert.equal([a.available, a.reason, a.evidence.step], [false, 'E_AGENTFS_PROBE', 'mount']);
  assert.not.ok('capabilities' in a);

  // A store made by a create (backends, read-only, makes none: issue 41), then pinned by its file.
  const store = join(t.dir, 'store-file');
  const src = join(t.dir, 'src-file');
  mkdirSync(src);
  writeFileSync(join(src, 'a.txt'), 'a');
  const made = cli(['create', 'x', '--from', src, '--store', store], { env: hostEnv() });
  assert.is(made.code, 0, made.stdout + made.stderr);
  writeFileSync(join(store, AGENTFS_CONFIG_FILE), JSON.stringify({ sha256: '0'.repeat(64) }));
  const viaFile = listBackends(store, { ...pinned, [AGENTFS_SHA256_ENV]: '' });
  const b = viaFile.find((x) => x.name === 'agentfs')!;
  assert.equal([b.reason, b.evidence.checksum, b.evidence.pinnedBy], ['E_AGENTFS_CHECKSUM', 'mismatch', 'store-config']);
  assert.not.ok('capabilities' in b);
});

test('a quick bench: the receipt records capabilities for full-copy and only the reason for agentfs, and the schema holds it to that', () => {
  const plan = {
    kind: 'pdb-env-plan',
    name: 'agentfs-claims',
    backends: ['full-copy', 'agentfs'],
    workloads: [{ name: 'two-agent', params: { nestedFiles: 2 } }],
    blocks: 1,
    warmupBlocks: 0,
    seed: 7,
    caseTimeoutMs: 60_000,
  };
  const planFile = join(t.dir, 'plan.json');
  writeFileSync(planFile, JSON.stringify(plan));
  const out = join(t.dir, 'out');
  mkdirSync(join(t.dir, 'bench-store'));
  const r = cli(['bench', '--plan', planFile, '--out', out, '--store', join(t.dir, 'bench-store')], { env: hostEnv() });
  assert.is(r.code, 0, r.stdout + r.stderr);
  const file = readdirSync(out).find((f) => f.endsWith('.json'))!;
  const receipt = readReceiptFile(join(out, file)).document as Receipt;
  const agentfs = receipt.backends.find((b) => b.name === 'agentfs')!;
  assert.equal([agentfs.available, agentfs.reason], [false, 'E_AGENTFS_MISSING']);
  assert.not.ok('capabilities' in agentfs);
  assert.ok(receipt.backends.find((b) => b.name === 'full-copy')?.capabilities);
  assertNoClaimsWhenUnavailable(receipt.backends);
  assert.equal(validateAgainst('receipt', receipt), []);
  // The schema refuses a claim for an unavailable backend, and an available backend without its capabilities.
  const claimed = structuredClone(receipt);
  claimed.backends.find((b) => b.name === 'agentfs')!.capabilities = receipt.backends.find((b) => b.name === 'full-copy')!.capabilities;
  assert.ok(validateAgainst('receipt', claimed).some((i) => i.pointer.startsWith('/backends/')));
  const unclaimed = structuredClone(receipt);
  delete unclaimed.backends.find((b) => b.name === 'full-copy')!.capabilities;
  assert.ok(validateAgainst('receipt', unclaimed).some((i) => /capabilities/.test(i.message)));
});

test.run();
