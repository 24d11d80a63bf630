// A user's own backend, loaded from a module named by path (`pdb-env bench --backend-module FILE`,
// a plan's `backendModules`, `pdb-env create --backend-module FILE`): its default export must
// implement the contract of ./types.ts. It is checked at load, before any filesystem work, and
// recorded as what it is: receipts carry the module's sha256, never its path, and a session made by
// a module records its sha256, so a later process imports only those bytes. A module that says
// `testOnly: true` (a negative control) is refused wherever test-only backends are.
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Digest } from '../model/canonical-json.js';
import { PdbError, osErrorCode } from '../model/errors.js';
import { sha256Hex } from '../model/os/hash.js';
import { backendRow } from './table.js';
import type { Backend } from './types.js';

/** A backend that came from a module, with where it came from (the path stays on this host). */
export interface ModuleBackend {
  backend: Backend;
  /** The module file's real path. */
  file: string;
  /** sha256 of the module file's bytes: what receipts record. */
  digest: Digest;
}

/** Names a module backend may take: short, lower-case, and none of the built-in ones. */
export const MODULE_BACKEND_NAME = /^[a-z][a-z0-9-]{1,40}$/;
const FUNCTIONS = ['probe', 'materializeBase', 'createSession', 'resume', 'release'] as const;
const CAPABILITIES = ['constantTimeCreate', 'sharesExtents', 'needsRemount', 'carriesFullSnapshot'] as const;

/** Every way `value` misses the backend contract, in words (empty: it implements it). */
export function contractProblems(value: unknown): string[] {
  if (!value || typeof value !== 'object') return ['the default export is not an object'];
  const b = value as Record<string, unknown>;
  const out: string[] = [];
  if (typeof b.name !== 'string' || !MODULE_BACKEND_NAME.test(b.name))
    out.push(`name must match ${MODULE_BACKEND_NAME} (got ${JSON.stringify(b.name)})`);
  else if (backendRow(b.name)) out.push(`name "${b.name}" is a built-in backend's`);
  for (const k of ['experimental', 'testOnly'] as const) if (typeof b[k] !== 'boolean') out.push(`${k} must be true or false`);
  if (typeof b.summary !== 'string' || b.summary.length === 0) out.push('summary must be a non-empty string');
  const caps = b.capabilities as Record<string, unknown> | undefined;
  if (!caps || typeof caps !== 'object') out.push('capabilities must be an object');
  else {
    for (const k of CAPABILITIES) if (typeof caps[k] !== 'boolean') out.push(`capabilities.${k} must be true or false`);
    if (caps.securityIsolation !== false) out.push('capabilities.securityIsolation must be false (workspace isolation is not a sandbox)');
  }
  for (const f of FUNCTIONS) if (typeof b[f] !== 'function') out.push(`${f} must be a function`);
  for (const f of ['createFromBase', 'usage'] as const)
    if (b[f] !== undefined && typeof b[f] !== 'function') out.push(`${f}, when given, must be a function`);
  return out;
}

const loaded = new Map<string, ModuleBackend>();

/** The module file's real path and the sha256 of its bytes, read without importing it (E_BACKEND_MODULE_INVALID when unreadable). */
export function hashBackendModule(file: string): { file: string; digest: Digest; bytes: Buffer } {
  let real: string;
  let bytes: Buffer;
  try {
    real = realpathSync(resolve(file));
    if (!statSync(real).isFile()) throw Object.assign(new Error('not a regular file'), { code: 'EISDIR' });
    bytes = readFileSync(real);
  } catch (err) {
    throw new PdbError(
      'E_BACKEND_MODULE_INVALID',
      `backend module ${file} cannot be read (${osErrorCode(err) ?? (err as Error).message})`,
      {
        hint: 'Name the module file by its path (an .mjs or .js file whose default export is the backend).',
        cause: err,
      },
    );
  }
  return { file: real, digest: `sha256:${sha256Hex(bytes)}`, bytes };
}

/**
 * Load (once per process) and check the backend module at `file`. With `digest` (what a session
 * recorded when the module made it), a file with other bytes is refused before it is imported
 * (E_BACKEND_MODULE_CHANGED): a record names a module, it never chooses what code runs.
 */
export async function loadBackendModule(file: string, options: { digest?: string } = {}): Promise<ModuleBackend> {
  const { file: real, digest } = hashBackendModule(file);
  if (options.digest !== undefined && options.digest !== digest)
    throw new PdbError(
      'E_BACKEND_MODULE_CHANGED',
      `backend module ${real} is not the file that was recorded (sha256 ${digest.slice(7, 19)}…, recorded ${options.digest.slice(7, 19) || 'nothing'}…); it was not loaded`,
      { hint: 'Put back the module the session was made by (same bytes), then run the command again.' },
    );
  const known = loaded.get(real);
  if (known) return known;
  let mod: { default?: unknown };
  try {
    mod = (await import(pathToFileURL(real).href)) as { default?: unknown };
  } catch (err) {
    throw new PdbError('E_BACKEND_MODULE_INVALID', `backend module ${file} failed to load: ${(err as Error).message}`, { cause: err });
  }
  const problems = contractProblems(mod.default);
  if (problems.length)
    throw new PdbError(
      'E_BACKEND_MODULE_INVALID',
      `backend module ${file} does not implement the backend contract: ${problems.join('; ')}`,
      {
        hint: 'Its default export must be a Backend (see docs/your-backend.md for a complete example).',
      },
    );
  const backend = mod.default as Backend;
  for (const other of loaded.values())
    if (other.backend.name === backend.name)
      throw new PdbError(
        'E_BACKEND_MODULE_INVALID',
        `backend modules ${other.file} and ${file} both name their backend "${backend.name}"`,
        {
          hint: 'Give each backend module its own name.',
        },
      );
  const entry: ModuleBackend = { backend, file: real, digest };
  loaded.set(real, entry);
  return entry;
}

/** The loaded module backend of that name, if any. */
export function moduleBackend(name: string): ModuleBackend | undefined {
  for (const m of loaded.values()) if (m.backend.name === name) return m;
  return undefined;
}
