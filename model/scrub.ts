// Path scrubbing for text that may end up in evidence (receipts, failure messages, tool output):
// absolute paths, the user name and the host name are replaced by placeholders. Pure text in,
// text out; the names default to this process's user and host and can be injected.
import { hostname, userInfo } from 'node:os';

export interface ScrubNames {
  /** Names that must not appear (default: this process's user name). */
  userNames?: string[];
  /** Host names that must not appear (default: os.hostname() and its first label). */
  hostNames?: string[];
}

export interface ScrubOptions extends ScrubNames {
  /** Directories replaced by "<dir>" before anything else (longest first), so a path keeps its relative tail. */
  roots?: string[];
}

// Generic account names identify no one and are ordinary words in messages ("needs root").
const GENERIC_USERS = new Set(['root', 'user', 'runner', 'node', 'admin', 'ubuntu', 'debian', 'nobody', 'vagrant', 'ci']);

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A whole-token matcher for identifying names; null when none of them is worth matching. */
export function nameMatcher(names: string[]): RegExp | null {
  const useful = [...new Set(names.map((n) => n.trim()).filter((n) => n.length >= 2 && !GENERIC_USERS.has(n.toLowerCase())))];
  if (useful.length === 0) return null;
  // Whole tokens only: a short host name like "vm" must not match inside "vmlinuz".
  return new RegExp(`(^|[^A-Za-z0-9_-])(${useful.map(escapeRegExp).join('|')})(?![A-Za-z0-9_-])`, 'i');
}

export function defaultHostNames(): string[] {
  const h = hostname();
  return [h, h.split('.')[0] ?? h];
}

export function defaultUserNames(): string[] {
  try {
    return [userInfo().username];
  } catch {
    // No passwd entry for this uid (some containers): there is no user name to leak.
    return [];
  }
}

/** Make text path-free: `roots` become "<dir>", other absolute paths "<path>", user and host names "<user>"/"<host>". */
export function scrubText(s: string, options: ScrubOptions = {}): string {
  let out = s;
  for (const r of (options.roots ?? []).filter(Boolean).sort((a, b) => b.length - a.length)) out = out.split(r).join('<dir>');
  out = out
    .replace(/file:\/\/\S+/gi, '<path>')
    .replace(/(^|[\s"'`(=:,;[{<])(\/[^\s"'`),;\]}>]*)/g, (_m, pre: string, path: string) => (path === '/' ? `${pre}/` : `${pre}<path>`))
    .replace(/(^|[^A-Za-z0-9])[A-Za-z]:[\\/][^\s"'`),;]*/g, (_m, pre: string) => `${pre}<path>`);
  const users = nameMatcher(options.userNames ?? defaultUserNames());
  if (users) out = out.replace(new RegExp(users.source, 'gi'), (_m, pre: string) => `${pre}<user>`);
  const hosts = nameMatcher(options.hostNames ?? defaultHostNames());
  if (hosts) out = out.replace(new RegExp(hosts.source, 'gi'), (_m, pre: string) => `${pre}<host>`);
  return out;
}
