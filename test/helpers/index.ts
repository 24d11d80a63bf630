// Shared test helpers: real temporary trees (one per test, removed after unless PDB_KEEP_TMP=1),
// a CLI runner against the built binary, and the one way a test says what did not run.
import { execFileSync, spawn as spawnChild, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requiredAgents } from '../../agents/real/catalog.js';
import { agentsCacheDir, findInstalled } from '../../agents/real/install.js';
import { readProcStat } from '../../model/os/proc.js';
import { cliEntry } from '../../model/paths.js';
import { removeOwner, writeOwner } from './stale-temp.js';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const CLI = cliEntry();

export function tempDir(prefix = 'pdb-test-'): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  // If this process is killed before cleanup, the runner's next start releases what it left (stale-temp.ts).
  writeOwner(dir);
  return {
    dir,
    cleanup() {
      if (process.env.PDB_KEEP_TMP === '1') console.log(`kept ${dir}`);
      else {
        rmSync(dir, { recursive: true, force: true });
        removeOwner(dir);
      }
    },
  };
}

/** A tree description: string = file content, { exec } = executable file, { link } = symlink, {} nested = dir. */
export type TreeSpec = { [name: string]: string | { content: string; exec: true } | { link: string } | TreeSpec };

export function writeTree(root: string, spec: TreeSpec): void {
  mkdirSync(root, { recursive: true });
  for (const [name, v] of Object.entries(spec)) {
    const p = join(root, name);
    if (typeof v === 'string') writeFileSync(p, v);
    else if ('link' in v && typeof v.link === 'string') symlinkSync(v.link, p);
    else if ('exec' in v && v.exec === true) {
      writeFileSync(p, (v as { content: string }).content);
      chmodSync(p, 0o755);
    } else writeTree(p, v as TreeSpec);
  }
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run the built CLI; never throws on a non-zero exit. */
export function cli(args: string[], options: { cwd?: string; env?: Record<string, string>; input?: string } = {}): CliResult {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd: options.cwd,
    env: { ...process.env, NO_COLOR: '1', ...options.env },
    input: options.input,
    encoding: 'utf8',
  });
  return { code: r.status ?? 128, stdout: r.stdout, stderr: r.stderr };
}

export function cliJson<T = any>(args: string[], options: Parameters<typeof cli>[1] = {}): T {
  const r = cli([...args, '--json'], options);
  if (r.code !== 0) throw new Error(`pdb-env ${args.join(' ')} exited ${r.code}: ${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

export function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

export function hasCommand(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * What a skipped test (or part of one) needed. PDB_ENV_REQUIRE=btrfs,xfs,... turns a skip for a
 * listed capability into a failure, so CI, which installs them, cannot pass by skipping.
 */
export const CAPABILITIES = [
  'root', // running as root (bind mounts, chattr)
  'btrfs', // loopback btrfs (root, btrfs-progs)
  'xfs', // loopback XFS with reflink=1 (root, xfsprogs)
  'overlay', // overlay mounts (root)
  'registry', // the npm registry, for the lanes
  'chromium', // headless Chromium, for the report screenshot
  'git', // git, for git-worktree and provenance
  'time', // GNU time (/usr/bin/time), for child CPU and RSS
  'pty', // util-linux script, to run pdb-env on a pseudo-terminal
  'no-clone-tmp', // a temporary directory on a filesystem without clones (to see a clone refused)
  'action-validator', // the workflow linter (a dev dependency)
  'bind-mount', // bind mounts (root), for the AgentFS stand-in's trial and sessions
  'agentfs', // a pinned AgentFS binary that passes its probe (never installed by CI: none is pinned)
  'procfs', // Linux /proc (a resettable VmHWM, for the harness's own peak RSS per phase)
  'cgroup2', // a cgroup v2 hierarchy (mounted in a private mount namespace as root), for per-session cgroup tracking
  'real-agents', // the pinned agent CLIs in the agent cache (pdb-env agent install), for the real-agent runs
  'opencode', // the optional opencode CLI in the agent cache (pdb-env agent install opencode; CI does not install it)
  'zsh', // zsh, to run pdb-env's zsh completion
  'fish', // fish, to run pdb-env's fish completion
  'native-scan', // the native scanner (native/walk.c), built by npm install where python3, make and a C compiler are
] as const;
export type Capability = (typeof CAPABILITIES)[number];

/** The capabilities PDB_ENV_REQUIRE names (comma or space separated). */
export function requiredCapabilities(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.PDB_ENV_REQUIRE ?? '').split(/[\s,]+/).filter(Boolean);
}

// The runner (test/run-tests.ts) finds these lines anywhere in a file's output, whatever the reporter
// printed before them on the same line.
export const SKIP_LINE = /SKIP (test|part) \[([a-z-]+)\] (.+?): (.*)$/gm;
export const REQUIRED_LINE = /REQUIRED \[([a-z-]+)\] (.+?): (.*)$/gm;

function skip(kind: 'test' | 'part', name: string, capability: Capability, reason: string): void {
  if (requiredCapabilities().includes(capability)) {
    console.log(`\nREQUIRED [${capability}] ${name}: ${reason}`);
    throw new Error(`${name} needs ${capability}, which PDB_ENV_REQUIRE requires: ${reason}`);
  }
  console.log(`\nSKIP ${kind} [${capability}] ${name}: ${reason}`);
}

/**
 * The rest of this test does not run: `return skipTest(...)`. The runner counts the test as skipped,
 * not passed, and names it; with its capability in PDB_ENV_REQUIRE the test fails instead.
 */
export function skipTest(name: string, capability: Capability, reason: string): void {
  skip('test', name, capability, reason);
}

/** One part of a test that otherwise runs is left out (counted as skipped, named; a failure when required). */
export function skipPart(name: string, capability: Capability, reason: string): void {
  skip('part', name, capability, reason);
}

/** Alive and not a zombie (a container's init may be slow to reap). */
export function processAlive(pid: number): boolean {
  const stat = readProcStat(pid);
  return stat !== null && stat.state !== 'Z';
}

/** Poll `fn` every 50 ms until it returns something truthy; an Error naming `what` after `ms`. */
export async function until<T>(what: string, fn: () => T | null | undefined | false, ms = 15_000): Promise<T> {
  for (const deadline = Date.now() + ms; ; await new Promise((r) => setTimeout(r, 50))) {
    const v = fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
  }
}

/** Why the npm registry cannot be used here (the lanes install from it), or null when it answers. */
export function registryProblem(): string | null {
  const r = spawnSync('npm', ['view', 'typescript@5.9.3', 'version', '--prefer-online'], { encoding: 'utf8', timeout: 30_000 });
  if (r.status === 0 && r.stdout.trim() === '5.9.3') return null;
  return `the npm registry is unreachable (npm view exited ${r.status ?? r.signal}); the lanes install from it`;
}

/** Why the real-agents capability is missing (the pinned agents not all in the agent cache), or null when it is there. */
export function realAgentsMissing(env: NodeJS.ProcessEnv = process.env): string | null {
  const missing = requiredAgents().filter((a) => !findInstalled(a, env));
  return missing.length ? `${missing.join(', ')} not installed in ${agentsCacheDir(env)} (pdb-env agent install)` : null;
}

/** Run a program to its end (killed after `timeoutMs`), collecting its exit code and output: a real agent CLI in the agent tests. */
export function runCaptured(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
  timeoutMs = 180_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawnChild(command, [...args], { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
