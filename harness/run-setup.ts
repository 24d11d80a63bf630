// The start of an attempt: each workload's fixture imported once (the base every case starts from,
// named by workload, version, parameters digest and base Snapshot), and every backend of the plan
// probed once on the run's store.
import { join } from 'node:path';
import { moduleBackend } from '../backends/module.js';
import { getBackend, probeBackend } from '../backends/registry.js';
import { canonicalBytes } from '../model/canonical-json.js';
import type { SessionService } from '../sessions/service.js';
import type { Fixture } from '../workloads/types.js';
import { throwIfInterrupted, type BenchRun, type PreparedWorkload } from './bench-run.js';
import { baseEntryList, type BaseInfo } from './case/case-checks.js';
import { scrubText } from '../model/scrub.js';
import { workloadParams } from './plan/plan.js';
import { resolvePlanVars } from './plan/plan-vars.js';
import { projectResult } from './case/projection.js';
import type { BackendAvailability, FixtureRecord } from './receipt/receipt-types.js';

/** A fixture's version: declared by the workload, else the part of its name after "@" (up to "-" or "+"). */
export function fixtureVersion(fixture: Fixture): string {
  return fixture.version ?? /@([^-+]+)/.exec(fixture.name)?.[1] ?? 'unversioned';
}

export function fixtureRecord(workload: string, fixture: Fixture, params: Record<string, unknown>, base: BaseInfo): FixtureRecord {
  return {
    name: fixture.name,
    workload,
    version: fixtureVersion(fixture),
    paramsDigest: canonicalBytes(params).digest,
    baseSnapshot: base.digest,
  };
}

/** Each workload's fixture and its imported base (one per workload), with the precomputed expectation when it has one. */
export async function prepareWorkloads(run: BenchRun, svc: SessionService): Promise<Map<string, PreparedWorkload>> {
  const prepared = new Map<string, PreparedWorkload>();
  for (const entry of run.plan.workloads) {
    throwIfInterrupted(run);
    const w = run.workloads[entry.name]!;
    const params = workloadParams(w, entry);
    run.progress({ kind: 'note', message: `preparing fixture for ${w.name}` });
    // The placeholders' values reach the fixture only: the recorded parameters (their digest) keep `${NAME}`.
    const fixture = await w.prepareFixture(join(run.workDir, 'fixtures'), resolvePlanVars(params, run.vars), run.proc);
    const imported = await svc.importSource(fixture.sourceDir);
    // The index's rows are the imported Snapshot's entries; its columns are kept, never its entries as objects.
    const base: BaseInfo = { digest: imported.digest, columns: imported.index.cols, excludes: imported.excludes };
    run.progress({ kind: 'note', message: `${w.name}: fixture ${fixture.name} imported, ${base.columns.n} entries` });
    const expected = w.expected ? projectResult(w, params, await w.expected(baseEntryList(base), params)).entries : null;
    prepared.set(w.name, { fixture, fixtureRecord: fixtureRecord(w.name, fixture, params, base), base, expected, params });
  }
  return prepared;
}

/** Every backend of the plan, probed once on the run's store. */
export async function probeBackends(run: BenchRun, svc: SessionService, firstSource: string | undefined): Promise<BackendAvailability[]> {
  const backends: BackendAvailability[] = [];
  for (const name of run.plan.backends) {
    throwIfInterrupted(run);
    const r = await probeBackend(await getBackend(name, { allowTestOnly: run.allowTestOnly }), svc.backendContext(firstSource));
    const evidence: BackendAvailability['evidence'] = {};
    for (const [k, v] of Object.entries(r.evidence)) evidence[k] = typeof v === 'string' ? scrubText(v) : v;
    // Capability claims only for a backend probed available; an unavailable one records its reason alone.
    backends.push({
      name,
      available: r.available,
      reason: r.reason,
      detail: scrubText(r.detail),
      experimental: r.experimental,
      evidence,
      ...(r.available && r.capabilities ? { capabilities: { ...r.capabilities } } : {}),
      // A user's own backend is recorded as such: its module's sha256, never its path.
      ...(moduleBackend(name) ? { module: { digest: moduleBackend(name)!.digest } } : {}),
    });
    run.progress({
      kind: 'note',
      message: `backend ${name}: ${r.available ? 'available' : `unavailable (${r.reason}): ${scrubText(r.detail)}`}`,
    });
  }
  return backends;
}
