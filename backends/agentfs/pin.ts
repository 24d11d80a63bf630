// Which AgentFS binary may run: found through PDB_ENV_AGENTFS_BIN or PATH, and accepted only when
// its sha256 equals the value a person pinned (PDB_ENV_AGENTFS_SHA256, else <store>/agentfs.json,
// schemas/agentfs-config.schema.json). No build of pdb-env pins a release: none was reachable
// from the hosts it was built on, and the design record rejects AgentFS 0.6.4 on the tested profile.
import { createReadStream } from 'node:fs';
import { access, constants, readFile, stat } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { osErrorCode } from '../../model/errors.js';
import { nodeCrypto } from '../../model/os/hash.js';
import type { ProbeResult } from '../types.js';

export const AGENTFS_BIN_ENV = 'PDB_ENV_AGENTFS_BIN';
export const AGENTFS_SHA256_ENV = 'PDB_ENV_AGENTFS_SHA256';
/** The store's AgentFS pin, at the store root: `{"sha256": "<64 lowercase hex>"}`. */
export const AGENTFS_CONFIG_FILE = 'agentfs.json';

/** Where a pin came from, as probe evidence records it. */
export type PinSource = 'PDB_ENV_AGENTFS_SHA256' | 'store-config';

export type Pin =
  { kind: 'pinned'; sha256: string; source: PinSource } | { kind: 'missing' } | { kind: 'invalid'; source: PinSource; detail: string };

/** A binary whose bytes matched the pin when it was checked. Only verifyAgentfsBinary makes one. */
export interface VerifiedBinary {
  path: string;
  sha256: string;
  /** How it was found. */
  via: 'PDB_ENV_AGENTFS_BIN' | 'PATH';
  pinnedBy: PinSource;
}

async function isExecutableFile(p: string): Promise<boolean> {
  try {
    await access(p, constants.X_OK);
    return (await stat(p)).isFile();
  } catch {
    return false; // missing, not executable or unreadable: not a binary we can run
  }
}

/** The agentfs binary: $PDB_ENV_AGENTFS_BIN, else `agentfs` on PATH; null when neither exists. */
export async function locateAgentfs(env: NodeJS.ProcessEnv): Promise<{ path: string; via: VerifiedBinary['via'] } | null> {
  const explicit = env[AGENTFS_BIN_ENV];
  if (explicit) return (await isExecutableFile(explicit)) ? { path: explicit, via: 'PDB_ENV_AGENTFS_BIN' } : null;
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, 'agentfs');
    if (await isExecutableFile(p)) return { path: p, via: 'PATH' };
  }
  return null;
}

export async function sha256File(p: string): Promise<string> {
  const h = nodeCrypto().createHash('sha256');
  for await (const chunk of createReadStream(p)) h.update(chunk as Buffer);
  return h.digest('hex');
}

async function checkPin(doc: unknown, source: PinSource, what: string): Promise<Pin> {
  // Loaded on use: `pdb-env list` loads the backend registry and must not load ajv (test/cli/program.test.ts).
  const { formatIssues, validateAgainst } = await import('../../model/schemas.js');
  const issues = validateAgainst('agentfs-config', doc);
  if (issues.length)
    return { kind: 'invalid', source, detail: `${what} does not match schemas/agentfs-config.schema.json: ${formatIssues(issues)}` };
  return { kind: 'pinned', sha256: (doc as { sha256: string }).sha256, source };
}

/** The pinned sha256: PDB_ENV_AGENTFS_SHA256 when set (sha256sum's hex, surrounding space ignored), else <store>/agentfs.json. */
export async function readPin(env: NodeJS.ProcessEnv, storeRoot: string): Promise<Pin> {
  const fromEnv = env[AGENTFS_SHA256_ENV];
  if (fromEnv !== undefined && fromEnv.trim() !== '')
    return checkPin({ sha256: fromEnv.trim().toLowerCase() }, AGENTFS_SHA256_ENV, AGENTFS_SHA256_ENV);
  const file = join(storeRoot, AGENTFS_CONFIG_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if (osErrorCode(err) === 'ENOENT') return { kind: 'missing' };
    throw err;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return { kind: 'invalid', source: 'store-config', detail: `${file} is not valid JSON: ${(err as Error).message}` };
  }
  return checkPin(doc, 'store-config', file);
}

const PIN_HINT = `Check the release yourself, then pin it: ${AGENTFS_SHA256_ENV}=<sha256sum of the binary>, or {"sha256": "..."} in <store>/${AGENTFS_CONFIG_FILE}.`;

/** Find the binary and hold it to the pin. Unavailable results carry E_AGENTFS_MISSING or E_AGENTFS_CHECKSUM and say which check failed. */
export async function verifyAgentfsBinary(
  env: NodeJS.ProcessEnv,
  storeRoot: string,
): Promise<{ ok: true; binary: VerifiedBinary } | { ok: false; probe: ProbeResult; hint: string }> {
  const found = await locateAgentfs(env);
  if (!found) {
    return {
      ok: false,
      hint: `Install the AgentFS CLI and set ${AGENTFS_BIN_ENV} or put agentfs on PATH; then pin its sha256.`,
      probe: {
        available: false,
        reason: 'E_AGENTFS_MISSING',
        detail: `no agentfs binary (set ${AGENTFS_BIN_ENV} or put agentfs on PATH)`,
        evidence: { found: false, via: env[AGENTFS_BIN_ENV] ? AGENTFS_BIN_ENV : 'PATH' },
      },
    };
  }
  const sha256 = await sha256File(found.path);
  const pin = await readPin(env, storeRoot);
  const refuse = (checksum: 'missing' | 'invalid' | 'mismatch', detail: string, pinnedBy: PinSource | null) => ({
    ok: false as const,
    hint: PIN_HINT,
    probe: {
      available: false,
      reason: 'E_AGENTFS_CHECKSUM' as const,
      detail,
      evidence: { found: true, via: found.via, sha256, checksum, pinnedBy },
    },
  });
  if (pin.kind === 'missing')
    return refuse(
      'missing',
      `an agentfs binary was found but no sha256 is pinned (${AGENTFS_SHA256_ENV} or <store>/${AGENTFS_CONFIG_FILE})`,
      null,
    );
  if (pin.kind === 'invalid') return refuse('invalid', `the pinned sha256 is unusable: ${pin.detail}`, pin.source);
  if (pin.sha256 !== sha256)
    return refuse(
      'mismatch',
      `the agentfs binary's sha256 ${sha256} does not match the pinned ${pin.sha256} (from ${pin.source})`,
      pin.source,
    );
  return { ok: true, binary: { path: found.path, sha256, via: found.via, pinnedBy: pin.source } };
}
