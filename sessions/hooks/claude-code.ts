// Claude Code's worktree hooks, answered with pdb-env sessions. With `WorktreeCreate` and
// `WorktreeRemove` in .claude/settings.json (`pdb-env hook claude-code --print-settings`), Claude
// Code's `--worktree NAME` and subagents' `isolation: worktree` run in a session instead of a git
// worktree. Claude Code sends one JSON object on stdin and, for a create, takes the last line of
// stdout as the directory; any non-zero exit fails the operation. So stdout carries the root and
// nothing else; whatever pdb-env has to say goes to stderr.
//
// Field names differ between versions (measured in 2.1.197's own code: `name`; documented as
// `worktree_name` elsewhere; `branch_name` in some), so the name is the first of those given, else
// the last component of `worktree_path`, else `session_id`.
import { realpathSync } from 'node:fs';
import { basename, isAbsolute, join, relative, sep } from 'node:path';
import { hookOrder } from '../../backends/table.js';
import { PdbError, isPdbError } from '../../model/errors.js';
import { ancestorPids, processesInDir } from '../../model/os/proc.js';
import { SOURCE_CONFIG, readSourceConfig } from '../../model/scan/scan.js';
import { SESSION_NAME_PATTERN } from '../records/names.js';
import { SessionService } from '../service.js';
import { PROJECT_MARKERS, findEnclosingStore, findProjectRoot, isProjectRoot, resolveStoreDir } from '../records/store-location.js';
import { realpathOr } from '../../model/paths.js';

export const HOOK_EVENTS = ['WorktreeCreate', 'WorktreeRemove', 'UserPromptSubmit', 'Stop'] as const;
/** The turn events: a checkpoint before Claude acts on a prompt, and one when it stops. */
export const TURN_EVENTS = ['UserPromptSubmit', 'Stop'] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

export interface HookInput {
  event: HookEvent;
  /** Every field as sent, for the name and paths. */
  raw: Record<string, unknown>;
}

/** Backends the hook picks by itself, best first: the table's `hookRank` (backends/table.ts says which and why). */
export const HOOK_BACKEND_ORDER = hookOrder();

const bad = (message: string, hint?: string) =>
  new PdbError('E_HOOK_INPUT', message, {
    hint: hint ?? `pdb-env hook claude-code reads the JSON Claude Code sends a ${HOOK_EVENTS.join(', ')} hook on stdin.`,
  });

/** The hook's stdin as an event and its fields; E_HOOK_INPUT for anything else. */
export function parseHookInput(text: string): HookInput {
  if (text.trim() === '') throw bad('no input on stdin');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw bad(`the input on stdin is not JSON: ${(err as Error).message}`);
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw bad('the input on stdin is not a JSON object');
  const raw = doc as Record<string, unknown>;
  const event = raw.hook_event_name;
  if (typeof event !== 'string') throw bad('the input has no "hook_event_name"');
  if (!(HOOK_EVENTS as readonly string[]).includes(event))
    throw bad(
      `unknown hook event "${event}": pdb-env answers ${HOOK_EVENTS.slice(0, -1).join(', ')} and ${HOOK_EVENTS.at(-1)}`,
      'Install the hook for those events only (pdb-env hook claude-code --print-settings).',
    );
  return { event: event as HookEvent, raw };
}

const text = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v.trim() : null);

function absolutePath(raw: Record<string, unknown>, field: string): string {
  const v = text(raw[field]);
  if (!v) throw bad(`${String(raw.hook_event_name)} without "${field}"`);
  if (!isAbsolute(v)) throw bad(`"${field}" is not an absolute path: ${v}`);
  return v;
}

/** A session name from any text: unsafe characters become "-", at most 56 characters (room for a "-N" suffix). */
export function sanitizeName(given: string): string {
  const s = given
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '') // accents off the letters they decomposed from
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 56)
    .replace(/[.-]+$/, '');
  return SESSION_NAME_PATTERN.test(s) ? s : 'claude';
}

/** The name the hook asked for, before sanitizing: name, worktree_name, branch_name, the last part of worktree_path, session_id. */
export function requestedName(raw: Record<string, unknown>): string {
  for (const k of ['name', 'worktree_name', 'branch_name']) {
    const v = text(raw[k]);
    if (v) return v;
  }
  const path = text(raw.worktree_path);
  if (path) return basename(path);
  const id = text(raw.session_id);
  if (id) return `claude-${id}`;
  throw bad('WorktreeCreate without a name ("name", "worktree_name", "branch_name", "worktree_path" or "session_id")');
}

export interface HookOptions {
  store?: string;
  /** Where the hook's messages go (stderr). */
  say: (line: string) => void;
}

/** Which backend to create with, said on stderr: pdb-env.json's, or the best available here. Never a silent fallback. */
async function chooseBackend(svc: SessionService, projectRoot: string, say: HookOptions['say']): Promise<string> {
  const named = (await readSourceConfig(projectRoot)).backend ?? null;
  if (named) {
    const r = await svc.probe(named, projectRoot);
    if (!r.available)
      throw new PdbError('E_BACKEND_UNAVAILABLE', `${SOURCE_CONFIG} names the backend ${named}, which is not available here: ${r.detail}`, {
        hint: `pdb-env backends shows what runs here; change "backend" in ${SOURCE_CONFIG} (or remove it to take the best available).`,
      });
    say(`pdb-env: backend ${named} (from ${SOURCE_CONFIG})`);
    return named;
  }
  const passed: string[] = [];
  for (const name of HOOK_BACKEND_ORDER) {
    const r = await svc.probe(name, projectRoot);
    if (r.available) {
      say(
        `pdb-env: backend ${name}, the best available here` +
          (passed.length ? ` (not available: ${passed.join('; ')})` : '') +
          `; set "backend" in ${SOURCE_CONFIG} to choose another`,
      );
      return name;
    }
    passed.push(`${name}: ${r.reason}`);
  }
  throw new PdbError('E_BACKEND_UNAVAILABLE', `no backend is available here (${passed.join('; ')})`, { hint: 'pdb-env doctor says why.' });
}

export interface HookCreateResult {
  session: string;
  backend: string;
  root: string;
  store: string;
  projectRoot: string;
}

/** WorktreeCreate: a session of the project around `cwd`, under a unique name from the hook's. */
export async function hookCreate(input: HookInput, o: HookOptions): Promise<HookCreateResult> {
  const cwd = absolutePath(input.raw, 'cwd');
  const wanted = sanitizeName(requestedName(input.raw));
  let projectRoot: string;
  try {
    projectRoot = findProjectRoot(realpathSync(cwd));
  } catch (err) {
    throw new PdbError('E_SOURCE_MISSING', `the hook's cwd ${cwd} cannot be read: ${(err as Error).message}`, { path: cwd });
  }
  // Only a project it recognises (issue 41: the hook started importing a parent directory of 600 MB of disk images).
  if (!isProjectRoot(projectRoot) && process.env.PDB_ENV_HOOK_ANY_SOURCE !== '1')
    throw new PdbError(
      'E_USAGE',
      `${projectRoot} is not a repository or a project root pdb-env recognises (no ${PROJECT_MARKERS.join(', ')}): the hook imports nothing from it`,
      {
        path: projectRoot,
        hint: `Start Claude Code in the project (a git work tree, or a directory with package.json or ${SOURCE_CONFIG}); to import this directory anyway, set PDB_ENV_HOOK_ANY_SOURCE=1 in the hook's environment.`,
      },
    );
  const store = resolveStoreDir({ store: o.store, sourceDir: projectRoot, forCreate: true });
  const svc = await SessionService.open(store, { create: true });
  const backend = await chooseBackend(svc, projectRoot, o.say);
  const taken = new Set((await svc.list(projectRoot)).map((s) => s.name));
  for (let i = 1; i < 1000; i++) {
    const name = i === 1 ? wanted : `${wanted}-${i}`;
    if (taken.has(name)) continue;
    try {
      const r = await svc.create(name, { from: projectRoot, backend });
      o.say(`pdb-env: session ${name} (${r.backend}) of ${projectRoot}, ${r.files} files`);
      return { session: name, backend: r.backend, root: r.root, store, projectRoot };
    } catch (err) {
      if (!isPdbError(err, 'E_SESSION_EXISTS')) throw err; // made meanwhile by another hook: the next name
    }
  }
  throw new PdbError('E_SESSION_EXISTS', `sessions ${wanted} to ${wanted}-999 all exist`, { hint: 'pdb-env list; pdb-env discard NAME' });
}

export interface HookRemoveResult {
  session: string;
  store: string;
  /** The last checkpoint, pinned so that gc keeps it after the session is gone. */
  snapshot: string;
  changes: number;
  discarded: boolean;
}

/**
 * The session whose root is `path` (a store's sessions/NAME/root), or E_SESSION_NOT_FOUND. With
 * `storeOption`, only a session of that store (`why` says which store it is, for the message).
 */
export function sessionAt(path: string, storeOption?: string, why = ''): { store: string; name: string; root: string } {
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    throw new PdbError('E_SESSION_NOT_FOUND', `${path} does not exist, so it is no session's root`, { path });
  }
  const store = storeOption ? realpathOr(storeOption) : findEnclosingStore(real);
  const rel = store ? relative(store, real).split(sep) : [];
  if (!store || rel.length !== 3 || rel[0] !== 'sessions' || rel[2] !== 'root' || !SESSION_NAME_PATTERN.test(rel[1]!))
    throw new PdbError(
      'E_SESSION_NOT_FOUND',
      `${path} is not the root of a ${storeOption ? `session of the store ${storeOption}${why}` : 'pdb-env session'}`,
      {
        path,
        hint: 'Only worktrees made by pdb-env hook claude-code are removed by it; remove others with git worktree remove.',
      },
    );
  return { store, name: rel[1]!, root: real };
}

/** WorktreeRemove: checkpoint (pinned: nothing is lost), then discard; refused while other processes work in it. */
export async function hookRemove(input: HookInput, o: HookOptions): Promise<HookRemoveResult> {
  // Without --store: only the store this hook's cwd resolves to, as a create there would (issue 41:
  // a remove once checkpointed and discarded sessions of two other stores).
  const cwd = text(input.raw.cwd);
  const from = cwd && isAbsolute(cwd) ? cwd : process.cwd();
  const store = o.store ?? resolveStoreDir({ cwd: realpathOr(from) });
  const at = sessionAt(absolutePath(input.raw, 'worktree_path'), store, o.store ? '' : ` (the store for ${from})`);
  const svc = await SessionService.open(at.store);
  // Claude Code (and this hook, its child) may sit in the directory: they are the caller, not live work.
  const live = processesInDir(at.root, ancestorPids(process.pid).add(process.pid));
  if (live.length)
    throw new PdbError(
      'E_SESSION_BUSY',
      `session "${at.name}" has live processes in its root: ${live.map((p) => `${p.pid} (${p.comm})`).join(', ')}; it was not removed`,
      { hint: `End them, then remove the worktree again (pdb-env ps ${at.name} lists what pdb-env started there).` },
    );
  const k = await svc.checkpoint(at.name);
  await svc.pin(k.snapshot);
  const d = await svc.discard(at.name);
  o.say(
    `pdb-env: session ${at.name} checkpointed as ${k.snapshot} (${k.changes} changes, pinned) and discarded; ` +
      `pdb-env create NAME --base ${k.snapshot} brings it back, pdb-env unpin ${k.snapshot} lets gc free it`,
  );
  return { session: at.name, store: at.store, snapshot: k.snapshot, changes: k.changes, discarded: d.discarded };
}

/** The .claude/settings.json fragment that installs the hooks, running this pdb-env by absolute path. */
export function hookSettings(command: string): Record<string, unknown> {
  const entry = (timeout: number) => [{ hooks: [{ type: 'command', command, timeout }] }];
  // A create copies the project (full-copy on a plain filesystem): more than Claude Code's default minute on a large tree.
  // A turn's checkpoint is a stat walk (0.15 s on a 24,600-entry monorepo, issue 38): a minute is room enough.
  return { hooks: { WorktreeCreate: entry(600), WorktreeRemove: entry(600), UserPromptSubmit: entry(60), Stop: entry(60) } };
}

export interface TurnResult {
  event: (typeof TURN_EVENTS)[number];
  /** The session checkpointed, or null when the hook's cwd is in none (nothing was done). */
  session: string | null;
  number?: number;
  snapshot?: string;
  label?: string;
}

/** The session whose root holds `dir` (its root or below), or null: a user's other projects are not sessions. */
export function sessionHolding(dir: string, storeOption?: string): { store: string; name: string } | null {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    return null;
  }
  for (const store of [storeOption ? realpathOr(storeOption) : null, findEnclosingStore(real)]) {
    if (!store) continue;
    const rel = relative(store, real).split(sep);
    if (rel.length >= 3 && rel[0] === 'sessions' && rel[2] === 'root' && SESSION_NAME_PATTERN.test(rel[1]!))
      return { store, name: rel[1]! };
  }
  return null;
}

/** A prompt as a one-line label: its first line, at most 72 characters. */
export function promptLabel(prompt: unknown): string {
  const line = (typeof prompt === 'string' ? prompt : '').trim().split('\n')[0]!.replace(/\s+/g, ' ');
  return line.length > 72 ? `${line.slice(0, 71)}…` : line;
}

/**
 * UserPromptSubmit: a checkpoint labelled "before turn: PROMPT" before Claude acts; Stop: one
 * labelled "after turn: PROMPT" (the prompt of the turn's "before" checkpoint). Outside a session:
 * nothing. The caller prints nothing on stdout (Claude Code adds a UserPromptSubmit hook's stdout
 * to the model's context) and never exits 2 (which would block the prompt or keep Claude going).
 */
export async function hookTurn(input: HookInput, o: HookOptions): Promise<TurnResult> {
  const event = input.event as TurnResult['event'];
  const cwd = text(input.raw.cwd);
  const at = cwd && isAbsolute(cwd) ? sessionHolding(cwd, o.store) : null;
  if (!at) return { event, session: null };
  const svc = await SessionService.open(at.store);
  const { readLogLines, turnMark } = await import('../history/log.js');
  const lines = readLogLines(svc.store, at.name);
  let label: string;
  if (event === 'UserPromptSubmit') label = `before turn: ${promptLabel(input.raw.prompt)}`;
  else {
    const before = [...lines].reverse().find((l) => l.label?.startsWith('before turn: '));
    label = before ? `after turn: ${before.label!.slice('before turn: '.length)}` : 'after turn';
  }
  const phase = event === 'UserPromptSubmit' ? 'before' : 'after';
  const k = await svc.checkpoint(at.name, { label, turn: turnMark(lines, 'claude-code', phase, null) });
  o.say(`pdb-env: checkpoint ${k.number} of ${at.name} (${label})`);
  return { event, session: at.name, number: k.number, snapshot: k.snapshot, label };
}
