// The swap campaign of issue 41: apply and discard killed (SIGKILL) at random moments while a
// child process swaps a directory they write in with a link to an outside directory
// (renameat2 RENAME_EXCHANGE in a loop), then gc with the loop stopped, and three counts that
// must stay 0: lost (a base file of DIR whose bytes are neither at its path nor in DIR/.pdb/kept,
// or a session's file gone while the session is not), wrong (a path holding bytes that are
// neither the base's nor the session's, or outside bytes inside DIR), outside (anything of the
// outside directory changed, or made there). apply-swap-campaign.test.ts runs a few rounds; the
// full campaign runs by hand (docs/development.md, the fault suite):
//   node dist/test/sessions/way-back/apply/swap-campaign.js --kills 100 --seed 41
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createRandom } from '../../../../harness/plan/prng.js';
import { SessionService } from '../../../../sessions/service.js';
import { isMainModule } from '../../../../scripts/lib.js';
import { writeTree, tempDir, type TreeSpec } from '../../../helpers/index.js';
import { pdb } from '../../../helpers/faults/fault-helpers.js';
import { runKilled } from '../../../helpers/faults/kill-campaign.js';
import { startSwapLoop } from '../../../helpers/swap-loop.js';

const N = 60;

export interface SwapCampaignResult {
  rounds: number;
  killed: { apply: number; discard: number };
  finished: { apply: number; discard: number };
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

interface Round {
  dir: string;
  src: string;
  store: string;
  svc: SessionService;
  outside: string;
  took: { apply: number; discard: number };
  r: SwapCampaignResult;
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
  if (!run.killed) c.took.apply = Math.max(c.took.apply * 0.8, run.ms);
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
  if (!run.killed) c.took.discard = Math.max(c.took.discard * 0.8, run.ms);
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

/** Run `kills` rounds (apply and discard alternating at random), under `dir`. */
export async function runSwapCampaign(
  dir: string,
  kills: number,
  seed: number,
  log: (line: string) => void = () => {},
): Promise<SwapCampaignResult> {
  const random = createRandom(seed);
  const r: SwapCampaignResult = {
    rounds: 0,
    killed: { apply: 0, discard: 0 },
    finished: { apply: 0, discard: 0 },
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
  const took = { apply: 1500, discard: 800 };
  const finding = (kind: 'lost' | 'wrong' | 'outside', line: string) => {
    r[kind]++;
    r.findings.push(`${kind}: ${line}`);
  };
  const c: Round = { dir, src, store, svc, outside, took, r, finding };
  for (let round = 0; round < kills; round++) {
    const op = random.int(2) === 0 ? 'apply' : 'discard';
    const delay = Math.floor(random.next() * took[op] * 1.2);
    const label = `round ${round} (${op}, kill at ${delay} ms)`;
    await (op === 'apply' ? applyRound : discardRound)(c, round, delay, label);
    // Counted once per change: the next round compares with what this one left.
    const now = signature(outside);
    if (now !== outsideSeen) finding('outside', `${label}: the outside directory changed (${readdirSync(outside).join(', ')})`);
    outsideSeen = now;
    r.rounds++;
    log(`${label}: lost ${r.lost}, wrong ${r.wrong}, outside ${r.outside}`);
  }
  return r;
}

if (isMainModule(import.meta.url)) {
  const { values } = parseArgs({
    options: { kills: { type: 'string', default: '100' }, seed: { type: 'string', default: '41' }, keep: { type: 'boolean' } },
  });
  const t = tempDir('pdb-swap-campaign-');
  const t0 = Date.now();
  const r = await runSwapCampaign(t.dir, Number(values.kills), Number(values.seed), (l) => console.log(l));
  console.log(JSON.stringify({ ...r, seconds: Math.round((Date.now() - t0) / 1000) }, null, 1));
  if (!values.keep) t.cleanup();
  process.exitCode = r.lost + r.wrong + r.outside === 0 ? 0 : 1;
}
