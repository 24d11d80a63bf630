// The swap campaign of issue 41: apply, restore and discard killed (SIGKILL) at random moments
// while a child process swaps a directory they write in with a link to an outside directory
// (renameat2 RENAME_EXCHANGE in a loop), then gc with the loop stopped, and three counts that
// must stay 0: lost (a base file of DIR whose bytes are neither at its path nor in DIR/.pdb/kept,
// a session's file gone while the session is not, or a file of the tree before a restore neither
// in the root nor in its safety checkpoint), wrong (a path holding bytes that are neither the
// base's nor the session's, outside bytes inside DIR, or a restored root that is neither exactly
// the tree before nor exactly the target), outside (anything of the outside directory changed,
// or made there). apply-swap-campaign.test.ts runs a few rounds; the
// full campaign runs by hand (docs/development.md, the fault suite):
//   node dist/test/sessions/way-back/apply/swap-campaign.js --kills 100 --seed 41
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createRandom } from '../../../../harness/plan/prng.js';
import type { Digest } from '../../../../model/canonical-json.js';
import type { Snapshot } from '../../../../model/snapshot.js';
import { ObjectStore } from '../../../../model/store/object-store.js';
import { SessionService } from '../../../../sessions/service.js';
import { isMainModule } from '../../../../scripts/lib.js';
import { writeTree, tempDir, type TreeSpec } from '../../../helpers/index.js';
import { pdb } from '../../../helpers/faults/fault-helpers.js';
import { runKilled } from '../../../helpers/faults/kill-campaign.js';
import { startSwapLoop } from '../../../helpers/swap-loop.js';

const N = 60;

export interface SwapCampaignResult {
  rounds: number;
  killed: Record<Op, number>;
  finished: Record<Op, number>;
  lost: number;
  wrong: number;
  outside: number;
  /** What each nonzero count was, one line per finding. */
  findings: string[];
}

/** Every file below `dir` (no link followed) with its text. */
function contents(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  if (!existsSync(dir)) return out;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const p = join(e.parentPath, e.name);
    if (e.isFile()) out.set(p.slice(dir.length + 1), readFileSync(p, 'utf8'));
  }
  return out;
}

/** Every name below `dir` and every file's text, as one string. */
const signature = (dir: string) => JSON.stringify([readdirSync(dir, { recursive: true }).map(String).sort(), [...contents(dir)].sort()]);

export const OPS = ['apply', 'restore', 'discard'] as const;
export type Op = (typeof OPS)[number];

/** A tree as compared by the restore rounds: each path below `dir` (but .pdb) with its kind and content. */
function treeOf(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const p = join(e.parentPath, e.name);
    const rel = p.slice(dir.length + 1);
    if (rel === '.pdb' || rel.startsWith('.pdb/')) continue;
    out.set(rel, e.isFile() ? `file ${readFileSync(p, 'utf8')}` : e.isSymbolicLink() ? 'link' : e.isDirectory() ? 'dir' : 'other');
  }
  return out;
}

const sameTree = (a: Map<string, string>, b: Map<string, string>) => a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);

/** The restore session's two checkpoints: 1 (A) and 2 (B), each with files of its own in d/ and a directory of its own. */
function restoreTrees(root: string, which: 'A' | 'B'): void {
  const other = which === 'A' ? 'B' : 'A';
  rmSync(join(root, 'd', `only${other}`), { recursive: true, force: true });
  mkdirSync(join(root, 'd', `only${which}`), { recursive: true });
  for (let i = 0; i < N; i++) {
    writeFileSync(join(root, 'd', `f${i}.txt`), `${which} ${i}\n`);
    rmSync(join(root, 'd', `${other}${i}.txt`), { force: true });
    writeFileSync(join(root, 'd', `${which}${i}.txt`), `${which} new ${i}\n`);
    writeFileSync(join(root, 'd', `only${which}`, `${i}.txt`), `${which} deep ${i}\n`);
  }
}

interface Round {
  dir: string;
  src: string;
  store: string;
  svc: SessionService;
  outside: string;
  took: Record<Op, number>;
  r: SwapCampaignResult;
  /** The restore session's checkpoint its root is at (1 or 2), and its two trees. */
  restore: { at: 1 | 2; trees: Record<1 | 2, Map<string, string>> };
  finding: (kind: 'lost' | 'wrong' | 'outside', line: string) => void;
}

/** apply into a copy of the source, DIR/d swapped with a link to OUTSIDE once the staging appears; killed after `delay`; gc; the checks. */
async function applyRound(c: Round, round: number, delay: number, label: string): Promise<void> {
  const { store, r, finding } = c;
  const target = join(c.dir, `t${round}`);
  execFileSync('cp', ['-a', c.src, target]);
  symlinkSync(c.outside, join(target, 'dl'));
  const loop = startSwapLoop(target, 'd', 'dl', join(target, '.pdb'));
  const run = await runKilled(store, ['apply', 's', '--to', target], delay);
  await loop.stop();
  if (!run.killed && run.code === 0) c.took.apply = Math.max(c.took.apply * 0.8, run.ms);
  r[run.killed ? 'killed' : 'finished'].apply++;
  rmSync(join(target, 'dl'));
  const gc = pdb(store, ['gc']);
  if (gc.code !== 0) finding('wrong', `${label}: gc exited ${gc.code}: ${gc.stderr.trim()}`);
  const kept = [...contents(join(target, '.pdb/kept')).values()];
  for (let i = 0; i < N; i++) {
    const p = join(target, 'd', `f${i}.txt`);
    const base = `d ${i}\n`;
    if (existsSync(p)) {
      if (![base, `session ${i}\n`].includes(readFileSync(p, 'utf8'))) finding('wrong', `${label}: d/f${i}.txt holds neither version`);
    } else if (!kept.includes(base)) finding('lost', `${label}: d/f${i}.txt is gone and its base bytes are found nowhere`);
    const n = join(target, 'd', `n${i}.txt`);
    if (existsSync(n) && readFileSync(n, 'utf8') !== `new ${i}\n`) finding('wrong', `${label}: d/n${i}.txt holds other bytes`);
  }
  for (const [p, v] of contents(target)) if (v.startsWith('outside ')) finding('wrong', `${label}: outside bytes in DIR at ${p}`);
  rmSync(target, { recursive: true, force: true });
}

/** discard a new session while its directory is swapped with a link to OUTSIDE; killed after `delay`; gc; the checks. */
async function discardRound(c: Round, round: number, delay: number, label: string): Promise<void> {
  const { store, r, finding } = c;
  const name = `v${round}`;
  const v = await c.svc.create(name, { from: c.src });
  const sessions = join(store, 'sessions');
  symlinkSync(c.outside, join(sessions, `${name}-link`));
  const loop = startSwapLoop(sessions, name, `${name}-link`);
  const run = await runKilled(store, ['discard', name], delay);
  await loop.stop();
  if (!run.killed && run.code === 0) c.took.discard = Math.max(c.took.discard * 0.8, run.ms);
  r[run.killed ? 'killed' : 'finished'].discard++;
  if (lstatSync(join(sessions, `${name}-link`), { throwIfNoEntry: false })?.isSymbolicLink()) rmSync(join(sessions, `${name}-link`));
  const gc = pdb(store, ['gc']);
  if (gc.code !== 0) finding('wrong', `${label}: gc exited ${gc.code}: ${gc.stderr.trim()}`);
  // The session is gone, or whole where it is listed.
  if (existsSync(join(sessions, name, 'session.json')) && readFileSync(join(v.root, 'a.txt'), 'utf8') !== 'alpha\n')
    finding('lost', `${label}: session ${name} lost a.txt`);
  // A session the discard could not reach (its name was a link at that moment) is discarded again, plainly.
  pdb(store, ['discard', name]);
}

/**
 * restore session r to its other checkpoint, with uncheckpointed work in the root first (the tree
 * before differs from both checkpoints), r/d swapped with r/dl (a link to OUTSIDE, in both
 * checkpoints) once the restore's staging appears; killed after `delay`; gc; the checks.
 */
async function restoreRound(c: Round, round: number, delay: number, label: string): Promise<void> {
  const { store, r, finding, restore } = c;
  const root = join(store, 'sessions', 'r', 'root');
  writeFileSync(join(root, 'd', 'f0.txt'), `work of round ${round}\n`);
  writeFileSync(join(root, 'd', `u${round}.txt`), `u ${round}\n`);
  rmSync(join(root, 'd', 'f1.txt'), { force: true });
  const before = treeOf(root);
  const to = restore.at === 1 ? 2 : 1;
  const loop = startSwapLoop(root, 'd', 'dl', join(root, '.pdb'));
  const run = await runKilled(store, ['restore', 'r', '--to', String(to)], delay);
  await loop.stop();
  if (!run.killed && run.code === 0) c.took.restore = Math.max(c.took.restore * 0.8, run.ms);
  r[run.killed ? 'killed' : 'finished'].restore++;
  const gc = pdb(store, ['gc']);
  if (gc.code !== 0) finding('wrong', `${label}: gc exited ${gc.code}: ${gc.stderr.trim()}`);
  const after = treeOf(root);
  if (sameTree(after, before)) return;
  if (!sameTree(after, restore.trees[to])) {
    const odd = [...new Set([...after.keys(), ...before.keys()])].filter(
      (k) => after.get(k) !== before.get(k) && after.get(k) !== restore.trees[to].get(k),
    );
    finding('wrong', `${label}: the root is neither the tree before nor checkpoint ${to} (${odd.slice(0, 5).join(', ')})`);
    return;
  }
  restore.at = to;
  // Restored: the tree before must be the safety checkpoint, every file of it in the store.
  const s = ObjectStore.open(store);
  const log = await c.svc.log('r');
  const want = `before restore to ${to}`;
  const safety = log.checkpoints.find((cp) => cp.label === want && cp.number > 2 && !cp.collected && safetyHolds(s, cp.snapshot, before));
  if (!safety) finding('lost', `${label}: restored, but no safety checkpoint holds the tree before`);
}

/** Does Snapshot `digest` hold every file of `tree` with its bytes (each object in the store)? */
function safetyHolds(s: ObjectStore, digest: Digest, tree: Map<string, string>): boolean {
  const entries = new Map(s.getDocument<Snapshot>(digest, 'Snapshot').entries.map((e) => [e.path, e]));
  for (const [p, v] of tree) {
    const e = entries.get(p);
    if (!e) return false;
    if (!v.startsWith('file ')) continue;
    if (e.kind !== 'file' || !s.has(e.digest) || s.getBytes(e.digest).toString('utf8') !== v.slice(5)) return false;
  }
  return true;
}

/** Run `kills` rounds (apply, restore and discard at random), under `dir`. */
export async function runSwapCampaign(
  dir: string,
  kills: number,
  seed: number,
  log: (line: string) => void = () => {},
  ops: readonly Op[] = OPS,
): Promise<SwapCampaignResult> {
  const random = createRandom(seed);
  const r: SwapCampaignResult = {
    rounds: 0,
    killed: { apply: 0, restore: 0, discard: 0 },
    finished: { apply: 0, restore: 0, discard: 0 },
    lost: 0,
    wrong: 0,
    outside: 0,
    findings: [],
  };
  const src = join(dir, 'src');
  const d: TreeSpec = {};
  for (let i = 0; i < N; i++) d[`f${i}.txt`] = `d ${i}\n`;
  writeTree(src, { 'a.txt': 'alpha\n', d });
  const outside = join(dir, 'OUTSIDE');
  mkdirSync(outside);
  for (let i = 0; i < N; i++) writeFileSync(join(outside, `f${i}.txt`), `outside ${i}\n`);
  let outsideSeen = signature(outside);
  const store = join(dir, 'store');
  const svc = await SessionService.open(store, { create: true });
  const s = await svc.create('s', { from: src });
  for (let i = 0; i < N; i++) writeFileSync(join(s.root, 'd', `f${i}.txt`), `session ${i}\n`);
  for (let i = 0; i < N; i++) writeFileSync(join(s.root, 'd', `n${i}.txt`), `new ${i}\n`);
  await svc.checkpoint('s');
  // The restore session: its source holds dl, a link to OUTSIDE, beside d (the swap loop's pair).
  const rsrc = join(dir, 'rsrc');
  execFileSync('cp', ['-a', src, rsrc]);
  symlinkSync(outside, join(rsrc, 'dl'));
  const rs = await svc.create('r', { from: rsrc });
  restoreTrees(rs.root, 'A');
  await svc.checkpoint('r', { label: 'A' });
  const treeA = treeOf(rs.root);
  restoreTrees(rs.root, 'B');
  await svc.checkpoint('r', { label: 'B' });
  const restore: Round['restore'] = { at: 2, trees: { 1: treeA, 2: treeOf(rs.root) } };
  // The kill window: about an uncrashed run's time. A run the swap made fail early does not shrink
  // it (only exit 0 counts), or later kills would all land before the operation starts.
  const took = { apply: 1500, restore: 2000, discard: 800 };
  const finding = (kind: 'lost' | 'wrong' | 'outside', line: string) => {
    r[kind]++;
    r.findings.push(`${kind}: ${line}`);
  };
  const c: Round = { dir, src, store, svc, outside, took, r, finding, restore };
  const rounds = { apply: applyRound, restore: restoreRound, discard: discardRound };
  for (let round = 0; round < kills; round++) {
    // Each operation once first, so that a few rounds (the test's) cover all three.
    const op = ops[round < ops.length ? round : random.int(ops.length)]!;
    const delay = Math.floor(random.next() * took[op] * 1.2);
    const label = `round ${round} (${op}, kill at ${delay} ms)`;
    await rounds[op](c, round, delay, label);
    // Counted once per change: the next round compares with what this one left.
    const now = signature(outside);
    if (now !== outsideSeen) finding('outside', `${label}: the outside directory changed (${readdirSync(outside).join(', ')})`);
    outsideSeen = now;
    r.rounds++;
    log(
      `${label}: lost ${r.lost}, wrong ${r.wrong}, outside ${r.outside}${op === 'restore' ? ` (root at checkpoint ${c.restore.at})` : ''}`,
    );
  }
  return r;
}

if (isMainModule(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      kills: { type: 'string', default: '100' },
      seed: { type: 'string', default: '41' },
      keep: { type: 'boolean' },
      // --ops restore,discard: only these operations (default all three).
      ops: { type: 'string', default: OPS.join(',') },
    },
  });
  const ops = values.ops.split(',').map((o) => {
    if (!(OPS as readonly string[]).includes(o)) throw new Error(`--ops: ${o} is none of ${OPS.join(', ')}`);
    return o as Op;
  });
  const t = tempDir('pdb-swap-campaign-');
  const t0 = Date.now();
  const r = await runSwapCampaign(t.dir, Number(values.kills), Number(values.seed), (l) => console.log(l), ops);
  console.log(JSON.stringify({ ...r, seconds: Math.round((Date.now() - t0) / 1000) }, null, 1));
  if (!values.keep) t.cleanup();
  process.exitCode = r.lost + r.wrong + r.outside === 0 ? 0 : 1;
}
