/** Every failure pdb-env reports has one stable code; receipts and `--json` errors carry it. */
export const ERROR_CODES = [
  'E_USAGE',
  'E_HOOK_INPUT',
  'E_BAD_NAME',
  'E_BAD_PATH',
  'E_NON_UTF8_NAME',
  'E_UNSUPPORTED_ENTRY',
  'E_SOURCE_MISSING',
  'E_SOURCE_CHANGED',
  'E_SESSION_CHANGED',
  'E_SESSION_EXISTS',
  'E_SESSION_NOT_FOUND',
  'E_SESSION_BROKEN',
  'E_SESSION_DAMAGED',
  'E_ENV_NOT_FOUND',
  'E_HEAD_MOVED',
  'E_STALE_BASE',
  'E_PUBLISH_CONFLICT',
  'E_DIGEST_AMBIGUOUS',
  'E_DIGEST_UNKNOWN',
  'E_APPLY_CONFLICT',
  'E_BRANCH_EXISTS',
  'E_LEASE_BUSY',
  'E_SESSION_BUSY',
  'E_PORTS_EXHAUSTED',
  'E_OBJECT_MISSING',
  'E_OBJECT_CORRUPT',
  'E_RECORD_CORRUPT',
  'E_STORE_INVALID',
  'E_CONFIG_INVALID',
  'E_BACKEND_UNKNOWN',
  'E_BACKEND_UNAVAILABLE',
  'E_BACKEND_MODULE_INVALID',
  'E_BACKEND_MODULE_CHANGED',
  'E_CLONE_UNSUPPORTED',
  'E_CROSS_DEVICE',
  'E_CLONE_NOT_OBSERVED',
  'E_USAGE_UNMEASURABLE',
  'E_NOT_ROOT',
  'E_TOOL_MISSING',
  'E_NOT_BTRFS',
  'E_NOT_GIT_REPO',
  'E_UNSUPPORTED_OS',
  'E_MOUNT_FAILED',
  'E_AGENTFS_MISSING',
  'E_AGENTFS_CHECKSUM',
  'E_AGENTFS_PROBE',
  'E_PLAN_INVALID',
  'E_STALE_BUILD',
  'E_SCHEMA_INVALID',
  'E_RECEIPT_NOT_PATH_FREE',
  'E_RECEIPT_INCONSISTENT',
  'E_RECEIPT_SIGNATURE',
  'E_RECEIPT_SIGNER',
  'E_RECEIPT_UNSIGNED',
  'E_RECEIPT_DUPLICATE',
  'E_SIGNER_UNKNOWN',
  'E_SIGNER_REVOKED',
  'E_SIGNER_HOST',
  'E_SIGNERS_INVALID',
  'E_SIGNING_KEY',
  'E_POLICY_INVALID',
  'E_RUN_NOT_FOUND',
  'E_RECEIPT_NOT_FOUND',
  'E_TIMEOUT',
  'E_INTERRUPTED',
  'E_STEP_FAILED',
  'E_ORACLE_MISMATCH',
  'E_ORACLE_UNAVAILABLE',
  'E_TREE_NOT_REPRODUCED',
  'E_EXPECTED_MISMATCH',
  'E_CHECK_FAILED',
  'E_BASE_CHANGED',
  'E_SIBLING_CHANGED',
  'E_CLEANUP_INCOMPLETE',
  'E_WORKLOAD_UNKNOWN',
  'E_REGISTRY_UNREACHABLE',
  'E_AGENT_NOT_INSTALLED',
  'E_AGENT_AUTH',
  'E_AGENT_MODEL',
  'E_AGENT_NETWORK',
  'E_AGENT_TIMEOUT',
  'E_AGENT_CONTRACT',
  'E_AGENT_CRASHED',
  'E_AGENT_STEP_FAILED',
  'E_MODEL_PROTOCOL',
  'E_CASSETTE_INVALID',
  'E_PATH_OUTSIDE_ROOT',
  'E_POLICY_DENIED',
  'E_COMMAND_NOT_FOUND',
  'E_COMMAND_NOT_EXECUTABLE',
  'E_DAEMON_DIR',
  'E_DAEMON_LOST',
  'E_DAEMON_PEER',
  'E_NO_SPACE',
  'E_READ_ONLY',
  'E_PERMISSION',
  'E_IO',
  'E_INTERNAL',
] as const;

export type PdbErrorCode = (typeof ERROR_CODES)[number];

export interface PdbErrorOptions {
  /** What the user can do about it. */
  hint?: string;
  cause?: unknown;
  /** Relative path the error is about, when there is one. */
  path?: string;
}

/** The mark every PdbError carries, in the process-wide symbol registry (the same in every copy of this module). */
const PDB_ERROR = Symbol.for('pdb-env.PdbError');

export class PdbError extends Error {
  readonly code: PdbErrorCode;
  readonly hint?: string;
  readonly path?: string;

  /**
   * `instanceof PdbError` is true of an error made by any copy of this module: the checkpoint
   * bundle (cli/checkpoint-bundle.js) holds one copy, and the modules it imports from dist/ another.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as { [PDB_ERROR]?: unknown })[PDB_ERROR] === true;
  }

  constructor(code: PdbErrorCode, message: string, options: PdbErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    Object.defineProperty(this, PDB_ERROR, { value: true });
    this.name = 'PdbError';
    this.code = code;
    this.hint = options.hint;
    this.path = options.path;
  }

  toJSON(): { code: PdbErrorCode; message: string; hint?: string; path?: string } {
    return { code: this.code, message: this.message, ...(this.hint ? { hint: this.hint } : {}), ...(this.path ? { path: this.path } : {}) };
  }
}

export function isPdbError(err: unknown, code?: PdbErrorCode): err is PdbError {
  return err instanceof PdbError && (code === undefined || err.code === code);
}

/** The OS error code (`ENOENT`, `EXDEV`, ...) of a thrown value, if it has one. */
export function osErrorCode(err: unknown): string | undefined {
  if (err && typeof err === 'object' && 'code' in err && typeof (err as { code: unknown }).code === 'string') {
    return (err as { code: string }).code;
  }
  return undefined;
}

/** What an OS error code means for the user: its PdbError code and what to do. */
const OS_ERRORS: Record<string, { code: PdbErrorCode; what: string; hint: string }> = {
  ENOSPC: {
    code: 'E_NO_SPACE',
    what: 'no space left on the device',
    hint: 'Free space on the filesystem that holds the store (or pass another --store), then run pdb-env gc.',
  },
  EDQUOT: {
    code: 'E_NO_SPACE',
    what: 'disk quota exceeded',
    hint: 'Free space within your quota (or pass another --store), then run pdb-env gc.',
  },
  EROFS: {
    code: 'E_READ_ONLY',
    what: 'the filesystem is read-only',
    hint: 'Remount the filesystem that holds it read-write, or pass another --store.',
  },
  EACCES: {
    code: 'E_PERMISSION',
    what: 'permission denied',
    hint: 'Check the owner, mode and attributes (lsattr: chattr +i) of the path; run as the owner of the store.',
  },
  EPERM: {
    code: 'E_PERMISSION',
    what: 'operation not permitted',
    hint: 'Check the owner, mode and attributes (lsattr: chattr +i) of the path; run as the owner of the store.',
  },
};

export interface OsErrorContext {
  /** What was being done, as a phrase: "writing the journal intent". */
  action?: string;
  /** The file it was about (Node leaves it out of read and write errors). */
  path?: string;
  /** The mount point of the filesystem `path` is on, when it is not the store's: an E_NO_SPACE hint names it. */
  filesystem?: string;
}

/**
 * Wrap any thrown value as a PdbError, keeping PdbErrors as they are. An OS error is classified by
 * its err.code (ENOSPC is E_NO_SPACE, EROFS E_READ_ONLY, EACCES and EPERM E_PERMISSION, the rest
 * E_IO) and named with the path and a hint; anything else is `fallback` with the original as cause.
 */
export function toPdbError(err: unknown, fallback: PdbErrorCode = 'E_INTERNAL', context: OsErrorContext = {}): PdbError {
  if (err instanceof PdbError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const errno = osErrorCode(err);
  if (!errno || !/^E[A-Z0-9]+$/.test(errno)) return new PdbError(fallback, message, { cause: err });
  const known = OS_ERRORS[errno];
  const path = context.path ?? (err as { path?: unknown }).path;
  const where = typeof path === 'string' && !message.includes(path) ? ` (${path})` : '';
  const doing = context.action ? `${context.action} failed: ` : '';
  const full =
    known?.code === 'E_NO_SPACE' && context.filesystem
      ? `Free space on the filesystem mounted at ${context.filesystem}, which holds ${typeof path === 'string' ? path : 'it'}, then try again.`
      : null;
  return new PdbError(known?.code ?? 'E_IO', `${doing}${known ? `${known.what}: ` : ''}${message}${where}`, {
    cause: err,
    hint: full ?? known?.hint ?? 'Check that the path exists and the store is intact (pdb-env doctor).',
  });
}
