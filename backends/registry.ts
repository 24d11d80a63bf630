// The registry: a backend by name, from the table (./table.ts) or a user's module (./module.ts),
// with the rules for test-only backends and the typed errors. A built-in backend's module is loaded
// when it is asked for, so naming one loads no other.
import { didYouMeanText } from '../model/did-you-mean.js';
import { PdbError } from '../model/errors.js';
import { moduleBackend } from './module.js';
import { BACKEND_NAMES, backendRow, type AnyBackendName, type BackendName } from './table.js';
import type { Backend, BackendContext, ProbeResult } from './types.js';

export function isBackendName(name: string): name is BackendName {
  const row = backendRow(name);
  return row !== undefined && !row.traits.testOnly;
}

/**
 * Check a backend name before any filesystem work: a built-in one, or one a loaded module declares
 * (backends/module.ts). Test-only backends (built in, or a module that says so) pass only with
 * `allowTestOnly`; anything else is E_BACKEND_UNKNOWN.
 */
export function assertBackendName(name: string, options: { allowTestOnly?: boolean } = {}): void {
  const testOnly = backendRow(name)?.traits.testOnly ?? moduleBackend(name)?.backend.testOnly;
  if (testOnly === undefined)
    throw new PdbError('E_BACKEND_UNKNOWN', `unknown backend "${name}"`, {
      hint: `${didYouMeanText(name, BACKEND_NAMES)}Choose one of: ${BACKEND_NAMES.join(', ')}, or load your own with --backend-module FILE.`,
    });
  if (testOnly && !options.allowTestOnly)
    throw new PdbError('E_BACKEND_UNKNOWN', `"${name}" is a test-only backend (a negative control)`, {
      hint: 'Test-only backends run only in tests and plans with "allowTestOnlyBackends": true, never as evidence.',
    });
}

/** A backend by name (checked as assertBackendName does), its module loaded if it is a built-in one. */
export async function getBackend(name: string, options: { allowTestOnly?: boolean } = {}): Promise<Backend> {
  assertBackendName(name, options);
  return (await backendRow(name)?.load()) ?? moduleBackend(name)!.backend;
}

/** The backends offered to users, in the table's order. */
export async function listBackends(): Promise<Backend[]> {
  return Promise.all(BACKEND_NAMES.map((n) => getBackend(n)));
}

/**
 * One backend as probed here. Declared capabilities are claims, so they are reported only for a
 * backend whose probe found it available; an unavailable one reports its typed reason instead.
 */
export interface BackendReport extends ProbeResult {
  name: AnyBackendName;
  experimental: boolean;
  summary: string;
  /** Declared capabilities; present only when `available` is true. */
  capabilities?: Backend['capabilities'];
  securityIsolation: false;
}

export async function probeBackend(backend: Backend, ctx: BackendContext): Promise<BackendReport> {
  let result: ProbeResult;
  try {
    result = await backend.probe(ctx);
  } catch (err) {
    result = {
      available: false,
      reason: err instanceof PdbError ? err.code : 'E_BACKEND_UNAVAILABLE',
      detail: `probe failed: ${(err as Error).message}`,
      evidence: {},
    };
  }
  const report: BackendReport = {
    name: backend.name,
    available: result.available,
    reason: result.available ? null : (result.reason ?? 'E_BACKEND_UNAVAILABLE'),
    detail: result.detail,
    evidence: result.evidence,
    experimental: backend.experimental,
    summary: backend.summary,
    securityIsolation: false,
  };
  if (result.available) report.capabilities = { ...backend.capabilities };
  return report;
}
