// The operation contract every agent is given, as data: the base tree it starts from, the prompt
// that asks for it, the result it must produce, and the after-the-fact verification of a result.
// Two agents get the same contract with different roles ("a", "b"), so each one's changes are
// recognisable and the peer's can be shown absent.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { sha256Digest } from '../model/canonical-json.js';
import { entryKey, type Entry } from '../model/snapshot.js';

export const CONTRACT_VERSION = 1 as const;
export const AGENT_ROLES = ['a', 'b'] as const;
export type AgentRole = (typeof AGENT_ROLES)[number];

export function peerOf(role: AgentRole): AgentRole {
  return role === 'a' ? 'b' : 'a';
}

export function isAgentRole(value: unknown): value is AgentRole {
  return typeof value === 'string' && (AGENT_ROLES as readonly string[]).includes(value);
}

/** The base both sessions start from. run.sh is deliberately not executable. */
export const BASE_FILES: Record<string, { content: string; exec: boolean }> = {
  'README.md': {
    content: '# agent contract fixture\n\nTwo agents work on this tree at the same time, each in its own session.\n',
    exec: false,
  },
  'docs/guide.md': { content: '# guide\n\nThe relative symlink of each agent points here.\n', exec: false },
  'shared.txt': { content: 'line shared by every agent\n', exec: false },
  'remove-me.txt': { content: 'both agents delete this file\n', exec: false },
  'rename-me.txt': { content: 'both agents rename this file\n', exec: false },
  'run.sh': { content: '#!/bin/sh\necho run\n', exec: false },
  'src/index.ts': { content: 'export const answer = 42;\n', exec: false },
  // Untouched by the contract; at 64 KiB it is large enough for clone backends to observe shared
  // extents (FIEMAP), which small files inline in btrfs metadata never show.
  'assets/reference.txt': { content: Array.from({ length: 4096 }, (_, i) => `reference line ${i}\n`).join(''), exec: false },
};

/** Paths of one role's contract, relative to the session root. */
export function contractPaths(role: AgentRole) {
  return {
    shared: 'shared.txt',
    deleted: 'remove-me.txt',
    renameFrom: 'rename-me.txt',
    renameTo: `renamed-${role}.txt`,
    exec: 'run.sh',
    outDir: `out/${role}`,
    nestedFile: `out/${role}/nested/deep/result.txt`,
    symlink: `out/${role}/guide.md`,
    symlinkTarget: '../../docs/guide.md',
    report: `out/${role}/report.json`,
  };
}

export function sharedLine(role: AgentRole): string {
  return `edited by agent-${role}`;
}

export function nestedContent(role: AgentRole): string {
  return `agent-${role}\n`;
}

/** What an agent writes into its report: where it ran and under which session name. */
export interface AgentReport {
  contract: typeof CONTRACT_VERSION;
  agent: string;
  role: AgentRole;
  /** process.cwd() of the agent (absolute; stays in the session, never in a receipt). */
  cwd: string;
  /** The cwd the ACP client gave in session/new, when the agent ran over ACP. */
  sessionCwd?: string | null;
  /** PDB_ENV_SESSION as the agent saw it. */
  session: string | null;
  /** Entries the agent saw in the base before changing anything (top level). */
  baseEntriesSeen?: number;
  /** Whether any of the peer's outputs were visible to it. Must be false. */
  peerOutputSeen?: boolean;
  /** Over ACP: a client read of a path outside the root was refused. */
  outsideReadRefused?: boolean | null;
}

/** The machine-readable line that lets the scripted agent find its role in a prompt. */
export const CONTRACT_MARKER = 'pdb-env-contract:';

export function contractPrompt(role: AgentRole): string {
  const p = contractPaths(role);
  return [
    'You are working in the current directory, a private copy of a small project. Do exactly these steps, using shell commands or file edits, and nothing else:',
    '1. Read README.md and list the files in the current directory.',
    `2. Append the line "${sharedLine(role)}" to ${p.shared}, keeping its existing content.`,
    `3. Delete ${p.deleted}.`,
    `4. Rename ${p.renameFrom} to ${p.renameTo} (content unchanged).`,
    `5. Create the directory ${dirname(p.nestedFile)} and write the file ${p.nestedFile} containing the single line "agent-${role}".`,
    `6. Create a relative symbolic link ${p.symlink} pointing to ${p.symlinkTarget}.`,
    `7. Make ${p.exec} executable (chmod +x ${p.exec}).`,
    `8. Write ${p.report} containing the JSON object {"contract": 1, "agent": "<your name>", "role": "${role}", "cwd": "<output of pwd>", "session": "<value of the PDB_ENV_SESSION environment variable>"}.`,
    'Do not touch any other file, and do not read or write outside the current directory.',
    `${CONTRACT_MARKER} ${JSON.stringify({ version: CONTRACT_VERSION, role })}`,
  ].join('\n');
}

/** The role a prompt asks for, from its marker line; null when the prompt has none. */
export function roleFromPrompt(text: string): AgentRole | null {
  for (const line of text.split('\n')) {
    const i = line.indexOf(CONTRACT_MARKER);
    if (i < 0) continue;
    try {
      const parsed = JSON.parse(line.slice(i + CONTRACT_MARKER.length)) as { role?: unknown };
      if (isAgentRole(parsed.role)) return parsed.role;
    } catch {
      /* not our marker */
    }
  }
  return null;
}

/** Write the base tree into `dir` (which must not exist yet or be empty). */
export function writeContractBase(dir: string): void {
  for (const [path, f] of Object.entries(BASE_FILES)) {
    const abs = join(dir, path);
    mkdirSync(dirname(abs), { recursive: true });
    writeFileSync(abs, f.content);
    chmodSync(abs, f.exec ? 0o755 : 0o644);
  }
}

function fileEntry(path: string, content: string, exec: boolean): Entry {
  return { path, kind: 'file', digest: sha256Digest(content), size: Buffer.byteLength(content), exec };
}

function withDirs(files: Entry[]): Entry[] {
  const dirs = new Set<string>();
  for (const e of files) {
    const parts = e.path.split('/');
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
  }
  return [...[...dirs].map((path): Entry => ({ path, kind: 'dir' })), ...files];
}

export function baseEntries(): Entry[] {
  return sortByPath(withDirs(Object.entries(BASE_FILES).map(([path, f]) => fileEntry(path, f.content, f.exec))));
}

/**
 * The exact result the contract asks of `role`, without the report (its cwd and session name
 * differ per session by design, so it is verified separately, not compared).
 */
export function expectedEntries(role: AgentRole): Entry[] {
  const p = contractPaths(role);
  const files: Entry[] = [];
  for (const [path, f] of Object.entries(BASE_FILES)) {
    if (path === p.deleted) continue;
    if (path === p.renameFrom) files.push(fileEntry(p.renameTo, f.content, f.exec));
    else if (path === p.shared) files.push(fileEntry(path, `${f.content}${sharedLine(role)}\n`, f.exec));
    else if (path === p.exec) files.push(fileEntry(path, f.content, true));
    else files.push(fileEntry(path, f.content, f.exec));
  }
  files.push(fileEntry(p.nestedFile, nestedContent(role), false));
  files.push({ path: p.symlink, kind: 'symlink', target: p.symlinkTarget });
  return sortByPath(withDirs(files));
}

function sortByPath(entries: Entry[]): Entry[] {
  return [...entries].sort((x, y) => Buffer.compare(Buffer.from(x.path), Buffer.from(y.path)));
}

export interface ContractFinding {
  /** Short, path-free name of the contract item. */
  item: string;
  passed: boolean;
  detail: string;
}

/**
 * Verify one session's result (entries from its checkpoint) against the contract for `role`.
 * `readText` returns a file's bytes from the session root; its digest must equal the entry's, so
 * what is inspected is what was checkpointed. Works for any agent: exact content is not required
 * of the shared file, only its base content followed by this role's line and no peer line.
 */
export async function verifyContract(
  entries: Entry[],
  role: AgentRole,
  readBytes: (path: string) => Promise<Buffer>,
): Promise<ContractFinding[]> {
  const p = contractPaths(role);
  const q = contractPaths(peerOf(role));
  const byPath = new Map(entries.map((e) => [e.path, e]));
  const out: ContractFinding[] = [];
  const add = (item: string, passed: boolean, detail: string) => out.push({ item, passed, detail });

  const checkpointed = async (path: string): Promise<string | null> => {
    const e = byPath.get(path);
    if (!e || e.kind !== 'file') return null;
    const bytes = await readBytes(path).catch(() => null);
    if (!bytes || sha256Digest(bytes) !== e.digest) return null;
    return bytes.toString('utf8');
  };

  const shared = await checkpointed(p.shared);
  const base = BASE_FILES[p.shared]!.content;
  const lines = shared?.split('\n') ?? [];
  add(
    'shared-edited',
    shared !== null && shared.startsWith(base) && lines.includes(sharedLine(role)),
    `${p.shared} keeps the base and has this role's line`,
  );
  add('peer-edit-absent', shared !== null && !lines.includes(sharedLine(peerOf(role))), `${p.shared} has no line of the peer`);
  add('deleted', !byPath.has(p.deleted), `${p.deleted} is gone`);
  const renamed = byPath.get(p.renameTo);
  const original = fileEntry(p.renameTo, BASE_FILES[p.renameFrom]!.content, false);
  add(
    'renamed',
    !byPath.has(p.renameFrom) && renamed?.kind === 'file' && original.kind === 'file' && renamed.digest === original.digest,
    `${p.renameFrom} became ${p.renameTo} unchanged`,
  );
  const exec = byPath.get(p.exec);
  add('exec-bit', exec?.kind === 'file' && exec.exec, `${p.exec} is executable`);
  const link = byPath.get(p.symlink);
  add('relative-symlink', link?.kind === 'symlink' && link.target === p.symlinkTarget, `${p.symlink} -> ${p.symlinkTarget}`);
  const nested = await checkpointed(p.nestedFile);
  add('nested-output', nested !== null && nested.trim() === nestedContent(role).trim(), `${p.nestedFile} holds agent-${role}`);
  add(
    'peer-output-absent',
    ![...byPath.keys()].some((k) => k === q.outDir || k.startsWith(`${q.outDir}/`) || k === q.renameTo),
    `nothing of out/${peerOf(role)} or ${q.renameTo}`,
  );
  const untouched = Object.keys(BASE_FILES).filter((k) => ![p.shared, p.deleted, p.renameFrom, p.exec].includes(k));
  const baseByPath = new Map(baseEntries().map((e) => [e.path, e]));
  const keyOf = (e: Entry | undefined) => (e ? entryKey(e) : 'absent');
  const changed = untouched.filter((k) => keyOf(byPath.get(k)) !== keyOf(baseByPath.get(k)));
  add(
    'rest-of-base-unchanged',
    changed.length === 0,
    changed.length === 0 ? 'files outside the contract equal the base' : `${changed.length} file(s) outside the contract changed`,
  );
  return out;
}

/** Read and validate an agent's report from the checkpointed bytes; null when absent or malformed. */
export function parseReport(text: string | null): AgentReport | null {
  if (text === null) return null;
  try {
    const r = JSON.parse(text) as Partial<AgentReport>;
    if (typeof r.cwd !== 'string' || !isAgentRole(r.role)) return null;
    return {
      contract: CONTRACT_VERSION,
      agent: typeof r.agent === 'string' ? r.agent : 'unknown',
      role: r.role,
      cwd: r.cwd,
      sessionCwd: typeof r.sessionCwd === 'string' ? r.sessionCwd : null,
      session: typeof r.session === 'string' ? r.session : null,
      baseEntriesSeen: typeof r.baseEntriesSeen === 'number' ? r.baseEntriesSeen : undefined,
      peerOutputSeen: typeof r.peerOutputSeen === 'boolean' ? r.peerOutputSeen : undefined,
      outsideReadRefused: typeof r.outsideReadRefused === 'boolean' ? r.outsideReadRefused : null,
    };
  } catch {
    return null;
  }
}
