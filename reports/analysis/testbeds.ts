// Testbeds: a host (salted id, OS, CPU model) with one store filesystem, labelled T1, T2, ... in
// order of each testbed's first receipt, so labels do not depend on the order receipts were given.
import type { ReportReceipt as Receipt } from '../receipts/receipts.js';
import { uniqSorted, type Testbed } from './report-data.js';

/** Which cases count as a testbed: the host's salted id, OS, CPU model and the store filesystem. */
export function testbedKey(r: Receipt): string {
  return JSON.stringify([r.host.hostId, r.host.os, r.host.cpuModel, r.host.storeFs.type]);
}

export function isSyntheticReceipt(r: Receipt): boolean {
  return r.planName.startsWith('synthetic');
}

/** Receipts by start time, then run id. */
export function sortReceipts(receipts: Receipt[]): Receipt[] {
  return [...receipts].sort((a, b) => a.startedAt.localeCompare(b.startedAt) || a.runId.localeCompare(b.runId));
}

/** Testbed labels T1, T2, ... in order of each testbed's first receipt, independent of argument order. */
export function labelTestbeds(receipts: Receipt[]): Map<string, string> {
  const labels = new Map<string, string>();
  for (const r of sortReceipts(receipts)) if (!labels.has(testbedKey(r))) labels.set(testbedKey(r), `T${labels.size + 1}`);
  return labels;
}

/** The testbeds of `ordered` (sorted receipts) with their labels, and the label of each testbed key. */
export function buildTestbeds(ordered: Receipt[], labels: Map<string, string>): { testbedIds: Map<string, string>; testbeds: Testbed[] } {
  const testbedIds = new Map<string, string>();
  for (const r of ordered)
    if (!testbedIds.has(testbedKey(r))) testbedIds.set(testbedKey(r), labels.get(testbedKey(r)) ?? `T?${testbedIds.size + 1}`);
  const testbeds: Testbed[] = [];
  for (const [key, id] of testbedIds) {
    const rs = ordered.filter((r) => testbedKey(r) === key);
    const h = rs[0]!.host;
    const unavailable = new Map<string, string | null>();
    for (const r of rs) for (const b of r.backends) if (!b.available) unavailable.set(b.name, b.reason);
    testbeds.push({
      id,
      hostId: h.hostId.replace(/^sha256:/, '').slice(0, 12),
      os: h.os,
      kernels: uniqSorted(rs.map((r) => r.host.kernel)),
      arch: h.arch,
      cpuModel: h.cpuModel,
      cores: h.cores,
      memoryBytes: h.memoryBytes,
      storeFs: h.storeFs.type,
      receipts: rs.length,
      runIds: rs.map((r) => r.runId),
      planNames: uniqSorted(rs.map((r) => r.planName)),
      synthetic: rs.every(isSyntheticReceipt),
      noGateEvidence: rs.every((r) => !r.gateEvidence.ok),
      loadAverages: rs.flatMap((r) => (r.host.loadAverage ? [r.host.loadAverage] : [])),
      unavailable: [...unavailable].map(([backend, reason]) => ({ backend, reason })).sort((a, b) => a.backend.localeCompare(b.backend)),
      tools: h.tools,
    });
  }
  return { testbedIds, testbeds };
}
