// The workspace policy: which paths of a session an agent's file and terminal requests may read
// or write, with the semantics of the everruns WorkspacePolicy. Ordinary paths are readable and
// writable; hidden paths (a component starting with '.') and credential paths are denied unless a
// scope allows them; dependency and build directories are never writable at any depth; a deny
// beats an allow; scopes are literal path prefixes compared case-insensitively (ASCII); '..', NUL
// and backslashes fail closed. Composing policies only narrows: every one must allow.
// Defence in depth for cooperative agents, not a sandbox. Pure: no I/O.
import { PdbError } from './errors.js';
import { assertSchema } from './schemas.js';

export type Access = 'read' | 'write';

/** The document in pdb-env.json's "policy" or a --policy FILE (schemas/workspace-policy.schema.json). */
export interface WorkspacePolicyDoc {
  /** Scopes that may be read (default: ["/"], everything ordinary). */
  read?: string[];
  /** Scopes that may be written (default: ["/"]; [] makes the policy read-only). */
  write?: string[];
  denyRead?: string[];
  denyWrite?: string[];
  /** File or directory names never writable at any depth (added to node_modules, target, dist, .next). */
  denyWriteComponent?: string[];
  /** Hidden scopes made visible (".github"). */
  allowHidden?: string[];
  /** Credential scopes made visible (and hidden components inside them). */
  allowSensitive?: string[];
}

export interface WorkspacePolicy {
  /** Where it came from, named in every rule it decides ("default", "pdb-env.json", a file). */
  source: string;
  doc: Required<WorkspacePolicyDoc>;
}

export interface PathDecision {
  allowed: boolean;
  /** The rule that decided, "SOURCE:KIND PATTERN" like git check-ignore -v. */
  rule: string;
}

/** Never writable at any depth: dependency and build output the tools own. */
export const NEVER_WRITABLE = ['node_modules', 'target', 'dist', '.next'] as const;

/** Credential names (a component equal to, or for `*` patterns matching, one of these). */
const CREDENTIAL_PATTERNS: readonly RegExp[] = [
  /^\.env(\..*)?$/i,
  /^\.npmrc$/i,
  /^\.netrc$/i,
  /^\.pypirc$/i,
  /^\.pgpass$/i,
  /^\.git-credentials$/i,
  /^id_[a-z0-9_]+(\.pub)?$/i,
  /\.pem$/i,
  /\.key$/i,
  /\.p12$/i,
  /^\.aws$/i,
  /^\.ssh$/i,
  /^\.gnupg$/i,
  /^\.kube$/i,
];

export function defaultPolicy(): WorkspacePolicy {
  return policyFrom({}, 'default');
}

/** A checked policy document as a policy; E_POLICY_INVALID naming `source` when it does not match the schema. */
export function parsePolicy(doc: unknown, source: string): WorkspacePolicy {
  return policyFrom(
    assertSchema<WorkspacePolicyDoc>('workspace-policy', doc, { code: 'E_POLICY_INVALID', what: `the workspace policy in ${source}` }),
    source,
  );
}

function policyFrom(doc: WorkspacePolicyDoc, source: string): WorkspacePolicy {
  return {
    source,
    doc: {
      read: doc.read ?? ['/'],
      write: doc.write ?? ['/'],
      denyRead: doc.denyRead ?? [],
      denyWrite: doc.denyWrite ?? [],
      denyWriteComponent: doc.denyWriteComponent ?? [],
      allowHidden: doc.allowHidden ?? [],
      allowSensitive: doc.allowSensitive ?? [],
    },
  };
}

/**
 * A request path as workspace components: "src/a.ts", "./src/a.ts", "/src/a.ts" and
 * "/workspace/src/a.ts" are the same file. null (fail closed) for '..', NUL or a backslash.
 */
export function workspaceComponents(path: string): string[] | null {
  if (path.includes('\0') || path.includes('\\')) return null;
  let p = path;
  if (/^\/workspace(\/|$)/.test(p)) p = p.slice('/workspace'.length);
  const parts = p.split('/').filter((c) => c !== '' && c !== '.');
  return parts.includes('..') ? null : parts;
}

/** Is `parts` inside scope `scope` (a literal prefix of whole components, ASCII case-insensitive)? */
function inScope(parts: readonly string[], scope: string): boolean {
  const s = workspaceComponents(scope);
  if (!s || s.length > parts.length) return false;
  return s.every((c, i) => c.toLowerCase() === parts[i]!.toLowerCase());
}

const firstScope = (parts: readonly string[], scopes: readonly string[]) => scopes.find((s) => inScope(parts, s));

/** What one policy says about reading or writing `path`. */
export function checkOne(policy: WorkspacePolicy, path: string, access: Access): PathDecision {
  const d = policy.doc;
  const rule = (allowed: boolean, kind: string, pattern: string): PathDecision => ({
    allowed,
    rule: `${policy.source}:${kind} ${pattern}`,
  });
  const parts = workspaceComponents(path);
  if (parts === null) return rule(false, 'unsafe-path', path.includes('\0') ? 'NUL' : path.includes('\\') ? '\\' : '..');
  // Denies first: a deny beats every allow.
  const deniedRead = firstScope(parts, d.denyRead);
  if (deniedRead !== undefined) return rule(false, 'denyRead', deniedRead);
  if (access === 'write') {
    const deniedWrite = firstScope(parts, d.denyWrite);
    if (deniedWrite !== undefined) return rule(false, 'denyWrite', deniedWrite);
    const never = [...NEVER_WRITABLE, ...d.denyWriteComponent];
    const c = parts.find((p) => never.some((n) => n.toLowerCase() === p.toLowerCase()));
    if (c !== undefined) return rule(false, NEVER_WRITABLE.some((n) => n === c.toLowerCase()) ? 'never-writable' : 'denyWriteComponent', c);
  }
  const sensitiveScope = firstScope(parts, d.allowSensitive);
  const credential = parts.find((p) => CREDENTIAL_PATTERNS.some((re) => re.test(p)));
  if (credential !== undefined && sensitiveScope === undefined) return rule(false, 'credential', credential);
  const hidden = parts.find((p) => p.startsWith('.'));
  if (hidden !== undefined && sensitiveScope === undefined && firstScope(parts, d.allowHidden) === undefined)
    return rule(false, 'hidden', hidden);
  const scopes = access === 'read' ? [...d.read, ...d.write] : d.write;
  const allowedBy = firstScope(parts, scopes);
  if (allowedBy !== undefined) return rule(true, access === 'read' && !firstScope(parts, d.read) ? 'write' : access, allowedBy);
  return rule(false, `no-${access}-scope`, '(none matches)');
}

/** Composed policies: allowed only when every one allows; the rule is the first deny's, else the last allow's. */
export function checkPath(policies: readonly WorkspacePolicy[], path: string, access: Access): PathDecision {
  if (policies.length === 0) throw new PdbError('E_INTERNAL', 'checkPath needs at least one policy');
  let last: PathDecision | null = null;
  for (const p of policies) {
    last = checkOne(p, path, access);
    if (!last.allowed) return last;
  }
  return last!;
}
