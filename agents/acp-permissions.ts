// The workspace policy at the ACP permission gate. Real ACP adapters write with their own tools
// (claude-agent-acp 0.49.0: its native Write and Bash; codex-acp 0.16.0: apply_patch and
// exec_command), not through fs/write_text_file, so the one place the client can decide is
// session/request_permission: every path the tool call names (its locations, and the paths in
// its raw input) is checked as fs requests are, and a denied one is refused with the reject
// option and recorded as E_POLICY_DENIED. Measured: claude-agent-acp answers a rejection with
// "User refused permission to run tool" and goes on; codex-acp offers only approve or abort, and
// an abort ends the turn (stopReason "cancelled"), so runAcpAgent prompts again to go on.
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { realpath } from 'node:fs/promises';
import { PdbError } from '../model/errors.js';
import { checkPath, type Access, type WorkspacePolicy } from '../model/workspace-policy.js';

/** One request the policy refused: path-free (relative to the root, or "(outside the root)"). */
export interface PolicyDenial {
  code: 'E_POLICY_DENIED';
  access: Access;
  path: string;
  /** The rule that decided ("default:credential .env", "default:unsafe-path .."). */
  rule: string;
  /** Where it was refused: permission (the agent's own tool) or an fs request. */
  via: 'permission' | 'fs/write_text_file' | 'fs/read_text_file' | 'terminal/create';
}

interface PermissionOption {
  optionId: string;
  kind: string;
}

export interface PermissionRequest {
  toolCall: { kind?: string | null; locations?: { path: string }[] | null; rawInput?: unknown; title?: string | null };
  options: PermissionOption[];
}

const PATH_KEYS = ['file_path', 'filePath', 'path', 'notebook_path', 'absolute_path'];

/** Every path a tool call names, and the cwd it runs in (Codex exec requests carry one). */
export function permissionPaths(tc: PermissionRequest['toolCall']): { paths: string[]; cwd: string | null } {
  const paths = new Set<string>();
  for (const l of tc.locations ?? []) if (typeof l?.path === 'string') paths.add(l.path);
  const raw = tc.rawInput !== null && typeof tc.rawInput === 'object' ? (tc.rawInput as Record<string, unknown>) : {};
  for (const k of PATH_KEYS) if (typeof raw[k] === 'string') paths.add(raw[k] as string);
  // Codex's apply_patch request: { changes: { "/abs/path": {...}, ... } }, and a move's destination.
  if (raw.changes && typeof raw.changes === 'object')
    for (const [p, change] of Object.entries(raw.changes as Record<string, unknown>)) {
      paths.add(p);
      const to = (change as { move_path?: unknown } | null)?.move_path;
      if (typeof to === 'string') paths.add(to);
    }
  return { paths: [...paths], cwd: typeof raw.cwd === 'string' ? raw.cwd : null };
}

/** Which access a tool call needs: reads and searches read, everything else may write. */
export function accessOf(kind: string | null | undefined): Access {
  return kind === 'read' || kind === 'search' || kind === 'fetch' || kind === 'think' ? 'read' : 'write';
}

/**
 * The policy's decision for `path` (absolute, or relative to the root), judged lexically after
 * resolving the root: a path outside it is "(outside the root)" under the policy's unsafe-path rule.
 */
export async function policyDecision(
  root: string,
  policies: readonly WorkspacePolicy[],
  path: string,
  access: Access,
): Promise<{ allowed: boolean; rel: string; rule: string }> {
  const realRoot = await realpath(root).catch(() => resolve(root));
  const abs = isAbsolute(path) ? resolve(path) : resolve(realRoot, path);
  const within = [resolve(root), realRoot].map((r) => relative(r, abs)).find((rel) => !rel.startsWith('..') && !isAbsolute(rel));
  if (within === undefined) return { allowed: false, rel: '(outside the root)', rule: checkPath(policies, '../outside', access).rule };
  const rel = within.split(sep).join('/') || '.';
  const d = checkPath(policies, rel, access);
  return { allowed: d.allowed, rel, rule: d.rule };
}

/** The option that refuses (reject_once, else reject_always), or null when the agent offered none. */
function rejectOption(options: PermissionOption[]): PermissionOption | null {
  return options.find((o) => o.kind === 'reject_once') ?? options.find((o) => o.kind === 'reject_always') ?? null;
}

export type PermissionOutcome = { outcome: 'selected'; optionId: string } | { outcome: 'cancelled' };

/**
 * Answer a permission request by the policy: allow once when every path it names is allowed (and
 * its cwd is inside the root), otherwise reject (or cancel when no reject option exists) and
 * return the denials. `confine` is the client's own check of paths that already exist (symlinks).
 */
export async function decidePermission(
  root: string,
  policies: readonly WorkspacePolicy[],
  p: PermissionRequest,
  confine: (path: string, access: Access) => Promise<string>,
): Promise<{ outcome: PermissionOutcome; denials: PolicyDenial[] }> {
  const { paths, cwd } = permissionPaths(p.toolCall);
  const access = accessOf(p.toolCall.kind);
  const denials: PolicyDenial[] = [];
  const checks = [...paths.map((path) => ({ path, access })), ...(cwd ? [{ path: cwd, access: 'read' as Access }] : [])];
  for (const c of checks) {
    const d = await policyDecision(root, policies, c.path, c.access);
    // A path the lexical check allows may still leave the root through a symlink inside it.
    const escapes =
      d.allowed &&
      (await confine(c.path, c.access).then(
        () => false,
        (err: unknown) => err instanceof PdbError,
      ));
    if (!d.allowed || escapes)
      denials.push({
        code: 'E_POLICY_DENIED',
        access: c.access,
        path: d.rel,
        rule: escapes ? 'resolves outside the root' : d.rule,
        via: 'permission',
      });
  }
  if (denials.length === 0) {
    const allow = p.options.find((o) => o.kind === 'allow_once') ?? p.options.find((o) => o.kind === 'allow_always');
    return { outcome: allow ? { outcome: 'selected', optionId: allow.optionId } : { outcome: 'cancelled' }, denials };
  }
  const reject = rejectOption(p.options);
  return { outcome: reject ? { outcome: 'selected', optionId: reject.optionId } : { outcome: 'cancelled' }, denials };
}
