// Shared by the fault tests: the real CLI (sync and async, so commands can run in parallel), a
// store per case, and checks that an error is typed (a stable code, no stack trace).
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { ObjectStore } from '../../../model/store/object-store.js';
import type { Digest } from '../../../model/canonical-json.js';
import { CLI, writeTree } from '../index.js';

/** The CLI under test; PDB_TEST_CLI points the fault tests at another build (to see them fail on an older one). */
export const FAULT_CLI = process.env.PDB_TEST_CLI ?? CLI;

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
  signal: NodeJS.Signals | null;
}

function childEnv(store: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', PDB_ENV_STORE: store, ...extra };
  if (!('PDB_ENV_CRASH_AT' in extra)) delete env.PDB_ENV_CRASH_AT;
  return env;
}

/** Run the CLI against `store`; never throws on a non-zero exit or a signal. */
export function pdb(store: string, args: string[], extra: Record<string, string> = {}, cwd?: string): Run {
  const r = spawnSync(process.execPath, [FAULT_CLI, ...args], { env: childEnv(store, extra), encoding: 'utf8', cwd });
  return { code: r.status ?? 128, stdout: r.stdout, stderr: r.stderr, signal: r.signal };
}

/** The same, without waiting: for commands run in parallel. */
export function pdbAsync(store: string, args: string[], extra: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [FAULT_CLI, ...args], { env: childEnv(store, extra) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code, signal) => resolve({ code: code ?? 128, stdout, stderr, signal }));
  });
}

/** Parse a --json answer, failing with the whole output when the command failed. */
export function json<T = any>(r: Run): T {
  if (r.code !== 0) throw new Error(`exit ${r.code}: ${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

/** The command failed with `code` (from --json output or stderr), and printed no stack trace. */
export function assertTyped(r: Run, code: string, what: string): void {
  assert.is.not(r.code, 0, `${what}: expected ${code}, it exited 0`);
  const got = r.stdout.trim().startsWith('{')
    ? (JSON.parse(r.stdout) as { error?: { code?: string } }).error?.code
    : /E_[A-Z_]+/.exec(r.stderr)?.[0];
  assert.is(got, code, `${what}: ${r.stdout}${r.stderr}`);
  assert.not.match(r.stderr, /^\s+at /m, `${what} printed a stack trace: ${r.stderr}`);
}

/** A small source tree with a file of known bytes. */
export function writeSource(dir: string): void {
  writeTree(dir, { 'a.txt': 'alpha\n', 'big.txt': 'b'.repeat(10_000), lib: { 'c.ts': 'export const c = 1;\n' } });
}

/** The object file that holds `digest`: whole, or (a chunk a later checkpoint added) deflated (model/store/deflated.ts). */
export function objectFile(store: string, digest: string): string {
  const hex = digest.slice('sha256:'.length);
  const whole = join(store, 'objects', 'sha256', hex.slice(0, 2), hex.slice(2));
  const deflated = join(store, 'objects', 'deflated', hex.slice(0, 2), hex.slice(2));
  return !existsSync(whole) && existsSync(deflated) ? deflated : whole;
}

/** Flip one bit of an object (objects are read-only files). */
export function flipByte(file: string): void {
  chmodSync(file, 0o644);
  const bytes = readFileSync(file);
  bytes[0] ^= 1;
  writeFileSync(file, bytes);
  chmodSync(file, 0o444);
}

/** The digest of a file entry in a Snapshot, read through the store (whole or as chunks). */
export function fileDigest(store: string, snapshot: string, path: string): string {
  const doc = ObjectStore.open(store).getDocument<{ entries: Array<{ path: string; digest?: string }> }>(snapshot as Digest, 'Snapshot');
  const e = doc.entries.find((x) => x.path === path);
  if (!e?.digest) throw new Error(`${path} is not a file of ${snapshot}`);
  return e.digest;
}

export function entriesOf(dir: string): string[] {
  return readdirSync(dir).sort();
}
