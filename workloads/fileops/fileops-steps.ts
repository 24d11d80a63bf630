// The fileops steps, one function each, in the order a session performs them. Each one's effect
// on the tree is modelled in expected.ts under the same step name.
import { createHash } from 'node:crypto';
import { appendFile, chmod, mkdir, open, readFile, rename, rm, symlink, truncate, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Digest } from '../../model/canonical-json.js';
import { PdbError } from '../../model/errors.js';
import type { Step, StepContext } from '../types.js';
import {
  APPEND_BYTES,
  APPEND_STREAM,
  APPENDED_LOG,
  BASE_FILES,
  EDITED,
  editEvery,
  LARGE_PATH,
  largeDigest,
  MiB,
  newSmallPath,
  readParams,
  REENTRY_MARKER,
  smallContent,
  smallEdited,
  smallPath,
  TRUNCATE_PATH,
  TRUNCATE_TO,
  writeLarge,
  type FileopsParams,
} from './matrix.js';

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

/** A step that only touches the session root. */
function rootStep(name: string, timeoutMs: number, run: (root: string, ctx: StepContext) => Promise<void>): Step {
  return {
    name,
    timeoutMs,
    async run(ctx) {
      await run(ctx.session.root, ctx);
    },
  };
}

const createStep = () =>
  rootStep('create', 30_000, async (r) => {
    await mkdir(join(r, 'out/a/b/c'), { recursive: true });
    await writeFile(join(r, 'out/a/b/c/new.txt'), 'a new file in new nested directories\n', { flag: 'wx' });
    await writeFile(join(r, 'out/new-top.txt'), 'a new top-level output\n', { flag: 'wx' });
    await mkdir(join(r, 'out/empty-dir'));
    await mkdir(join(r, 'tmp'));
    for (let i = 0; i < 3; i++) await writeFile(join(r, `tmp/scratch-${i}.txt`), `scratch ${i}\n`);
  });

const readStep = (p: FileopsParams, timeoutMs: number) =>
  rootStep('read', timeoutMs, async (r, ctx) => {
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
  });

const editStep = (p: FileopsParams, timeoutMs: number) =>
  rootStep('edit', timeoutMs, async (r, ctx) => {
    // writeFile opens the existing file with O_TRUNC: an in-place write through the same inode,
    // which is exactly what a backend that shares inodes gets wrong.
    await writeFile(join(r, 'src/edit-me.txt'), EDITED);
    for (const i of editEvery(p)) {
      aborted(ctx);
      await writeFile(join(r, smallPath(i)), smallEdited(i));
    }
  });

const appendStep = (p: FileopsParams, timeoutMs: number) =>
  rootStep('append', timeoutMs, async (r) => {
    await appendFile(join(r, 'src/append-me.log'), APPENDED_LOG);
    if (p.largeFileBytes > 0) await writeLarge(join(r, LARGE_PATH), APPEND_STREAM, APPEND_BYTES, 'a');
  });

const truncateStep = () => rootStep('truncate', 30_000, (r) => truncate(join(r, TRUNCATE_PATH), TRUNCATE_TO));

const deleteStep = () =>
  rootStep('delete', 30_000, async (r) => {
    await unlink(join(r, 'src/delete-me.txt'));
    await rm(join(r, 'doomed-dir'), { recursive: true });
  });

const renameStep = () =>
  rootStep('rename', 30_000, async (r) => {
    await rename(join(r, 'src/rename-me.txt'), join(r, 'src/renamed.txt'));
    await rename(join(r, 'src/moving-dir'), join(r, 'src/moved-dir'));
  });

const symlinkStep = () =>
  rootStep('symlink', 30_000, async (r) => {
    await symlink('../src/edit-me.txt', join(r, 'links/to-edit'));
    await unlink(join(r, 'links/readme'));
    await symlink('../src/keep.txt', join(r, 'links/readme'));
    await symlink('../out/a', join(r, 'links/out-dir'));
    // A relative link must resolve inside the session, whatever its absolute location.
    if ((await readFile(join(r, 'links/to-edit'), 'utf8')) !== EDITED)
      throw new PdbError('E_STEP_FAILED', 'links/to-edit does not resolve to the edited file', { path: 'links/to-edit' });
  });

const execStep = () =>
  rootStep('exec', 30_000, async (r) => {
    await chmod(join(r, 'bin/tool.sh'), 0o755);
    await chmod(join(r, 'bin/was-exec.sh'), 0o644);
  });

const smallTreeStep = (p: FileopsParams, timeoutMs: number) =>
  rootStep('small-tree', timeoutMs, async (r, ctx) => {
    for (let i = 0; i < p.newSmallFiles; i++) {
      if (i % 100 === 0) {
        aborted(ctx);
        await mkdir(join(r, newSmallPath(i), '..'), { recursive: true });
      }
      await writeFile(join(r, newSmallPath(i)), `new small file ${i}\n`);
    }
  });

// The second process of the re-entry step: checks its session name and the earlier edit, then writes.
const REENTRY_SCRIPT = `
const fs = require('node:fs');
const [want, edited, marker] = process.argv.slice(1);
if (process.env.PDB_ENV_SESSION !== want) { console.error('PDB_ENV_SESSION is ' + process.env.PDB_ENV_SESSION + ', expected ' + want); process.exit(3); }
if (fs.readFileSync('src/edit-me.txt', 'utf8') !== edited) { console.error('the second process does not see the edit'); process.exit(4); }
fs.mkdirSync('reentry', { recursive: true });
fs.writeFileSync('reentry/marker.txt', marker);
`;

const reentryStep = (): Step => ({
  name: 'reentry',
  timeoutMs: 60_000,
  async run(ctx) {
    const result = await ctx.pdbEnvRun(ctx.session, process.execPath, ['-e', REENTRY_SCRIPT, ctx.session.name, EDITED, REENTRY_MARKER], {
      timeoutMs: 60_000,
    });
    if (result.timedOut) throw new PdbError('E_TIMEOUT', 'the re-entry process did not finish in time');
    if (result.exitCode !== 0)
      throw new PdbError(
        'E_STEP_FAILED',
        `the re-entry process exited ${result.exitCode}: ${result.stderr.trim().split('\n').pop() ?? ''}`,
      );
    return { process: result };
  },
});

const cleanupStep = () => rootStep('cleanup', 30_000, (r) => rm(join(r, 'tmp'), { recursive: true }));

export function fileopsSteps(params: Record<string, unknown>): Step[] {
  const p = readParams(params);
  const largeTimeout = 60_000 + Math.ceil(p.largeFileBytes / MiB) * 500;
  const treeTimeout = 60_000 + p.smallFiles * 5 + p.newSmallFiles * 5;
  return [
    createStep(),
    readStep(p, largeTimeout + treeTimeout),
    editStep(p, treeTimeout),
    appendStep(p, largeTimeout),
    truncateStep(),
    deleteStep(),
    renameStep(),
    symlinkStep(),
    execStep(),
    smallTreeStep(p, treeTimeout),
    reentryStep(),
    cleanupStep(),
  ];
}
