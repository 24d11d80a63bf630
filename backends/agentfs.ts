import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { access, constants, stat } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { PdbError } from '../model/errors.js';
import type { Backend, ProbeResult } from './types.js';

/**
 * sha256 of AgentFS CLI releases this adapter has been checked against. Empty: no AgentFS
 * release binary was reachable from the hosts this build was made on (only the npm registry and
 * Debian packages are), so no checksum could be verified and pinned. Any binary found is
 * therefore refused with E_AGENTFS_CHECKSUM; pin a release here after verifying it by hand.
 */
export const PINNED_AGENTFS_SHA256: readonly string[] = [];

export const AGENTFS_BIN_ENV = 'PDB_ENV_AGENTFS_BIN';

/** The agentfs binary: $PDB_ENV_AGENTFS_BIN, else `agentfs` on PATH; null when neither exists. */
export async function locateAgentfs(env: NodeJS.ProcessEnv = process.env): Promise<string | null> {
  const explicit = env[AGENTFS_BIN_ENV];
  if (explicit) return (await isExecutable(explicit)) ? explicit : null;
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, 'agentfs');
    if (await isExecutable(p)) return p;
  }
  return null;
}

async function isExecutable(p: string): Promise<boolean> {
  try {
    await access(p, constants.X_OK);
    return (await stat(p)).isFile();
  } catch {
    return false;
  }
}

async function sha256File(p: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(p)) h.update(chunk as Buffer);
  return h.digest('hex');
}

/** Probe logic with the environment and pinned list injectable, so tests need no real binary. */
export async function probeAgentfs(
  env: NodeJS.ProcessEnv = process.env,
  pinned: readonly string[] = PINNED_AGENTFS_SHA256,
): Promise<ProbeResult> {
  const bin = await locateAgentfs(env);
  if (!bin) {
    return {
      available: false,
      reason: 'E_AGENTFS_MISSING',
      detail: `no agentfs binary (set ${AGENTFS_BIN_ENV} or put agentfs on PATH)`,
      evidence: { found: false, via: env[AGENTFS_BIN_ENV] ? AGENTFS_BIN_ENV : 'PATH' },
    };
  }
  const sha256 = await sha256File(bin);
  if (!pinned.includes(sha256)) {
    return {
      available: false,
      reason: 'E_AGENTFS_CHECKSUM',
      detail:
        pinned.length === 0
          ? 'an agentfs binary was found, but no release checksum is pinned in this build'
          : 'the agentfs binary does not match a pinned release checksum',
      evidence: { found: true, sha256, pinnedCount: pinned.length },
    };
  }
  return { available: true, reason: null, detail: 'agentfs binary matches a pinned checksum', evidence: { found: true, sha256 } };
}

function noAdapter(): never {
  throw new PdbError('E_BACKEND_UNAVAILABLE', 'the agentfs session adapter is not enabled: no AgentFS release is pinned in this build', {
    hint: 'Use another backend; pdb-env backends lists what this host can run.',
  });
}

/** External AgentFS behind a bounded adapter; accepted only with a pinned checksum, never embedded. */
export const agentfsBackend: Backend = {
  name: 'agentfs',
  experimental: true,
  testOnly: false,
  summary: 'external AgentFS binary, checksum-pinned (candidate)',
  capabilities: { constantTimeCreate: true, sharesExtents: true, needsRemount: true, carriesFullSnapshot: true, securityIsolation: false },
  probe: () => probeAgentfs(),
  async materializeBase() {
    noAdapter();
  },
  async createSession() {
    noAdapter();
  },
  async resume() {},
  async release() {},
};
