import { PdbError } from '../model/errors.js';
import { fullCopyBackend } from './full-copy.js';
import { reflinkBackend } from './reflink.js';
import { btrfsSnapshotBackend } from './btrfs-snapshot.js';
import { overlayBackend } from './overlay.js';
import { apfsCloneBackend } from './apfs-clone.js';
import { gitWorktreeBackend } from './git-worktree.js';
import { agentfsBackend } from './agentfs/agentfs.js';
import { hardlinkFarmBackend } from './hardlink-farm.js';
import { moduleBackend } from './module.js';
import {
  BACKEND_NAMES,
  type AnyBackendName,
  type Backend,
  type BackendContext,
  type BackendName,
  type ProbeResult,
  type TestBackendName,
} from './types.js';

/**
 * The typed registry: CLI, schemas and reports take backend names from here. Backends not yet
 * implemented on this build report `available: false` with E_BACKEND_UNAVAILABLE rather than
 * being left out, so `pdb-env backends` always lists all seven.
 */
const USER_BACKENDS: Partial<Record<BackendName, Backend>> = {
  'full-copy': fullCopyBackend,
  reflink: reflinkBackend,
  'btrfs-snapshot': btrfsSnapshotBackend,
  overlay: overlayBackend,
  'apfs-clone': apfsCloneBackend,
  'git-worktree': gitWorktreeBackend,
  agentfs: agentfsBackend,
};

const TEST_BACKENDS: Partial<Record<TestBackendName, Backend>> = {
  'hardlink-farm': hardlinkFarmBackend,
};

export function isBackendName(name: string): name is BackendName {
  return (BACKEND_NAMES as readonly string[]).includes(name);
}

/**
 * Look a backend up by name: a built-in one, or one loaded from a module (backends/module.ts).
 * Test-only backends (built in, or a module that says so) are reachable only with `allowTestOnly`.
 */
export function getBackend(name: string, options: { allowTestOnly?: boolean } = {}): Backend {
  if (isBackendName(name)) {
    const b = USER_BACKENDS[name];
    if (b) return b;
    return missingBackend(name);
  }
  const t = TEST_BACKENDS[name as TestBackendName] ?? moduleBackend(name)?.backend;
  if (t && (!t.testOnly || options.allowTestOnly)) return t;
  if (t)
    throw new PdbError('E_BACKEND_UNKNOWN', `"${name}" is a test-only backend (a negative control)`, {
      hint: 'Test-only backends run only in tests and plans with "allowTestOnlyBackends": true, never as evidence.',
    });
  throw new PdbError('E_BACKEND_UNKNOWN', `unknown backend "${name}"`, {
    hint: `Choose one of: ${BACKEND_NAMES.join(', ')}, or load your own with --backend-module FILE.`,
  });
}

export function listBackends(): Backend[] {
  return BACKEND_NAMES.map((n) => getBackend(n));
}

function missingBackend(name: BackendName): Backend {
  return {
    name,
    experimental: name === 'apfs-clone' || name === 'agentfs',
    testOnly: false,
    summary: 'not built into this version',
    capabilities: {
      constantTimeCreate: false,
      sharesExtents: false,
      needsRemount: false,
      carriesFullSnapshot: true,
      securityIsolation: false,
    },
    async probe(): Promise<ProbeResult> {
      return { available: false, reason: 'E_BACKEND_UNAVAILABLE', detail: `${name} is not implemented in this build`, evidence: {} };
    },
    async materializeBase() {
      throw new PdbError('E_BACKEND_UNAVAILABLE', `${name} is not implemented in this build`);
    },
    async createSession() {
      throw new PdbError('E_BACKEND_UNAVAILABLE', `${name} is not implemented in this build`);
    },
    async resume() {},
    async release() {},
  };
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
