// The path-free rule for receipts and other evidence: no absolute path, no user name, no host
// name anywhere (keys included). Checked before anything is written.
import { hostname, userInfo } from 'node:os';

export interface PathFreeIssue {
  /** JSON pointer of the offending string. */
  pointer: string;
  /** What was found, with the value itself masked (it may be the very secret we keep out). */
  message: string;
}

export interface PathFreeOptions {
  /** Names that must not appear (default: this process's user name). */
  userNames?: string[];
  /** Host names that must not appear (default: os.hostname() and its first label). */
  hostNames?: string[];
}

// Generic account names identify no one and are ordinary words in messages ("needs root").
const GENERIC_USERS = new Set(['root', 'user', 'runner', 'node', 'admin', 'ubuntu', 'debian', 'nobody', 'vagrant', 'ci']);

const ABSOLUTE_PATTERNS: Array<[RegExp, string]> = [
  // A POSIX absolute path: "/" then a name then another "/" or the end, at a token start.
  [/(^|[\s"'`(=:,;[{<])\/(?:[A-Za-z0-9._@~+-]+)(?:\/|$|[\s"'`),;\]}>])/, 'an absolute POSIX path'],
  [
    /(^|[^A-Za-z0-9])\/(?:tmp|home|root|work|mnt|Users|var|private|opt|srv|media|run|etc|usr|proc|dev|data|nix|Volumes|workspace)(?![A-Za-z0-9_-])/,
    'an absolute path under a system root',
  ],
  [/(^|[^A-Za-z0-9])[A-Za-z]:[\\/]/, 'a Windows drive path'],
  [/\\\\[A-Za-z0-9._-]+\\/, 'a UNC path'],
  [/file:\/\//i, 'a file:// URL'],
  [/(^|[\s"'=:])~\/[A-Za-z0-9._-]/, 'a home-relative path'],
];

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function nameMatcher(names: string[]): RegExp | null {
  const useful = [...new Set(names.map((n) => n.trim()).filter((n) => n.length >= 2 && !GENERIC_USERS.has(n.toLowerCase())))];
  if (useful.length === 0) return null;
  // Whole tokens only: a short host name like "vm" must not match inside "vmlinuz".
  return new RegExp(`(^|[^A-Za-z0-9_-])(${useful.map(escapeRegExp).join('|')})(?![A-Za-z0-9_-])`, 'i');
}

function defaultHostNames(): string[] {
  const h = hostname();
  return [h, h.split('.')[0] ?? h];
}

function defaultUserNames(): string[] {
  try {
    return [userInfo().username];
  } catch {
    return [];
  }
}

function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Describe why `s` is not path-free, or null when it is. */
export function pathFreeViolation(s: string, options: PathFreeOptions = {}): string | null {
  for (const [re, what] of ABSOLUTE_PATTERNS) if (re.test(s)) return `contains ${what}`;
  const users = nameMatcher(options.userNames ?? defaultUserNames());
  if (users?.test(s)) return 'contains the user name';
  const hosts = nameMatcher(options.hostNames ?? defaultHostNames());
  if (hosts?.test(s)) return 'contains the host name';
  return null;
}

/** Every string (and object key) in `doc` that breaks the path-free rule. */
export function findPathIssues(doc: unknown, options: PathFreeOptions = {}): PathFreeIssue[] {
  const resolved: PathFreeOptions = {
    userNames: options.userNames ?? defaultUserNames(),
    hostNames: options.hostNames ?? defaultHostNames(),
  };
  const issues: PathFreeIssue[] = [];
  const visit = (v: unknown, pointer: string): void => {
    if (typeof v === 'string') {
      const why = pathFreeViolation(v, resolved);
      if (why) issues.push({ pointer, message: why });
    } else if (Array.isArray(v)) {
      v.forEach((x, i) => visit(x, `${pointer}/${i}`));
    } else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        const p = `${pointer}/${escapePointer(k)}`;
        const why = pathFreeViolation(k, resolved);
        if (why) issues.push({ pointer: p, message: `key ${why}` });
        visit(x, p);
      }
    }
  };
  visit(doc, '');
  return issues;
}

/** Make a message path-free: absolute paths become "<path>", user and host names "<user>"/"<host>". */
export function scrubText(s: string, options: PathFreeOptions = {}): string {
  let out = s
    .replace(/file:\/\/\S+/gi, '<path>')
    .replace(/(^|[\s"'`(=:,;[{<])(\/[^\s"'`),;\]}>]*)/g, (_m, pre: string, path: string) => (path === '/' ? `${pre}/` : `${pre}<path>`))
    .replace(/(^|[^A-Za-z0-9])[A-Za-z]:[\\/][^\s"'`),;]*/g, (_m, pre: string) => `${pre}<path>`);
  const users = nameMatcher(options.userNames ?? defaultUserNames());
  if (users) out = out.replace(new RegExp(users.source, 'gi'), (_m, pre: string) => `${pre}<user>`);
  const hosts = nameMatcher(options.hostNames ?? defaultHostNames());
  if (hosts) out = out.replace(new RegExp(hosts.source, 'gi'), (_m, pre: string) => `${pre}<host>`);
  return out;
}
