// What an agent can do, learned from its request: the tools it declares, classified by the shape
// of their argument schemas (a command string is a shell; a path and content a write; a path, old
// and new text an edit), not by a table of agents. Measured: Codex CLI 0.171.0 and codex-acp
// 0.16.0 declare exec_command {cmd, sandbox_permissions, ...} and no patch tool, but their
// instructions say to call `apply_patch` through it (Codex intercepts `apply_patch <<'EOF'`);
// Claude Code 2.1.197 and claude-agent-acp 0.49.0 declare Bash {command}, Write {file_path,
// content}, Edit {file_path, old_string, new_string} and Read {file_path}; opencode declares
// bash, write {filePath, content}, edit {filePath, oldString, newString} and read.
import { asRecord, type ToolSpec } from './conversation.js';

export interface ShellTool {
  name: string;
  /** The argument that holds the command: a string (cmd, command) or an argv array. */
  arg: string;
  argv: boolean;
  /** How to ask to run outside the agent's sandbox, when its schema offers it (Codex: sandbox_permissions). */
  escalation: { prop: string; value: string; justification: string | null } | null;
}

export interface FileTool {
  name: string;
  path: string;
}

/** Reads more output of a shell command still running (Codex: write_stdin {session_id, chars: ""}). */
export interface PollTool {
  name: string;
  session: string;
  chars: string;
  /** How long the poll may wait, when the tool takes it. */
  yieldMs: string | null;
}

export interface ToolCatalog {
  shell: ShellTool | null;
  poll: PollTool | null;
  write: (FileTool & { content: string }) | null;
  edit: (FileTool & { old: string; new: string }) | null;
  read: FileTool | null;
  /** A patch in Codex's apply_patch format: its own tool, or a command of the shell tool. */
  patch: { via: 'tool'; name: string; custom: boolean; arg: string | null } | { via: 'shell' } | null;
}

const PATH_PROPS = ['file_path', 'filePath', 'path', 'absolute_path', 'filename'];
const CONTENT_PROPS = ['content', 'contents', 'file_text', 'text'];
const OLD_PROPS = ['old_string', 'oldString', 'old_str', 'old_text', 'oldText'];
const NEW_PROPS = ['new_string', 'newString', 'new_str', 'new_text', 'newText'];

function properties(t: ToolSpec): Record<string, Record<string, unknown>> {
  const props = asRecord(t.parameters?.properties) ?? {};
  const out: Record<string, Record<string, unknown>> = {};
  for (const [k, v] of Object.entries(props)) out[k] = asRecord(v) ?? {};
  return out;
}

const isType = (p: Record<string, unknown> | undefined, type: string) =>
  !!p && (p.type === type || (Array.isArray(p.type) && p.type.includes(type)));

/** The base name of a tool, without an MCP prefix ("mcp__acp__Write" -> "Write"). */
function baseName(name: string): string {
  return name.split('__').pop()!;
}

/** The candidate whose name matches `prefer` first, else the first one. */
function pick<T extends { name: string }>(candidates: T[], prefer: RegExp): T | null {
  return candidates.find((c) => prefer.test(baseName(c.name))) ?? candidates[0] ?? null;
}

function shellOf(t: ToolSpec): ShellTool | null {
  if (t.type !== 'function') return null;
  const props = properties(t);
  const arg = ['cmd', 'command'].find((k) => isType(props[k], 'string') || isType(props[k], 'array'));
  if (!arg) return null;
  // A tool that also takes a file path is not a shell (e.g. an editor with a "command" verb).
  if (PATH_PROPS.some((k) => k in props)) return null;
  const sp = props.sandbox_permissions;
  const escalate = Array.isArray(sp?.enum) ? (sp.enum as unknown[]).find((v) => v === 'require_escalated') : undefined;
  return {
    name: t.name,
    arg,
    argv: isType(props[arg], 'array'),
    escalation:
      typeof escalate === 'string'
        ? { prop: 'sandbox_permissions', value: escalate, justification: 'justification' in props ? 'justification' : null }
        : null,
  };
}

function pollOf(t: ToolSpec): PollTool | null {
  if (t.type !== 'function') return null;
  const props = properties(t);
  const session = ['session_id', 'sessionId'].find((k) => isType(props[k], 'number') || isType(props[k], 'integer'));
  if (!session || !isType(props.chars, 'string')) return null;
  return { name: t.name, session, chars: 'chars', yieldMs: isType(props.yield_time_ms, 'number') ? 'yield_time_ms' : null };
}

function fileToolOf(t: ToolSpec): { path: string; props: Record<string, Record<string, unknown>> } | null {
  if (t.type !== 'function') return null;
  const props = properties(t);
  const path = PATH_PROPS.find((k) => isType(props[k], 'string'));
  return path ? { path, props } : null;
}

function patchOf(t: ToolSpec): ToolCatalog['patch'] {
  if (baseName(t.name) !== 'apply_patch') return null;
  if (t.type === 'custom') return { via: 'tool', name: t.name, custom: true, arg: null };
  const props = properties(t);
  const arg = ['input', 'patch'].find((k) => isType(props[k], 'string'));
  return arg ? { via: 'tool', name: t.name, custom: false, arg } : null;
}

/** Classify the declared tools; `text` (the instructions) tells whether apply_patch runs through the shell. */
export function toolCatalog(tools: ToolSpec[], text: string): ToolCatalog {
  const shells: ShellTool[] = [];
  const writes: NonNullable<ToolCatalog['write']>[] = [];
  const edits: NonNullable<ToolCatalog['edit']>[] = [];
  const reads: FileTool[] = [];
  let patch: ToolCatalog['patch'] = null;
  let poll: PollTool | null = null;
  for (const t of tools) {
    patch ??= patchOf(t);
    poll ??= pollOf(t);
    const shell = shellOf(t);
    if (shell) shells.push(shell);
    const file = fileToolOf(t);
    if (!file) continue;
    const has = (names: string[]) => names.find((k) => isType(file.props[k], 'string'));
    const [content, old, neu] = [has(CONTENT_PROPS), has(OLD_PROPS), has(NEW_PROPS)];
    if (old && neu) edits.push({ name: t.name, path: file.path, old, new: neu });
    else if (content) writes.push({ name: t.name, path: file.path, content });
    else if (/read|view|cat/i.test(baseName(t.name)) && !/image|notebook/i.test(t.name)) reads.push({ name: t.name, path: file.path });
  }
  const shell = pick(shells, /^(bash|shell|exec_command|run_shell_command|local_shell)$/i);
  // Codex without a patch tool: its instructions name apply_patch and the shell tool runs it.
  if (!patch && shell && /apply_patch/.test(text) && /\*\*\* Begin Patch/.test(text)) patch = { via: 'shell' };
  return {
    shell,
    poll,
    write: pick(writes, /^write/i),
    edit: pick(edits, /^(edit|replace|str_replace)/i),
    read: pick(reads, /^read/i),
    patch,
  };
}

/** The session root the agent works in, as its request states it (Codex: <cwd>; Claude Code: "Primary working directory:"). */
export function findCwd(text: string): string | null {
  const patterns = [/<cwd>([^<\n]+)<\/cwd>/, /[Pp]rimary working directory:\s*(\/[^\n]*)/, /[Ww]orking directory:\s*(\/[^\n]*)/];
  for (const re of patterns) {
    const m = re.exec(text);
    if (m) return m[1]!.trim();
  }
  return null;
}

/** A short description of a catalog for logs and errors: "shell=exec_command patch=shell". */
export function describeCatalog(c: ToolCatalog): string {
  const parts = [
    c.shell && `shell=${c.shell.name}`,
    c.write && `write=${c.write.name}`,
    c.edit && `edit=${c.edit.name}`,
    c.read && `read=${c.read.name}`,
    c.patch && `patch=${c.patch.via === 'tool' ? c.patch.name : 'shell'}`,
  ].filter(Boolean);
  return parts.length ? parts.join(' ') : 'no usable tool';
}
