// Builds synthetic receipts for report tests. Every receipt made here has a planName starting with
// "synthetic-", which the report marks and every shipped policy ignores: these are not evidence.
// They are schema version 2 with a clean provenance unless asked otherwise; legacyReceipt() turns
// one into the version 1 shape the committed pre-provenance receipts have.
import { createHash } from 'node:crypto';
import type { CaseRecord, CheckRecord, PhaseRecord, Provenance, Receipt, ReceiptV1 } from '../../harness/receipt/receipt-types.js';
import { createRandom } from '../../reports/analysis/statistics.js';
import { summarize } from '../../harness/receipt/receipt.js';

/** A stable fake digest derived from a label. */
export function fakeDigest(label: string): `sha256:${string}` {
  return `sha256:${createHash('sha256').update(label).digest('hex')}`;
}

export const CLEAN: Provenance = { commit: 'c'.repeat(40), dirty: false, changedDuringRun: false };

/** A passed check of the version 2 shape. */
export function passedCheck(name: string, reference: CheckRecord['reference'] = null): CheckRecord {
  const check: CheckRecord = { name, passed: true, evaluated: true, mismatches: 0, counts: null, paths: [], reference, detail: null };
  // An oracle check of schema version 3: both sides' files counted and hashed, its scope named.
  if (name === 'oracle')
    Object.assign(check, { files: { case: 40, reference: 40 }, filesHashed: { case: 40, reference: 40 }, scope: ['source'] });
  return check;
}

export interface SyntheticOptions {
  /** yyyymmddThhmmssZ-xxxxxx, as the harness writes it. */
  runId: string;
  hostId?: string;
  os?: string;
  kernel?: string;
  cpuModel?: string;
  storeFs?: string;
  startedAt?: string;
  backends?: string[];
  workloads?: string[];
  fixtures?: Record<string, string>;
  blocks?: number;
  warmupBlocks?: number;
  seed?: number;
  /** Median create time (ms) per backend; other phases scale from it. */
  createMs?: Record<string, number>;
  /** Multiplicative noise (log-normal sigma). */
  noise?: number;
  /** Edit a case after it is built. */
  mutate?: (c: CaseRecord) => void;
  unavailable?: { name: string; reason: string }[];
  /** The checkout the run ran (default: a clean commit). */
  provenance?: Provenance;
}

// Long on purpose: one literal receipt, field by field, reads better than pieces assembled elsewhere.
export function syntheticReceipt(o: SyntheticOptions): Receipt {
  const backends = o.backends ?? ['full-copy', 'reflink'];
  const workloads = o.workloads ?? ['fileops'];
  const blocks = o.blocks ?? 12;
  const warmup = o.warmupBlocks ?? 1;
  const random = createRandom(o.seed ?? 1);
  const createMs = o.createMs ?? { 'full-copy': 400, reflink: 80 };
  const sigma = o.noise ?? 0.08;
  const gauss = (): number => {
    const u = Math.max(random(), 1e-12);
    const v = random();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  };
  const jitter = (x: number): number => x * Math.exp(sigma * gauss());
  const cases: CaseRecord[] = [];
  // Cases start one after the other from the run's start, each taking its wall time.
  let clock = Date.parse(o.startedAt ?? '2026-01-01T00:00:00.000Z');
  const blockRecords: Receipt['blocks'] = [];
  let index = 0;
  for (const workload of workloads) {
    for (let b = 0; b < blocks; b++) {
      // Unavailable backends keep their slot in the block order, as the harness schedules them, but get no case.
      const skipped = (o.unavailable ?? []).map((u) => u.name);
      const order = [...backends, ...skipped].sort(() => random() - 0.5);
      const isWarm = b < warmup;
      blockRecords.push({ index, workload, warmup: isWarm, order });
      const oracleCase = `b${index}-p${order.indexOf('full-copy')}`;
      const fixtureName = o.fixtures?.[workload] ?? `${workload}-small@1`;
      order.forEach((backend, position) => {
        if (skipped.includes(backend)) return;
        const base = createMs[backend] ?? 300;
        const phase = (name: string, ms: number): PhaseRecord => ({
          name,
          outcome: 'ok',
          durationMs: Math.round(jitter(ms) * 1000) / 1000,
          exitCode: name.startsWith('step:') ? 0 : null,
          cpuUserMs: null,
          cpuSystemMs: null,
          peakRssBytes: null,
          timeoutMs: null,
          milestones: {},
        });
        const phases = [
          phase('create', isWarm ? base * 2.5 : base),
          phase('step:edit', 120),
          phase('checkpoint', 200),
          phase('discard', base / 4),
        ];
        const sum = phases.reduce((s, p) => s + p.durationMs, 0);
        const c: CaseRecord = {
          id: `b${index}-p${position}`,
          block: index,
          position,
          warmup: isWarm,
          backend,
          workload,
          startedAt: new Date(clock).toISOString(),
          finishedAt: new Date(clock + sum + 5).toISOString(),
          fixture: {
            name: fixtureName,
            workload,
            version: '1',
            paramsDigest: fakeDigest(`params ${fixtureName}`),
            baseSnapshot: fakeDigest(`base ${fixtureName}`),
          },
          outcome: 'ok',
          failure: null,
          failures: [],
          phases,
          checks: [
            ...(backend === 'full-copy' ? [] : [passedCheck('oracle', { backend: 'full-copy', caseId: oracleCase })]),
            passedCheck('base-unchanged'),
          ],
          diskBytes: backend === 'full-copy' ? 4_000_000 : 40_000,
          cloneObserved: backend === 'reflink' || backend === 'apfs-clone' ? true : null,
          resultSnapshot: null,
          oracleSnapshot: null,
          wallMs: Math.round((sum + 5) * 1000) / 1000,
          overheadMs: 5,
          metrics: {},
        };
        clock += Math.ceil(sum + 5);
        o.mutate?.(c);
        cases.push(c);
      });
      index++;
    }
  }
  return {
    schemaVersion: 3,
    kind: 'pdb-env-receipt',
    tool: { name: 'pdb-env', version: '0.1.0' },
    provenance: o.provenance ?? CLEAN,
    runId: o.runId,
    planName: 'synthetic-report-test',
    planDigest: `sha256:${'0'.repeat(64)}`,
    seed: o.seed ?? 1,
    startedAt: o.startedAt ?? '2026-01-01T00:00:00.000Z',
    finishedAt: new Date(Date.parse(o.startedAt ?? '2026-01-01T00:00:00.000Z') + 600_000).toISOString(),
    host: {
      hostId: o.hostId ?? 'a'.repeat(64),
      hostIdSource: 'machine-id',
      os: o.os ?? 'linux',
      kernel: o.kernel ?? '6.1.0-synthetic',
      arch: 'x64',
      cpuModel: o.cpuModel ?? 'Synthetic CPU A',
      cores: 2,
      memoryBytes: 24 * 2 ** 30,
      loadAverage: [0.1, 0.2, 0.3],
      storeFs: { type: o.storeFs ?? 'btrfs', mountOptions: ['rw'] },
      tools: { node: '20.20.2', npm: '11.19.1', git: null, pnpm: null },
    },
    backends: [
      ...backends.map((name) => ({
        name,
        available: true,
        reason: null,
        detail: 'synthetic',
        experimental: false,
        evidence: {},
        capabilities: CAPS,
      })),
      ...(o.unavailable ?? []).map((u) => ({
        name: u.name,
        available: false,
        reason: u.reason,
        detail: 'synthetic',
        experimental: false,
        evidence: {},
        capabilities: CAPS,
      })),
    ],
    blocks: blockRecords,
    cases,
    // Counted as the harness counts them (a receipt's derived fields must follow from its cases).
    summary: summarize(
      cases,
      blockRecords.reduce((n, b) => n + b.order.length, 0),
      (o.unavailable ?? []).length * blockRecords.length,
    ),
  };
}

const CAPS = {
  constantTimeCreate: false,
  sharesExtents: false,
  needsRemount: false,
  carriesFullSnapshot: true,
  securityIsolation: false,
} as const;

/** The same receipt in the version 1 shape: no provenance, the fixture as a name, first failure only, count-only checks. */
export function legacyReceipt(r: Receipt, commit: string | null = null): ReceiptV1 {
  const { provenance: _p, summary, ...rest } = r;
  return {
    ...rest,
    schemaVersion: 1,
    tool: { ...r.tool, commit },
    host: (({ hostIdSource: _s, loadAverage: _l, ...h }) => h)(r.host),
    cases: r.cases.map(({ startedAt: _a, finishedAt: _b, failures: _f, ...c }) => ({
      ...c,
      fixture: c.fixture.name,
      outcome: c.outcome === 'mismatch' ? 'failed' : c.outcome === 'environment' ? 'failed' : c.outcome,
      checks: c.checks.map((k) => ({ name: k.name, passed: k.passed, mismatches: k.counts, detail: k.detail })),
    })),
    summary: {
      planned: summary.planned,
      ok: summary.ok,
      failed: summary.failed + summary.mismatch + summary.environment,
      timeout: summary.timeout,
      unavailable: summary.unavailable,
      oracleMismatches: summary.oracleMismatches,
      overheadShareMedian: summary.overheadShareMedian,
      overheadShareMax: summary.overheadShareMax,
    },
  };
}
