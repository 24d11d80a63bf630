// Shared test helpers: real temporary trees (one per test, removed after unless PDB_KEEP_TMP=1),
// a CLI runner against the built binary, and skip-with-reason.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CLI = join(REPO_ROOT, 'dist', 'cli', 'bin.js');

export function tempDir(prefix = 'pdb-test-'): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return {
    dir,
    cleanup() {
      if (process.env.PDB_KEEP_TMP === '1') console.log(`kept ${dir}`);
      else rmSync(dir, { recursive: true, force: true });
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

/** Print the reason a test is skipped in the form the test runner collects. */
export function skipReason(name: string, reason: string): void {
  console.log(`SKIP ${name}: ${reason}`);
}
