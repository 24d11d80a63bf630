// The random-kill campaign of the fault suite: apply (with and without a user editing the target
// meanwhile), export --patch, export --git, publish --rebase and gc itself, each killed with
// SIGKILL at a random moment (not at a crash point), then gc, doctor and verify through the CLI,
// and the one question that matters: is every result either untouched or whole?
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import type { Random } from '../../../harness/plan/prng.js';
import { diffEntries, type Entry } from '../../../model/snapshot.js';
import { SessionService } from '../../../sessions/service.js';
import { filesOf, targetState } from '../apply-fixture.js';
import { FAULT_CLI, json, pdb, pdbAsync, type Run } from './fault-helpers.js';
import { writeTree, type TreeSpec } from '../index.js';
import { gitRun } from '../way-back-fixture.js';

export interface Campaign {
  dir: string;
  src: string;
  store: string;
  svc: SessionService;
  random: Random;
  /** The session whose checkpoint is applied and exported, its base and result. */
  base: Entry[];
  result: Entry[];
  /** What an uncrashed export gives, and how long each operation takes uncrashed (ms). */
  patch: Buffer;
  tree: string;
  took: Record<Op, number>;
  counts: Record<Op, { killed: number; finished: number }>;
}

/** The source's excludes (pdb-env.json): node_modules is in every copy, in no Snapshot. */
const EXCLUDES = ['node_modules'];

export const OPS = ['apply', 'apply-edit', 'export-patch', 'export-git', 'publish-rebase', 'gc'] as const;
export type Op = (typeof OPS)[number];

/** A git source of a few hundred files: text, binary, executable, symlink, a directory to retype, an excluded node_modules. */
function source(dir: string): void {
  const pkg: TreeSpec = {};
  for (let p = 0; p < 6; p++) {
    const mods: TreeSpec = {};
    for (let m = 0; m < 30; m++) mods[`mod${m}.ts`] = `export const m${p}_${m} = ${m};\n`;
    pkg[`pkg${p}`] = mods;
  }
  const docs: TreeSpec = {};
  for (let d = 0; d < 50; d++) docs[`${d}.md`] = `# doc ${d}\n`;
  writeTree(dir, {
    ...pkg,
    docs,
    bin: { tool: { content: '#!/bin/sh\necho tool\n', exec: true } },
    assets: { 'blob.bin': Buffer.alloc(256 << 10, 3).toString('latin1') },
    'retype-me': { 'a.txt': 'a\n', 'b.txt': 'b\n' },
    'file-to-dir.txt': 'a file for now\n',
    link: { link: 'docs/0.md' },
    '.gitignore': 'node_modules\n',
    'pdb-env.json': '{"excludes":["node_modules"]}\n',
  });
  gitRun(dir, ['init', '-q', '-b', 'main']);
  gitRun(dir, ['-c', 'user.name=t', '-c', 'user.email=t@t', 'add', '-A']);
  gitRun(dir, ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'base']);
  writeTree(dir, { node_modules: { x: { 'index.js': 'module.exports = 1;\n' } } });
}

/** The session's changes: about 300 paths of every kind of change. */
function change(root: string): void {
  for (let p = 0; p < 6; p++)
    for (let m = 0; m < 15; m++) writeFileSync(join(root, `pkg${p}/mod${m}.ts`), `export const changed = ${p * m};\n`);
  mkdirSync(join(root, 'new/deep'), { recursive: true });
  for (let i = 0; i < 100; i++) writeFileSync(join(root, `new/${i}.txt`), `new ${i}\n`);
  for (let i = 0; i < 50; i++) writeFileSync(join(root, `new/deep/${i}.txt`), `deep ${i}\n`);
  for (let d = 0; d < 20; d++) rmSync(join(root, `docs/${d}.md`));
  rmSync(join(root, 'retype-me'), { recursive: true });
  writeFileSync(join(root, 'retype-me'), 'a file now\n');
  rmSync(join(root, 'file-to-dir.txt'));
  mkdirSync(join(root, 'file-to-dir.txt'));
  writeFileSync(join(root, 'file-to-dir.txt/inner.txt'), 'inner\n');
  chmodSync(join(root, 'bin/tool'), 0o644);
  rmSync(join(root, 'link'));
  symlinkSync('docs/30.md', join(root, 'link'));
  writeFileSync(join(root, 'assets/blob.bin'), Buffer.alloc(256 << 10, 9));
}

/** Run the CLI and kill it (SIGKILL) after `delayMs`, unless it ended first. */
export function runKilled(
  store: string,
  args: string[],
  delayMs: number,
  onStart?: () => void,
): Promise<Run & { killed: boolean; ms: number }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [FAULT_CLI, ...args], { env: { ...process.env, NO_COLOR: '1', PDB_ENV_STORE: store } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    onStart?.();
    let killed = false;
    const timer = setTimeout(() => {
      killed = child.exitCode === null && child.signalCode === null && child.kill('SIGKILL');
    }, delayMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? 128, stdout, stderr, signal, killed: killed && signal === 'SIGKILL', ms: Date.now() - t0 });
    });
  });
}

/** The campaign's store, session and references (an uncrashed apply, patch and export, with their durations). */
export async function openCampaign(dir: string, random: Random): Promise<Campaign> {
  const src = join(dir, 'src');
  source(src);
  const store = join(dir, 'store');
  const svc = await SessionService.open(store, { create: true });
  const s = await svc.create('s', { from: src });
  change(s.root);
  const cp = await svc.checkpoint('s');
  const c: Campaign = {
    dir,
    src,
    store,
    svc,
    random,
    base: svc.readSnapshot(svc.store.getDocument<{ base: `sha256:${string}` }>(cp.changeset).base).entries,
    result: svc.readSnapshot(cp.snapshot).entries,
    patch: Buffer.alloc(0),
    tree: '',
    took: Object.fromEntries(OPS.map((o) => [o, 0])) as Campaign['took'],
    counts: Object.fromEntries(OPS.map((o) => [o, { killed: 0, finished: 0 }])) as Campaign['counts'],
  };
  const timed = async (op: Op, args: string[]) => {
    const t0 = Date.now();
    json(await pdbAsync(store, [...args, '--json']));
    c.took[op] = Date.now() - t0;
  };
  await timed('apply', ['apply', 's', '--to', targetCopy(c, 'reference')]);
  c.took['apply-edit'] = c.took.apply;
  await timed('export-patch', ['export', 's', '--patch', join(dir, 'reference.patch')]);
  c.patch = readFileSync(join(dir, 'reference.patch'));
  await timed('export-git', ['export', 's', '--git', '--branch', 'reference']);
  c.tree = gitRun(src, ['rev-parse', 'reference^{tree}']).trim();
  c.took['publish-rebase'] = c.took.apply;
  c.took.gc = c.took.apply;
  return c;
}

/** A fresh copy of the source (its .git and ignored files included) to apply into. */
export function targetCopy(c: Campaign, label: string): string {
  const to = join(c.dir, 'targets', label);
  mkdirSync(join(c.dir, 'targets'), { recursive: true });
  execFileSync('cp', ['-a', c.src, to]);
  return to;
}

/** After an operation: gc, doctor and verify through the CLI, each clean. */
export async function assertStoreWhole(c: Campaign, where: string, mayRollBack = false): Promise<void> {
  const gc = await pdbAsync(c.store, ['gc', '--json']);
  assert.is(gc.code, 0, `${where}: gc exited ${gc.code}: ${gc.stdout}${gc.stderr}`);
  // With nobody else in the target, an apply past its staging is finished: a rollback means a false conflict.
  if (!mayRollBack) assert.not.match(gc.stdout, /roll back/, `${where}: gc rolled back an apply nobody got in the way of: ${gc.stdout}`);
  assert.equal(json(await pdbAsync(c.store, ['doctor', '--json'])).findings, [], `${where}: doctor after gc`);
  const verify = await pdbAsync(c.store, ['verify', '--json']);
  assert.is(verify.code, 0, `${where}: verify: ${verify.stdout}`);
}

/** The target is the base or the session's result, nothing between; with `edited`, that path is the user's and the rest is one or the other. */
export async function assertUntouchedOrApplied(c: Campaign, target: string, where: string, edited?: { path: string; bytes: string }) {
  if (!edited) {
    const state = await targetState(target, c.base, c.result, EXCLUDES);
    assert.ok(state === 'untouched' || state === 'applied', `${where}: the target is ${state}`);
    assert.not.ok(existsSync(join(target, '.pdb')), `${where}: the staging was left`);
    return state;
  }
  assert.is(readFileSync(join(target, edited.path), 'utf8'), edited.bytes, `${where}: the user's edit of ${edited.path} was lost`);
  const others = (es: Entry[]) => es.filter((e) => e.path !== edited.path);
  const now = others(await filesOf(target, EXCLUDES));
  const state =
    diffEntries(others(c.base), now).length === 0 ? 'untouched' : diffEntries(others(c.result), now).length === 0 ? 'applied' : null;
  assert.ok(
    state,
    `${where}: besides the edit, the target is neither untouched nor applied: ${await targetState(target, c.base, c.result, EXCLUDES)}`,
  );
  return state;
}
