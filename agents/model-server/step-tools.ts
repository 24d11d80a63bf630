// The tool calls that carry out one cassette step, and how their results are judged. Shell
// commands end with a marker printed only on exit status 0 (`printf 'pdb-env-step-%s:%s' ok ID`,
// so the marker never appears in the command's own text, whatever an agent echoes); file tools
// are judged by their error flag and text; Codex's apply_patch by its "Success. Updated the
// following files" line.
import { posix } from 'node:path';
import type { CassetteStep } from '../cassette/cassette.js';
import type { ToolResultText } from './conversation.js';
import type { ToolCatalog } from './tools.js';

/** Single-quoted for sh: every byte literal, Unicode included. */
export function shq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The marker a successful shell call prints. */
export function okMarker(token: string): string {
  return `pdb-env-step-ok:${token}`;
}

// Codex's exec policy rejects `rm -rf` and `rm -f` under approval "never" ("Rejected(...)"): delete
// with `rm -r` after checking the path exists, which is the cassette's meaning anyway.

/**
 * A shell script around `body`: run in the session root (an agent's shell may keep a cwd between
 * calls), in a subshell so `exit` in a step ends only the step, then the marker on success.
 */
export function wrapShell(body: string, token: string, cwd: string | null): string {
  const cd = cwd ? `cd -- ${shq(cwd)} || exit 1\n` : '';
  return `${cd}(\n${body}\n)\ns=$?\nif [ "$s" -eq 0 ]; then printf 'pdb-env-step-%s:%s\\n' ok ${shq(token)}; fi\nexit $s`;
}

const exists = (p: string) => `{ [ -e ${shq(p)} ] || [ -L ${shq(p)} ]; }`;
const parentOf = (p: string) => posix.dirname(p);
const mkParent = (p: string) => (parentOf(p) === '.' ? 'true' : `mkdir -p -- ${shq(parentOf(p))}`);

function base64Write(path: string, content: string): string {
  return `${mkParent(path)} && printf '%s' ${shq(Buffer.from(content, 'utf8').toString('base64'))} | base64 -d > ${shq(path)}`;
}

/** The shell body of a step that has no native tool here (or of a write or edit through the shell). */
export function shellBody(step: CassetteStep, newContent?: string): string {
  switch (step.action) {
    case 'write':
      return base64Write(step.path, step.content);
    case 'edit':
      return base64Write(step.path, newContent ?? '');
    case 'delete':
      return `if ${exists(step.path)}; then rm -r -- ${shq(step.path)}; else echo ${shq(`${step.path}: no such file`)} >&2; exit 1; fi`;
    case 'rename':
      return [
        `${exists(step.from)} || { echo ${shq(`${step.from}: no such file`)} >&2; exit 1; }`,
        `! ${exists(step.to)} || { echo ${shq(`${step.to}: exists already`)} >&2; exit 1; }`,
        `${mkParent(step.to)} && mv -- ${shq(step.from)} ${shq(step.to)}`,
      ].join('\n');
    case 'symlink':
      return [
        `! ${exists(step.path)} || { echo ${shq(`${step.path}: exists already`)} >&2; exit 1; }`,
        `${mkParent(step.path)} && ln -s -- ${shq(step.target)} ${shq(step.path)}`,
      ].join('\n');
    case 'chmod':
      return `chmod ${step.mode === '+x' ? 'a+x' : 'a-x'} -- ${shq(step.path)}`;
    case 'mkdir':
      return `mkdir -p -- ${shq(step.path)}`;
    case 'shell':
      return step.command;
    default: {
      const never: never = step;
      return String(never);
    }
  }
}

/**
 * Bytes of a file read through the shell per call. Measured: Codex 0.171.0, running a model it has
 * no metadata for, cuts a call's output at about 10 KB ("Warning: truncated output"), whatever
 * max_output_tokens asks; 6 KiB is 8 KiB of base64, so larger files are read in pieces.
 */
export const READ_CHUNK_BYTES = 6 * 1024;

/**
 * Reads a piece of a file through the shell so that its bytes survive any output framing: its size,
 * then base64, between markers (tail's complaint when head has read enough is silenced: it would
 * land between them).
 */
export function readBody(path: string, offset = 0): string {
  const p = shq(path);
  return `printf 'pdb-env-%s:%s:' read "$(wc -c < ${p} | tr -d ' ')"; tail -c +${offset + 1} -- ${p} 2>/dev/null | head -c ${READ_CHUNK_BYTES} | base64 -w0; printf ':%s\\n' end`;
}

/** The file's size and the piece's bytes from a readBody result, or null when the markers are not there (not read, or cut short). */
export function parseRead(output: string): { size: number; bytes: Buffer } | null {
  const m = /pdb-env-read:(\d+):([A-Za-z0-9+/=]*):end/.exec(output);
  return m ? { size: Number(m[1]), bytes: Buffer.from(m[2]!, 'base64') } : null;
}

/** Whether apply_patch can carry `text` exactly: it writes whole lines, each ended by "\n". */
export function patchSafe(text: string): boolean {
  return text.endsWith('\n') && !text.includes('\r');
}

export function addFilePatch(path: string, content: string): string {
  const lines = content.slice(0, -1).split('\n');
  return ['*** Begin Patch', `*** Add File: ${path}`, ...lines.map((l) => `+${l}`), '*** End Patch'].join('\n');
}

function occurrences(lines: string[], block: string[]): number {
  let n = 0;
  for (let i = 0; i + block.length <= lines.length; i++) if (block.every((l, j) => lines[i + j] === l)) n++;
  return n;
}

/**
 * An Update File hunk that turns `before` into `after`: the changed lines with up to three lines of
 * context, or Add File with the whole new text when that block is not unique in the file (apply_patch
 * would patch the first match) or the change has no lines around it to anchor on.
 */
export function updatePatch(path: string, before: string, after: string): string {
  const a = before.slice(0, -1).split('\n');
  const b = after.slice(0, -1).split('\n');
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const ctxStart = Math.max(0, pre - 3);
  const ctxEnd = Math.min(a.length, a.length - suf + 3);
  const block = a.slice(ctxStart, ctxEnd);
  if (block.length === 0 || occurrences(a, block) !== 1) return addFilePatch(path, after);
  const hunk = [
    ...a.slice(ctxStart, pre).map((l) => ` ${l}`),
    ...a.slice(pre, a.length - suf).map((l) => `-${l}`),
    ...b.slice(pre, b.length - suf).map((l) => `+${l}`),
    ...a.slice(a.length - suf, ctxEnd).map((l) => ` ${l}`),
  ];
  return ['*** Begin Patch', `*** Update File: ${path}`, '@@', ...hunk, '*** End Patch'].join('\n');
}

/** apply_patch as a shell command (Codex intercepts this form). The patch's own lines all start with a marker, so EOF cannot end it early. */
export function patchCommand(patch: string): string {
  return `apply_patch <<'EOF'\n${patch}\nEOF`;
}

export type ResultKind = 'shell' | 'file-tool' | 'patch' | 'read';

const ERROR_WORDS = /\b(error|failed|failure|denied|refused|rejected|not found|aborted|permission)\b/i;

/** Whether a tool result says the call did what it was asked (`token` names the call for shell markers). */
export function resultOk(kind: ResultKind, r: ToolResultText, token: string): boolean {
  if (r.isError === true) return false;
  switch (kind) {
    case 'shell':
      return r.output.includes(okMarker(token));
    case 'patch':
      if (/Success\. Updated the following files/.test(r.output)) return true;
      return r.isError === false && !ERROR_WORDS.test(r.output);
    case 'file-tool':
      return r.isError === false || !ERROR_WORDS.test(r.output);
    case 'read':
      return true;
    default: {
      const never: never = kind;
      return Boolean(never);
    }
  }
}

/** A shell failure that the agent's sandbox caused, so asking to run outside it may help (Codex read-only mode). */
export function sandboxRefused(output: string): boolean {
  return /Read-only file system|Operation not permitted|Permission denied/.test(output);
}

/** A path as the agent's file tool wants it: absolute under the cwd when the cwd is known. */
export function toolPath(cwd: string | null, path: string): string {
  return cwd ? posix.normalize(posix.join(cwd, path)) : path;
}

/** The shell call's arguments for `script`, with the escalation request when `escalate`. */
export function shellArgs(shell: NonNullable<ToolCatalog['shell']>, script: string, escalate: string | null): Record<string, unknown> {
  const args: Record<string, unknown> = { [shell.arg]: shell.argv ? ['bash', '-lc', script] : script };
  if (escalate && shell.escalation) {
    args[shell.escalation.prop] = shell.escalation.value;
    if (shell.escalation.justification) args[shell.escalation.justification] = escalate;
  }
  return args;
}
