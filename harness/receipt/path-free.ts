// The path-free rule for receipts and other evidence: no absolute path, no user name, no host
// name anywhere (keys included). Checked before anything is written.
import { defaultHostNames, defaultUserNames, nameMatcher } from '../../model/scrub.js';

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
  // An explicit stack, not recursion: a document nested 5,000 deep overflowed the call stack (issue 41).
  const stack: Array<[unknown, string]> = [[doc, '']];
  while (stack.length > 0) {
    const [v, pointer] = stack.pop()!;
    if (typeof v === 'string') {
      const why = pathFreeViolation(v, resolved);
      if (why) issues.push({ pointer, message: why });
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${pointer}/${i}`]);
    } else if (v && typeof v === 'object') {
      const entries = Object.entries(v);
      const keyIssues: PathFreeIssue[] = [];
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, x] = entries[i]!;
        const p = `${pointer}/${escapePointer(k)}`;
        stack.push([x, p]);
      }
      for (const [k] of entries) {
        const why = pathFreeViolation(k, resolved);
        if (why) keyIssues.push({ pointer: `${pointer}/${escapePointer(k)}`, message: `key ${why}` });
      }
      issues.push(...keyIssues);
    }
  }
  return issues;
}
