// The repo workload's parameters: a source directory given at run time, a label, the steps (shell
// command lines, each with a timeout and an expected exit code, optionally waiting for a milestone
// and then making an edit and observing it), and the volatile paths its projection drops. Every
// problem is reported with a JSON pointer, before any filesystem work, by bench and validate alike.
import type { ParamIssue } from '../types.js';

/** What a long-running step waits for: a regular expression on its output, or an HTTP status on the session's port. */
export type Milestone = { output: string } | { http: { path: string; status?: number } };

/** An edit made once the milestone is reached, and what shows it was seen: new output, or a changed HTTP response. */
export interface StepEdit {
  /** A relative path in the session root. */
  path: string;
  /** The file's new content (exactly one of content and append). */
  content?: string;
  /** Text appended to the file. */
  append?: string;
  then: { output: string } | { httpChange: string };
}

export interface RepoStep {
  /** Short name, recorded as the phase `step:<name>`. */
  name: string;
  /** A shell command line (sh -c), run in the session root with PORT and PDB_ENV_SHARED_DIR set. Never recorded. */
  run: string;
  timeoutMs?: number;
  /** The exit code that counts as success (default 0); not for steps with a milestone. */
  expectExit?: number;
  milestone?: Milestone;
  edit?: StepEdit;
}

export interface RepoParams {
  /** The source directory, or a `${NAME}` placeholder given at run time (--var NAME=DIR, --source DIR). */
  source: string;
  /** The source's name in receipts (default: its folder's base name). */
  label: string;
  steps: RepoStep[];
  /** Globs over relative paths dropped from every result before it is compared (caches). */
  volatile: string[];
}

export const REPO_WORKLOAD_VERSION = '1';
export const DEFAULT_STEP_TIMEOUT_MS = 600_000;

/** Caches that differ between two correct runs of the same steps (timestamps, absolute paths, hashes). */
export const DEFAULT_VOLATILE: readonly string[] = [
  '**/node_modules/.cache/**',
  '**/node_modules/.vite/**',
  '**/node_modules/.vite-temp/**',
  '**/.next/cache/**',
  '**/*.tsbuildinfo',
  '**/.eslintcache',
  '**/.turbo/**',
];

export const REPO_DEFAULTS: RepoParams = { source: '', label: '', steps: [], volatile: [...DEFAULT_VOLATILE] };

export const STEP_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$/;
export const LABEL = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const STEP_KEYS = new Set(['name', 'run', 'timeoutMs', 'expectExit', 'milestone', 'edit']);
const EDIT_KEYS = new Set(['path', 'content', 'append', 'then']);

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const isInt = (v: unknown, min: number, max: number): boolean => Number.isInteger(v) && (v as number) >= min && (v as number) <= max;

function regexIssue(source: unknown, pointer: string): ParamIssue | null {
  if (typeof source !== 'string' || source === '') return { pointer, message: 'must be a regular expression (a non-empty string)' };
  try {
    new RegExp(source);
    return null;
  } catch (err) {
    return { pointer, message: `is not a valid regular expression: ${(err as Error).message}` };
  }
}

/** A relative path that stays inside the session root: no leading "/", no "." or ".." part, no NUL. */
export function isRelativeInside(path: unknown): path is string {
  if (typeof path !== 'string' || path === '' || path.startsWith('/') || path.includes('\0')) return false;
  return path.split('/').every((part) => part !== '' && part !== '.' && part !== '..');
}

function urlPathIssue(v: unknown, pointer: string): ParamIssue | null {
  return typeof v === 'string' && v.startsWith('/') && !/\s/.test(v) ? null : { pointer, message: 'must be a URL path starting with "/"' };
}

function milestoneIssues(m: unknown, at: string): ParamIssue[] {
  if (!isObject(m) || Object.keys(m).length !== 1 || !('output' in m || 'http' in m))
    return [{ pointer: at, message: 'must be {"output": REGEX} or {"http": {"path": "/", "status": 200}}' }];
  if ('output' in m) return [regexIssue(m.output, `${at}/output`)].filter((i) => i !== null);
  const http = m.http;
  if (!isObject(http) || Object.keys(http).some((k) => k !== 'path' && k !== 'status'))
    return [{ pointer: `${at}/http`, message: 'must be {"path": "/", "status": 200} (status optional)' }];
  const issues = [urlPathIssue(http.path, `${at}/http/path`)].filter((i) => i !== null);
  if (http.status !== undefined && !isInt(http.status, 100, 599))
    issues.push({ pointer: `${at}/http/status`, message: 'must be an HTTP status (100-599)' });
  return issues;
}

function editIssues(e: unknown, at: string, hasMilestone: boolean): ParamIssue[] {
  if (!isObject(e)) return [{ pointer: at, message: 'must be {"path", "content" or "append", "then"}' }];
  const issues: ParamIssue[] = [];
  if (!hasMilestone)
    issues.push({ pointer: at, message: 'needs a milestone on the same step: the edit is made once the process is ready' });
  for (const k of Object.keys(e)) if (!EDIT_KEYS.has(k)) issues.push({ pointer: `${at}/${k}`, message: 'is not an edit field' });
  if (!isRelativeInside(e.path)) issues.push({ pointer: `${at}/path`, message: 'must be a relative path inside the session root' });
  const texts = ['content', 'append'].filter((k) => k in e);
  if (texts.length !== 1) issues.push({ pointer: at, message: 'needs exactly one of "content" and "append"' });
  for (const k of texts) if (typeof e[k] !== 'string') issues.push({ pointer: `${at}/${k}`, message: 'must be a string' });
  const then = e.then;
  if (!isObject(then) || Object.keys(then).length !== 1 || !('output' in then || 'httpChange' in then))
    issues.push({ pointer: `${at}/then`, message: 'must be {"output": REGEX} or {"httpChange": "/path"}' });
  else if ('output' in then) issues.push(...[regexIssue(then.output, `${at}/then/output`)].filter((i) => i !== null));
  else issues.push(...[urlPathIssue(then.httpChange, `${at}/then/httpChange`)].filter((i) => i !== null));
  return issues;
}

function stepIssues(s: unknown, at: string, names: Set<string>): ParamIssue[] {
  if (!isObject(s)) return [{ pointer: at, message: 'must be a step {"name", "run", ...}' }];
  const issues: ParamIssue[] = [];
  for (const k of Object.keys(s)) if (!STEP_KEYS.has(k)) issues.push({ pointer: `${at}/${k}`, message: 'is not a step field' });
  if (typeof s.name !== 'string' || !STEP_NAME.test(s.name))
    issues.push({ pointer: `${at}/name`, message: 'must be 1-40 letters, digits, ".", "_" or "-", starting with a letter or digit' });
  else if (names.has(s.name)) issues.push({ pointer: `${at}/name`, message: `step "${s.name}" is listed twice` });
  else names.add(s.name);
  if (typeof s.run !== 'string' || s.run.trim() === '') issues.push({ pointer: `${at}/run`, message: 'must be a shell command line' });
  if (s.timeoutMs !== undefined && !isInt(s.timeoutMs, 100, 86_400_000))
    issues.push({ pointer: `${at}/timeoutMs`, message: 'must be an integer from 100 to 86400000 (ms)' });
  if (s.expectExit !== undefined && !isInt(s.expectExit, 0, 255))
    issues.push({ pointer: `${at}/expectExit`, message: 'must be an exit code (0-255)' });
  if (s.expectExit !== undefined && s.milestone !== undefined)
    issues.push({ pointer: `${at}/expectExit`, message: 'does not apply to a step with a milestone (it is stopped, not awaited)' });
  if (s.milestone !== undefined) issues.push(...milestoneIssues(s.milestone, `${at}/milestone`));
  if (s.edit !== undefined) issues.push(...editIssues(s.edit, `${at}/edit`, s.milestone !== undefined));
  return issues;
}

/** Every problem with the effective parameters (defaults merged), each with its pointer under the parameters. */
export function repoParamIssues(params: Record<string, unknown>): ParamIssue[] {
  const issues: ParamIssue[] = [];
  if (typeof params.source !== 'string' || params.source.trim() === '')
    issues.push({
      pointer: '/source',
      message: 'must name the source directory, e.g. "${SOURCE}" (given with --source DIR or --var SOURCE=DIR)',
    });
  if (typeof params.label !== 'string' || (params.label !== '' && !LABEL.test(params.label)))
    issues.push({ pointer: '/label', message: 'must be 1-64 letters, digits, ".", "_" or "-" (or "" for the source folder\'s name)' });
  if (!Array.isArray(params.steps) || params.steps.length === 0)
    issues.push({ pointer: '/steps', message: 'must list at least one step {"name", "run"}' });
  else {
    const names = new Set<string>();
    params.steps.forEach((s, i) => issues.push(...stepIssues(s, `/steps/${i}`, names)));
  }
  if (!Array.isArray(params.volatile)) issues.push({ pointer: '/volatile', message: 'must be a list of globs over relative paths' });
  else
    params.volatile.forEach((v, i) => {
      if (typeof v !== 'string' || v === '' || v.startsWith('/') || v.split('/').includes('..') || v.includes('\0'))
        issues.push({ pointer: `/volatile/${i}`, message: 'must be a glob over relative paths (no leading "/", no "..")' });
    });
  return issues;
}
