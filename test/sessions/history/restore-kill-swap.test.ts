// restore killed (SIGKILL) at random moments while a parent directory it writes in (ROOT/d) is
// swapped for a link to an outside directory (ROOT/dl, in both checkpoints) in a loop, and while a
// writer process keeps writing in the session (ROOT/w) (issue 55 item 3). After each kill: the
// writer and the loop stopped, gc; then nothing outside changed (every name and byte of OUTSIDE
// hashed before and after), and the root is exactly the target or exactly the safety checkpoint
// (or, killed before the safety checkpoint, exactly the tree before), but for the writer's own
// paths, each of which holds a value the writer wrote, the target's or the tree before's. A
// restored root must have its safety checkpoint, holding the tree before (nothing lost).
// PDB_RESTORE_SWAP_KILLS sets how many restores are killed (default 150, issue 55's count): rounds go
// on until that many were (a round whose restore ended first, or refused, counts no kill), at most
// three rounds a kill (about 290 rounds, 4 minutes on 2 cores);
// PDB_KILL_SEED replays a campaign (the seed is printed).
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync, lstatSync, readlinkSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createRandom } from '../../../harness/plan/prng.js';
import { diffEntries, type Entry } from '../../../model/snapshot.js';
import { SessionService } from '../../../sessions/service.js';
import { FAULT_CLI, pdb } from '../../helpers/faults/fault-helpers.js';
import { runKilled } from '../../helpers/faults/kill-campaign.js';
import { hasCommand, skipPart, tempDir, writeTree, type TreeSpec } from '../../helpers/index.js';
import { startSwapLoop, swapLoopMissing } from '../../helpers/swap-loop.js';

const KILLS = Number(process.env.PDB_RESTORE_SWAP_KILLS ?? 150);
const SEED = Number(process.env.PDB_KILL_SEED ?? Math.floor(Math.random() * 2 ** 32));
const N = 40;
/** Where strace is installed, half the rounds kill at an exact syscall of the restore's steps (strace -e inject). */
const STRACE = hasCommand('strace') && process.platform === 'linux';
const t = tempDir('pdb-restore-kill-swap-');
test.after(() => t.cleanup());

/** Every name below `dir` (no link followed), its kind and bytes or link target, hashed. */
function signature(dir: string): string {
  const h = createHash('sha256');
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })
    .map((e) => join(e.parentPath, e.name))
    .sort()) {
    const st = lstatSync(e);
    h.update(`${e.slice(dir.length)}\0${st.mode}\0`);
    if (st.isFile()) h.update(readFileSync(e));
    else if (st.isSymbolicLink()) h.update(readlinkSync(e));
    h.update('\0');
  }
  return h.digest('hex');
}

/** A checkpoint's tree of d/: A and B differ in every file, and each has files of its own. */
function trees(root: string, which: 'A' | 'B'): void {
  rmSync(join(root, 'd'), { recursive: true, force: true });
  const d: TreeSpec = {};
  for (let i = 0; i < N; i++) d[`f${i}.txt`] = `${which} ${i}\n`;
  for (let i = 0; i < N / 2; i++) d[`${which.toLowerCase()}${i}.txt`] = `only ${which} ${i}\n`;
  d.sub = { 'x.txt': `${which} x\n` };
  writeTree(join(root, 'd'), d);
  writeFileSync(join(root, 'w', 'log.txt'), `checkpoint ${which}\n`);
}

/**
 * A writer in the session: rewrites w/log.txt and makes w/n<k>.txt every `pauseMs` until killed,
 * from the moment `trigger` exists (the restore's staging: past its safety checkpoint) or at once.
 */
function startWriter(root: string, trigger: string | null, pauseMs: number): ChildProcess {
  const script = `const fs = require('node:fs'); const p = require('node:path');
const w = ${JSON.stringify(join(root, 'w'))}; const trigger = ${JSON.stringify(trigger)};
const nap = new Int32Array(new SharedArrayBuffer(4));
while (trigger && !fs.existsSync(trigger)) Atomics.wait(nap, 0, 0, 1);
for (let k = 0; ; k++) {
  try { fs.writeFileSync(p.join(w, 'log.txt'), 'writer ' + k + '\\n'); fs.writeFileSync(p.join(w, 'n' + k + '.txt'), 'n ' + k + '\\n'); } catch {}
  Atomics.wait(nap, 0, 0, ${pauseMs});
}`;
  return spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
}

/** A moment of the restore: the `when`-th call of `call` by one of its threads (strace counts per thread). */
interface Moment {
  call: string;
  when: number;
}

/** The moments of an uncrashed restore's trace from its first touch of ROOT/.pdb (its steps) to its end. */
function momentsOf(trace: string): Moment[] {
  const lines = trace.split('\n').filter((l) => /^\d+ +\w+\(/.test(l));
  const first = lines.findIndex((l) => l.includes('.pdb'));
  assert.ok(first >= 0, 'the restore never touched ROOT/.pdb');
  const seen = new Map<string, number>();
  const out: Moment[] = [];
  lines.forEach((l, i) => {
    const [, tid, call] = /^(\d+) +(\w+)\(/.exec(l)!;
    const when = (seen.get(`${tid} ${call}`) ?? 0) + 1;
    seen.set(`${tid} ${call}`, when);
    if (i >= first) out.push({ call: call!, when });
  });
  return out;
}

/** `restore s --to N` under strace: traced into `log` (m null), or killed (SIGKILL) at `m`. */
function stracedRestore(store: string, to: number, log: string, m: Moment | null) {
  const calls = m ? m.call : '%file,write,pwrite64,fsync,fdatasync,close,getdents64';
  const inject = m ? ['-e', `inject=${m.call}:signal=KILL:when=${m.when}`] : [];
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', PDB_ENV_STORE: store };
  delete env.PDB_ENV_CRASH_AT;
  const t0 = Date.now();
  return new Promise<{ killed: boolean; code: number; stdout: string; stderr: string; ms: number }>((resolve) => {
    const child = spawn(
      'strace',
      [
        '-f',
        '-qq',
        '-o',
        log,
        '-e',
        `trace=${calls}`,
        ...inject,
        process.execPath,
        FAULT_CLI,
        'restore',
        's',
        '--to',
        String(to),
        '--json',
      ],
      { env },
    );
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    child.on('close', (code) => {
      const trace = existsSync(log) ? readFileSync(log, 'utf8') : '';
      resolve({ killed: /\+\+\+ killed by SIGKILL/.test(trace), code: code ?? 128, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** Is `e` (a path the writer may have written) one of its values? */
const writers = (e: Entry) => e.kind === 'file' && (/^w\/log\.txt$/.test(e.path) || /^w\/n\d+\.txt$/.test(e.path));

/** The differences of `now` from `want`, but for the writer's paths holding one of the writer's values (or want's). */
function differs(want: Entry[], now: Entry[]): string[] {
  return diffEntries(want, now)
    .filter((c) => !(c.path.startsWith('w/') && (!c.after || writers(c.after))))
    .map((c) => `${c.kind} ${c.path}`);
}

// long because it is one campaign read top to bottom: the fixture, the kill window, then each round's kill and checks.
test(`restore killed at random moments with ROOT/d swapped for a link to outside and a writer in the session: nothing outside, the root the target or the safety checkpoint (seed ${SEED})`, async () => {
  const missing = swapLoopMissing();
  if (missing) return skipPart('restore kills under a swap loop', 'native-scan', missing);
  console.log(`  seed ${SEED} (PDB_KILL_SEED=${SEED} replays it), rounds until ${KILLS} restores are killed`);
  const random = createRandom(SEED);
  const t0 = Date.now();
  const outside = join(t.dir, 'OUTSIDE');
  const o: TreeSpec = {};
  for (let i = 0; i < N; i++) o[`f${i}.txt`] = `outside ${i}\n`;
  o.sub = { 'x.txt': 'outside x\n' };
  writeTree(outside, o);
  const outsideBefore = signature(outside);
  const src = join(t.dir, 'src');
  writeTree(src, { 'a.txt': 'alpha\n', d: { 'f0.txt': 'src\n' }, w: { 'log.txt': 'src\n' } });
  symlinkSync(outside, join(src, 'dl'));
  const store = join(t.dir, 'store');
  const svc = await SessionService.open(store, { create: true });
  const root = (await svc.create('s', { from: src })).root;
  trees(root, 'A');
  const a = await svc.checkpoint('s', { label: 'A' });
  trees(root, 'B');
  const b = await svc.checkpoint('s', { label: 'B' });
  const snap = { 1: svc.readSnapshot(a.snapshot).entries, 2: svc.readSnapshot(b.snapshot).entries } as Record<number, Entry[]>;
  // The kill window: an uncrashed restore's time (there and back, without the loop or the writer).
  let took = 0;
  for (const to of [1, 2]) {
    const t1 = Date.now();
    const r = pdb(store, ['restore', 's', '--to', String(to)]);
    assert.is(r.code, 0, r.stdout + r.stderr);
    took = Math.max(took, Date.now() - t1);
  }
  // The exact moments of the steps: an uncrashed restore traced (there and back again).
  let moments: Moment[] = [];
  if (STRACE) {
    const log = join(t.dir, 'restore.trace');
    const r = await stracedRestore(store, 1, log, null);
    assert.is(r.code, 0, r.stdout + r.stderr);
    moments = momentsOf(readFileSync(log, 'utf8'));
    assert.is(pdb(store, ['restore', 's', '--to', '2']).code, 0);
    console.log(`  ${moments.length} moments of the steps traced: half the rounds kill at one of them`);
  }
  let at = 2;
  const counts = { killed: 0, finished: 0, failed: 0, before: 0, restored: 0 };
  const alive = setInterval(() => {}, 1000);
  try {
    for (let round = 0; counts.killed < KILLS && round < 3 * KILLS; round++) {
      // Uncheckpointed work first: the tree before differs from both checkpoints.
      writeFileSync(join(root, 'd', 'f0.txt'), `work of round ${round}\n`);
      writeFileSync(join(root, 'd', `u${round}.txt`), `u ${round}\n`);
      rmSync(join(root, 'd', 'f1.txt'), { force: true });
      const before = await svc.scanEntries('s');
      const logBefore = (await svc.log('s')).checkpoints.length;
      const to = at === 1 ? 2 : 1;
      const delay = Math.round((random.next() < 0.5 ? random.next() * 1.1 : 0.4 + random.next() * 0.7) * took);
      const m = moments.length && random.next() < 0.5 ? moments[random.int(moments.length)]! : null;
      const where = `round ${round} (restore --to ${to}, kill at ${m ? `${m.call} #${m.when} of the steps` : `${delay} ms`})`;
      // The writer starts with the restore's steps (its staging appears) two rounds of three, with it otherwise.
      const writer = startWriter(root, round % 3 === 2 ? null : join(root, '.pdb'), 1 + random.int(20));
      const loop = startSwapLoop(root, 'd', 'dl', join(root, '.pdb'));
      const run = m
        ? await stracedRestore(store, to, join(t.dir, 'kill.trace'), m)
        : await runKilled(store, ['restore', 's', '--to', String(to), '--json'], delay);
      await stop(writer);
      await loop.stop();
      // Only a run that ended well moves the window (a refusal ends early: the window would shrink to before the steps).
      if (!m && !run.killed && run.code === 0) took = Math.max(Math.round(took * 0.8), run.ms);
      let refused = '';
      if (run.killed) counts.killed++;
      else if (run.code === 0) counts.finished++;
      else {
        // The swap or the writer made it refuse: typed, never a crash.
        counts.failed++;
        const code = JSON.parse(run.stdout).error.code as string;
        assert.match(code, /^(E_BAD_PATH|E_IO|E_CROSS_DEVICE|E_SOURCE_CHANGED)$/, `${where}: ${run.stdout}${run.stderr}`);
        refused = ` (refused: ${code})`;
      }
      assert.is(signature(outside), outsideBefore, `${where}: the outside directory changed`);
      const gc = pdb(store, ['gc', '--json']);
      assert.is(gc.code, 0, `${where}: gc: ${gc.stdout}${gc.stderr}`);
      assert.is(signature(outside), outsideBefore, `${where}: gc changed the outside directory`);
      assert.equal(await svc.journal.list(), [], `${where}: an intent left after gc`);
      const now = await svc.scanEntries('s');
      const made = (await svc.log('s')).checkpoints.slice(logBefore);
      const safety = made.find((c) => c.label === `before restore to ${to}`);
      const asTarget = differs(snap[to]!, now);
      if (asTarget.length === 0) {
        assert.ok(safety, `${where}: restored without a safety checkpoint`);
        assert.equal(
          differs(before, svc.readSnapshot(safety!.snapshot).entries),
          [],
          `${where}: the safety checkpoint is not the tree before`,
        );
        at = to;
        counts.restored++;
        console.log(`  ${where}: ${run.killed ? 'killed' : 'ran to its end'}${refused}, restored after gc`);
      } else {
        const asBefore = safety ? differs(svc.readSnapshot(safety.snapshot).entries, now) : differs(before, now);
        assert.equal(
          asBefore,
          [],
          `${where}: the root is neither the target (${asTarget.slice(0, 5).join(', ')}) nor the ${safety ? 'safety checkpoint' : 'tree before'}`,
        );
        if (safety) assert.equal(differs(before, svc.readSnapshot(safety.snapshot).entries), [], `${where}: the safety checkpoint`);
        counts.before++;
        console.log(
          `  ${where}: ${run.killed ? 'killed' : 'ran to its end'}${refused}, ${safety ? 'the safety checkpoint' : 'as before'} after gc`,
        );
      }
      assert.not.ok(readdirSync(root).includes('.pdb'), `${where}: the restore's staging was left`);
      assert.ok(lstatSync(join(root, 'dl')).isSymbolicLink() && lstatSync(join(root, 'd')).isDirectory(), `${where}: d and dl swapped`);
    }
  } finally {
    clearInterval(alive);
  }
  const rounds = counts.killed + counts.finished + counts.failed; // each round ends one of the three ways
  console.log(
    `restore kills under a swap loop with a writer: ${counts.killed} killed, ${counts.finished} finished, ${counts.failed} refused of ${rounds} rounds; ` +
      `${counts.restored} restored, ${counts.before} as before; nothing outside, seed ${SEED} (${Math.round((Date.now() - t0) / 1000)} s)`,
  );
  assert.ok(
    counts.killed >= KILLS,
    `${counts.killed} of ${rounds} rounds killed their restore, not ${KILLS}: the delays are too long to test anything`,
  );
});

test.run();
