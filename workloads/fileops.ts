// The core file-operation matrix: create, read, edit, append, truncate, delete, rename, relative
// symlink, exec bit, nested directories, a large file, a tree of many small files, re-entry in a
// second process through `pdb-env run`, cleanup. Every operation is deterministic, and its effect
// on the tree is modelled here too, so the oracle's expected result is computed in advance from
// the base entries (and the full-copy case is checked against it like every other backend).
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { appendFile, chmod, mkdir, open, readFile, rename, rm, symlink, truncate, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sha256Digest, type Digest } from '../model/canonical-json.js';
import { PdbError } from '../model/errors.js';
import { sortEntries, type Entry } from '../model/snapshot.js';
import type { Fixture, ProcessRunner, Step, StepContext, Workload } from './types.js';

// ---- a tiny in-memory tree, for expected results ----------------------------------------------

/** Entries by path, with the operations a workload performs; used to compute expected results. */
export class TreeModel {
  readonly entries = new Map<string, Entry>();

  constructor(base: Entry[]) {
    for (const e of base) this.entries.set(e.path, e);
  }

  private parents(path: string): void {
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const p = parts.slice(0, i).join('/');
      if (!this.entries.has(p)) this.entries.set(p, { path: p, kind: 'dir' });
    }
  }

  mkdir(path: string): void {
    this.parents(path);
    if (!this.entries.has(path)) this.entries.set(path, { path, kind: 'dir' });
  }

  /** Write a whole file; an existing file keeps its exec bit (writes go through the same inode). */
  write(path: string, bytes: Buffer | string, exec?: boolean): void {
    this.parents(path);
    const old = this.entries.get(path);
    const buf = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
    this.entries.set(path, {
      path,
      kind: 'file',
      digest: sha256Digest(buf),
      size: buf.length,
      exec: exec ?? (old?.kind === 'file' ? old.exec : false),
    });
  }

  /** Set a file's digest and size directly (for large files hashed by streaming). */
  writeDigest(path: string, digest: Digest, size: number): void {
    const old = this.entries.get(path);
    this.parents(path);
    this.entries.set(path, { path, kind: 'file', digest, size, exec: old?.kind === 'file' ? old.exec : false });
  }

  chmod(path: string, exec: boolean): void {
    const e = this.entries.get(path);
    if (e?.kind !== 'file') throw new Error(`model: ${path} is not a file`);
    this.entries.set(path, { ...e, exec });
  }

  symlink(path: string, target: string): void {
    this.parents(path);
    this.entries.set(path, { path, kind: 'symlink', target });
  }

  remove(path: string): void {
    for (const p of [...this.entries.keys()]) if (p === path || p.startsWith(`${path}/`)) this.entries.delete(p);
  }

  rename(from: string, to: string): void {
    this.parents(to);
    for (const [p, e] of [...this.entries]) {
      if (p === from || p.startsWith(`${from}/`)) {
        this.entries.delete(p);
        const q = to + p.slice(from.length);
        this.entries.set(q, { ...e, path: q });
      }
    }
  }

  get(path: string): Entry | undefined {
    return this.entries.get(path);
  }

  result(): Entry[] {
    return sortEntries([...this.entries.values()]);
  }
}

// ---- deterministic content ---------------------------------------------------------------------

const MiB = 1024 * 1024;

/** One MiB (or less, for the tail) of pseudo-random bytes, a pure function of (stream, index). */
export function pseudoRandomChunk(stream: number, index: number, size = MiB): Buffer {
  const words = new Uint32Array(Math.ceil(size / 4));
  let x = (Math.imul(index + 1, 0x9e3779b1) ^ Math.imul(stream + 7, 0x85ebca6b)) >>> 0 || 1;
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    words[i] = x;
  }
  return Buffer.from(words.buffer, 0, size);
}

function* largeChunks(stream: number, bytes: number): Generator<Buffer> {
  for (let i = 0, left = bytes; left > 0; i++, left -= MiB) yield pseudoRandomChunk(stream, i, Math.min(MiB, left));
}

const LARGE_STREAM = 1;
const APPEND_STREAM = 2;
const APPEND_BYTES = MiB;

const smallContent = (i: number): string => `small file ${i}\n`;
const smallEdited = (i: number): string => `small file ${i}, edited in the session\n`;
const smallPath = (i: number): string => `tree/d${String(Math.floor(i / 100)).padStart(4, '0')}/f${String(i).padStart(6, '0')}.txt`;
const newSmallPath = (i: number): string => `generated/g${String(Math.floor(i / 100)).padStart(4, '0')}/n${String(i).padStart(6, '0')}.txt`;

export interface FileopsParams {
  smallFiles: number;
  largeFileBytes: number;
  newSmallFiles: number;
}

function readParams(params: Record<string, unknown>): FileopsParams {
  const p = { ...FILEOPS_DEFAULTS, ...params } as unknown as FileopsParams;
  for (const k of ['smallFiles', 'largeFileBytes', 'newSmallFiles'] as const) {
    if (!Number.isInteger(p[k]) || p[k] < 0)
      throw new PdbError('E_PLAN_INVALID', `fileops: ${k} must be a non-negative integer, got ${String(p[k])}`);
  }
  return p;
}

export const FILEOPS_DEFAULTS = {
  /** Small files in the base tree (the full plan uses at least 20,000). */
  smallFiles: 20_000,
  /** Bytes of the large base file (the full plan uses at least 256 MiB). */
  largeFileBytes: 256 * MiB,
  /** Small files the session writes in a fresh nested tree. */
  newSmallFiles: 2_000,
};

// Fixed base files the operations act on.
const BASE_FILES: Record<string, string> = {
  'README.md': '# fileops fixture\n\nA deterministic tree for the pdb-env file-operation matrix.\n',
  'src/edit-me.txt': 'original line 1\noriginal line 2\n',
  'src/append-me.log': 'log line 0\n',
  'src/delete-me.txt': 'this file is deleted by the session\n',
  'src/rename-me.txt': 'this file is renamed by the session\n',
  'src/keep.txt': 'this file stays as it is\n',
  'src/moving-dir/a.txt': 'a\n',
  'src/moving-dir/deep/b.txt': 'b\n',
  'doomed-dir/x.txt': 'x\n',
  'doomed-dir/sub/y.txt': 'y\n',
  'bin/tool.sh': '#!/bin/sh\necho tool\n',
  'bin/was-exec.sh': '#!/bin/sh\necho was exec\n',
};
const TRUNCATE_PATH = 'src/truncate-me.bin';
const TRUNCATE_BYTES = 64 * 1024;
const TRUNCATE_TO = 100;
const LARGE_PATH = 'large/blob.bin';

const EDITED = 'edited line 1\nedited line 2\nedited line 3\n';
const APPENDED_LOG = 'log line 1, appended\n';
const REENTRY_MARKER = 'reentry ok: the second process saw the session and its own earlier edit\n';

const editEvery = (p: FileopsParams): number[] => {
  const out: number[] = [];
  for (let i = 0; i < p.smallFiles; i += 100) out.push(i);
  return out;
};

// ---- the fixture ------------------------------------------------------------------------------

async function writeLarge(path: string, stream: number, bytes: number, flag: 'w' | 'a'): Promise<void> {
  const fh = await open(path, flag);
  try {
    for (const chunk of largeChunks(stream, bytes)) await fh.write(chunk);
  } finally {
    await fh.close();
  }
}

async function prepareFileopsFixture(workDir: string, params: Record<string, unknown>, proc: ProcessRunner): Promise<Fixture> {
  const p = readParams(params);
  // The name identifies the fixture exactly (it is reused by name within a run's work dir).
  const large = p.largeFileBytes % MiB === 0 ? `${p.largeFileBytes / MiB}m` : `${p.largeFileBytes}b`;
  const name = `fileops@1-${p.smallFiles}f-${large}`;
  const dir = join(workDir, name);
  const done = join(workDir, `${name}.ready`);
  if (existsSync(done)) return { name, sourceDir: dir };
  await rm(dir, { recursive: true, force: true });
  for (const [rel, content] of Object.entries(BASE_FILES)) {
    await mkdir(join(dir, rel, '..'), { recursive: true });
    await writeFile(join(dir, rel), content);
  }
  await chmod(join(dir, 'bin/tool.sh'), 0o644);
  await chmod(join(dir, 'bin/was-exec.sh'), 0o755);
  await writeFile(join(dir, TRUNCATE_PATH), pseudoRandomChunk(3, 0, TRUNCATE_BYTES));
  await mkdir(join(dir, 'links'), { recursive: true });
  await symlink('../README.md', join(dir, 'links/readme'));
  await mkdir(join(dir, 'large'), { recursive: true });
  await writeLarge(join(dir, LARGE_PATH), LARGE_STREAM, p.largeFileBytes, 'w');
  for (let i = 0; i < p.smallFiles; i++) {
    if (i % 100 === 0) await mkdir(join(dir, smallPath(i), '..'), { recursive: true });
    await writeFile(join(dir, smallPath(i)), smallContent(i));
  }
  await commitFixture(dir, proc);
  await writeFile(done, '');
  return { name, sourceDir: dir };
}

/**
 * Commit the whole fixture when git is installed, so the git-worktree backend (which carries only
 * committed files) starts from the same tree as every other backend.
 */
export async function commitFixture(dir: string, proc: ProcessRunner): Promise<void> {
  const env = {
    GIT_AUTHOR_NAME: 'pdb-env',
    GIT_AUTHOR_EMAIL: 'fixture@pdb-env.invalid',
    GIT_COMMITTER_NAME: 'pdb-env',
    GIT_COMMITTER_EMAIL: 'fixture@pdb-env.invalid',
    GIT_CONFIG_NOSYSTEM: '1',
    HOME: dir,
  };
  const git = async (...args: string[]) => {
    const r = await proc.run('git', args, { cwd: dir, env, timeoutMs: 300_000 });
    if (r.exitCode !== 0)
      throw new PdbError(
        'E_STEP_FAILED',
        `git ${args[0]} failed while preparing the fixture (exit ${r.exitCode}): ${r.stderr.slice(0, 200)}`,
      );
  };
  try {
    await git('--version');
  } catch {
    return; // no git: git-worktree reports itself unavailable on its own
  }
  // No background auto-gc or maintenance: a detached git writing into .git races the cleanup.
  const quiet = ['-c', 'gc.auto=0', '-c', 'maintenance.auto=false', '-c', 'core.fileMode=true'];
  await git('init', '-q');
  await git(...quiet, 'add', '-A');
  await git(...quiet, 'commit', '-q', '-m', 'fixture');
}

// ---- the operations ---------------------------------------------------------------------------

function aborted(ctx: StepContext): void {
  if (ctx.signal?.aborted) throw new PdbError('E_TIMEOUT', 'the case timed out');
}

async function expectContent(root: string, rel: string, want: Buffer | string): Promise<void> {
  const got = await readFile(join(root, rel)).catch(() => null);
  const wantBuf = typeof want === 'string' ? Buffer.from(want) : want;
  if (!got || !got.equals(wantBuf))
    throw new PdbError('E_STEP_FAILED', `read ${rel}: the session does not hold the base's bytes`, { path: rel });
}

async function hashFile(path: string): Promise<{ digest: Digest; size: number }> {
  const h = createHash('sha256');
  let size = 0;
  const fh = await open(path, 'r');
  try {
    for await (const chunk of fh.createReadStream({ highWaterMark: MiB })) {
      h.update(chunk as Buffer);
      size += (chunk as Buffer).length;
    }
  } finally {
    await fh.close().catch(() => {});
  }
  return { digest: `sha256:${h.digest('hex')}`, size };
}

function hashChunks(chunks: Iterable<Buffer>): { digest: Digest; size: number } {
  const h = createHash('sha256');
  let size = 0;
  for (const c of chunks) {
    h.update(c);
    size += c.length;
  }
  return { digest: `sha256:${h.digest('hex')}`, size };
}

// Expected large-file digests depend only on the parameters; computed once per size.
const largeDigests = new Map<number, { base: { digest: Digest; size: number }; appended: { digest: Digest; size: number } }>();
function largeDigest(bytes: number) {
  let d = largeDigests.get(bytes);
  if (!d) {
    const base = hashChunks(largeChunks(LARGE_STREAM, bytes));
    const appended = hashChunks(
      (function* () {
        yield* largeChunks(LARGE_STREAM, bytes);
        yield* largeChunks(APPEND_STREAM, APPEND_BYTES);
      })(),
    );
    d = { base, appended };
    largeDigests.set(bytes, d);
  }
  return d;
}

/** Each step's effect on the tree, applied in step order to compute the expected result. */
const MODEL: Record<string, (m: TreeModel, p: FileopsParams) => void> = {
  create(m) {
    m.write('out/a/b/c/new.txt', 'a new file in new nested directories\n');
    m.write('out/new-top.txt', 'a new top-level output\n');
    m.mkdir('out/empty-dir');
    for (let i = 0; i < 3; i++) m.write(`tmp/scratch-${i}.txt`, `scratch ${i}\n`);
  },
  read() {},
  edit(m, p) {
    m.write('src/edit-me.txt', EDITED);
    for (const i of editEvery(p)) m.write(smallPath(i), smallEdited(i));
  },
  append(m, p) {
    const old = 'log line 0\n';
    m.write('src/append-me.log', old + APPENDED_LOG);
    if (p.largeFileBytes > 0) {
      const d = largeDigest(p.largeFileBytes).appended;
      m.writeDigest(LARGE_PATH, d.digest, d.size);
    }
  },
  truncate(m) {
    m.write(TRUNCATE_PATH, pseudoRandomChunk(3, 0, TRUNCATE_BYTES).subarray(0, TRUNCATE_TO));
  },
  delete(m) {
    m.remove('src/delete-me.txt');
    m.remove('doomed-dir');
  },
  rename(m) {
    m.rename('src/rename-me.txt', 'src/renamed.txt');
    m.rename('src/moving-dir', 'src/moved-dir');
  },
  symlink(m) {
    m.symlink('links/to-edit', '../src/edit-me.txt');
    m.remove('links/readme');
    m.symlink('links/readme', '../src/keep.txt');
    m.symlink('links/out-dir', '../out/a');
  },
  exec(m) {
    m.chmod('bin/tool.sh', true);
    m.chmod('bin/was-exec.sh', false);
  },
  'small-tree'(m, p) {
    for (let i = 0; i < p.newSmallFiles; i++) m.write(newSmallPath(i), `new small file ${i}\n`);
  },
  reentry(m) {
    m.write('reentry/marker.txt', REENTRY_MARKER);
  },
  cleanup(m) {
    m.remove('tmp');
  },
};

// The second process of the re-entry step: checks its session name and the earlier edit, then writes.
const REENTRY_SCRIPT = `
const fs = require('node:fs');
const [want, edited, marker] = process.argv.slice(1);
if (process.env.PDB_ENV_SESSION !== want) { console.error('PDB_ENV_SESSION is ' + process.env.PDB_ENV_SESSION + ', expected ' + want); process.exit(3); }
if (fs.readFileSync('src/edit-me.txt', 'utf8') !== edited) { console.error('the second process does not see the edit'); process.exit(4); }
fs.mkdirSync('reentry', { recursive: true });
fs.writeFileSync('reentry/marker.txt', marker);
`;

function fileopsSteps(params: Record<string, unknown>): Step[] {
  const p = readParams(params);
  const largeTimeout = 60_000 + Math.ceil(p.largeFileBytes / MiB) * 500;
  const treeTimeout = 60_000 + p.smallFiles * 5 + p.newSmallFiles * 5;
  return [
    {
      name: 'create',
      timeoutMs: 30_000,
      async run(ctx) {
        const r = ctx.session.root;
        await mkdir(join(r, 'out/a/b/c'), { recursive: true });
        await writeFile(join(r, 'out/a/b/c/new.txt'), 'a new file in new nested directories\n', { flag: 'wx' });
        await writeFile(join(r, 'out/new-top.txt'), 'a new top-level output\n', { flag: 'wx' });
        await mkdir(join(r, 'out/empty-dir'));
        await mkdir(join(r, 'tmp'));
        for (let i = 0; i < 3; i++) await writeFile(join(r, `tmp/scratch-${i}.txt`), `scratch ${i}\n`);
      },
    },
    {
      name: 'read',
      timeoutMs: largeTimeout + treeTimeout,
      async run(ctx) {
        const r = ctx.session.root;
        for (const [rel, content] of Object.entries(BASE_FILES)) await expectContent(r, rel, content);
        for (let i = 0; i < p.smallFiles; i += 97) {
          aborted(ctx);
          await expectContent(r, smallPath(i), smallContent(i));
        }
        if (p.largeFileBytes > 0) {
          const got = await hashFile(join(r, LARGE_PATH));
          const want = largeDigest(p.largeFileBytes).base;
          if (got.digest !== want.digest || got.size !== want.size)
            throw new PdbError('E_STEP_FAILED', `read ${LARGE_PATH}: the session does not hold the base's bytes`, { path: LARGE_PATH });
        }
      },
    },
    {
      name: 'edit',
      timeoutMs: treeTimeout,
      async run(ctx) {
        const r = ctx.session.root;
        // writeFile opens the existing file with O_TRUNC: an in-place write through the same inode,
        // which is exactly what a backend that shares inodes gets wrong.
        await writeFile(join(r, 'src/edit-me.txt'), EDITED);
        for (const i of editEvery(p)) {
          aborted(ctx);
          await writeFile(join(r, smallPath(i)), smallEdited(i));
        }
      },
    },
    {
      name: 'append',
      timeoutMs: largeTimeout,
      async run(ctx) {
        const r = ctx.session.root;
        await appendFile(join(r, 'src/append-me.log'), APPENDED_LOG);
        if (p.largeFileBytes > 0) await writeLarge(join(r, LARGE_PATH), APPEND_STREAM, APPEND_BYTES, 'a');
      },
    },
    {
      name: 'truncate',
      timeoutMs: 30_000,
      async run(ctx) {
        await truncate(join(ctx.session.root, TRUNCATE_PATH), TRUNCATE_TO);
      },
    },
    {
      name: 'delete',
      timeoutMs: 30_000,
      async run(ctx) {
        const r = ctx.session.root;
        await unlink(join(r, 'src/delete-me.txt'));
        await rm(join(r, 'doomed-dir'), { recursive: true });
      },
    },
    {
      name: 'rename',
      timeoutMs: 30_000,
      async run(ctx) {
        const r = ctx.session.root;
        await rename(join(r, 'src/rename-me.txt'), join(r, 'src/renamed.txt'));
        await rename(join(r, 'src/moving-dir'), join(r, 'src/moved-dir'));
      },
    },
    {
      name: 'symlink',
      timeoutMs: 30_000,
      async run(ctx) {
        const r = ctx.session.root;
        await symlink('../src/edit-me.txt', join(r, 'links/to-edit'));
        await unlink(join(r, 'links/readme'));
        await symlink('../src/keep.txt', join(r, 'links/readme'));
        await symlink('../out/a', join(r, 'links/out-dir'));
        // A relative link must resolve inside the session, whatever its absolute location.
        if ((await readFile(join(r, 'links/to-edit'), 'utf8')) !== EDITED)
          throw new PdbError('E_STEP_FAILED', 'links/to-edit does not resolve to the edited file', { path: 'links/to-edit' });
      },
    },
    {
      name: 'exec',
      timeoutMs: 30_000,
      async run(ctx) {
        const r = ctx.session.root;
        await chmod(join(r, 'bin/tool.sh'), 0o755);
        await chmod(join(r, 'bin/was-exec.sh'), 0o644);
      },
    },
    {
      name: 'small-tree',
      timeoutMs: treeTimeout,
      async run(ctx) {
        const r = ctx.session.root;
        for (let i = 0; i < p.newSmallFiles; i++) {
          if (i % 100 === 0) {
            aborted(ctx);
            await mkdir(join(r, newSmallPath(i), '..'), { recursive: true });
          }
          await writeFile(join(r, newSmallPath(i)), `new small file ${i}\n`);
        }
      },
    },
    {
      name: 'reentry',
      timeoutMs: 60_000,
      async run(ctx) {
        const result = await ctx.pdbEnvRun(
          ctx.session,
          process.execPath,
          ['-e', REENTRY_SCRIPT, ctx.session.name, EDITED, REENTRY_MARKER],
          { timeoutMs: 60_000 },
        );
        if (result.timedOut) throw new PdbError('E_TIMEOUT', 'the re-entry process did not finish in time');
        if (result.exitCode !== 0)
          throw new PdbError(
            'E_STEP_FAILED',
            `the re-entry process exited ${result.exitCode}: ${result.stderr.trim().split('\n').pop() ?? ''}`,
          );
        return { process: result };
      },
    },
    {
      name: 'cleanup',
      timeoutMs: 30_000,
      async run(ctx) {
        await rm(join(ctx.session.root, 'tmp'), { recursive: true });
      },
    },
  ];
}

export const fileopsWorkload: Workload = {
  name: 'fileops',
  description:
    'deterministic file-operation matrix (create, read, edit, append, truncate, delete, rename, symlink, exec bit, nested dirs, large file, many small files, re-entry, cleanup)',
  deterministic: true,
  sessions: 1,
  defaultParams: { ...FILEOPS_DEFAULTS },
  prepareFixture: prepareFileopsFixture,
  steps: fileopsSteps,
  project: (entries) => entries,
  projectionNote: 'identity: every entry of the result is compared',
  async expected(base, params) {
    const p = readParams(params);
    const m = new TreeModel(base);
    for (const step of fileopsSteps(params)) {
      const apply = MODEL[step.name];
      if (!apply) throw new Error(`fileops: no model for step ${step.name}`);
      apply(m, p);
    }
    return m.result();
  },
};
