// The staging window of apply (issue 55 item 4): `apply` (a real child process) killed with SIGKILL
// at many moments, most of them near its end (after the last link into place, while the phase is
// written, while DIR/.pdb/apply-<id> is removed, while the intent is removed), then the next apply
// (half the time) and gc: no DIR/.pdb is left, the target is exactly the base or exactly the
// session's result, the journal is empty and nothing was quarantined. Where strace is installed
// the kill is exact: `strace -e inject=SYSCALL:signal=KILL:when=N` kills the apply at the N-th
// call of a syscall seen in an uncrashed run's trace; without it, a timer kills it (less precise).
// PDB_KILLS sets the number of kills (default 300); PDB_KILL_SEED replays a campaign (the seed is printed).
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createRandom, type Random } from '../../../../harness/plan/prng.js';
import { isPdbError } from '../../../../model/errors.js';
import type { Entry } from '../../../../model/snapshot.js';
import { hasCommand, tempDir, writeTree } from '../../../helpers/index.js';
import { FAULT_CLI } from '../../../helpers/faults/fault-helpers.js';
import { applyCase, changedSession, targetState, type ApplyCase } from '../../../helpers/apply-fixture.js';

const KILLS = Number(process.env.PDB_KILLS ?? 300);
const SEED = Number(process.env.PDB_KILL_SEED ?? Math.floor(Math.random() * 2 ** 32));
const STRACE = hasCommand('strace') && process.platform === 'linux';
const t = tempDir('pdb-apply-staging-kills-');
test.after(() => t.cleanup());

/** The syscalls a kill may land on: every call that names a file, writes, syncs or closes. */
const CALLS = ['%file', 'write', 'pwrite64', 'fsync', 'fdatasync', 'close', 'getdents64'];

/** A moment of the apply: the `when`-th call of `call` by one of its threads. */
interface Moment {
  call: string;
  when: number;
  /** In the last part of the run (from the last link into place on). */
  late: boolean;
}

interface Run {
  killed: boolean;
  code: number | null;
  out: string;
}

function cliEnv(store: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', PDB_ENV_STORE: store };
  delete env.PDB_ENV_CRASH_AT;
  return env;
}

/** Run `apply s --to target` under strace, killed at `m` (null: traced only, into `log`). */
function stracedApply(c: ApplyCase, target: string, log: string, m: Moment | null): Run {
  const inject = m ? ['-e', `inject=${m.call}:signal=KILL:when=${m.when}`] : [];
  const r = spawnSync(
    'strace',
    [
      '-f',
      '-qq',
      '-o',
      log,
      '-e',
      `trace=${m ? m.call : CALLS.join(',')}`,
      ...inject,
      process.execPath,
      FAULT_CLI,
      'apply',
      's',
      '--to',
      target,
    ],
    { env: cliEnv(c.store), encoding: 'utf8' },
  );
  const trace = readFileSync(log, 'utf8');
  return { killed: /\+\+\+ killed by SIGKILL/.test(trace), code: r.status, out: r.stdout + r.stderr };
}

/** Run `apply s --to target` and kill it after `ms`, unless it ended first. */
function timedApply(c: ApplyCase, target: string, ms: number): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [FAULT_CLI, 'apply', 's', '--to', target], { env: cliEnv(c.store) });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ killed: signal === 'SIGKILL', code, out });
    });
  });
}

/**
 * The moments of an uncrashed apply's trace from its first touch of DIR/.pdb to its end, each as
 * the N-th call of a syscall by the thread that made it (strace counts per thread).
 */
function momentsOf(trace: string): Moment[] {
  const lines = trace.split('\n').filter((l) => /^\d+ +\w+\(/.test(l));
  const first = lines.findIndex((l) => l.includes('.pdb'));
  assert.ok(first >= 0, `the apply never touched DIR/.pdb: ${lines.slice(-20).join('\n')}`);
  let lastLink = -1;
  lines.forEach((l, i) => {
    if (/^\d+ +(linkat|renameat2)\(/.test(l)) lastLink = i;
  });
  const seen = new Map<string, number>();
  const out: Moment[] = [];
  lines.forEach((l, i) => {
    const [, tid, call] = /^(\d+) +(\w+)\(/.exec(l)!;
    const key = `${tid} ${call}`;
    const when = (seen.get(key) ?? 0) + 1;
    seen.set(key, when);
    if (i >= first) out.push({ call: call!, when, late: i >= lastLink });
  });
  return out;
}

/** Three quarters of the kills in the last part of the run, a quarter anywhere from the staging on. */
function pick(random: Random, moments: Moment[]): Moment {
  const late = moments.filter((m) => m.late);
  const from = random.next() < 0.75 && late.length ? late : moments;
  return from[random.int(from.length)]!;
}

const SMALL = {
  'a.txt': 'alpha\n',
  'b.txt': 'beta\n',
  lib: { 'x.js': 'x\n', sub: { 'y.js': 'y\n' } },
  d: { 'c.txt': 'c\n' },
};

// long because it is one campaign read top to bottom: the fixture, the traced reference, then each kill and its checks.
test(`${KILLS} SIGKILLs of apply, most near its end, leave no DIR/.pdb after the next apply and gc, the target exactly before or after (seed ${SEED})`, async () => {
  const t0 = Date.now();
  const random = createRandom(SEED);
  const c = await applyCase(t.dir, 'kills', SMALL);
  const cp = await changedSession(c, 's', (root) => {
    writeTree(root, { 'a.txt': 'changed\n', n: { 'new.txt': 'new\n', 'two.txt': 'two\n' }, 'link.txt': { link: 'a.txt' } });
    rmSync(join(root, 'lib/x.js'));
    rmSync(join(root, 'd'), { recursive: true });
  });
  const result: Entry[] = c.svc.readSnapshot(cp.snapshot).entries;
  const targets = join(c.dir, 'targets');
  const fresh = (label: string) => {
    const to = join(targets, label);
    cpSync(c.src, to, { recursive: true, verbatimSymlinks: true });
    return to;
  };
  // The reference: an uncrashed run (traced), its moments and its duration.
  let moments: Moment[] = [];
  let took = 0;
  {
    const ref = fresh('reference');
    const s0 = Date.now();
    if (STRACE) {
      const r = stracedApply(c, ref, join(c.dir, 'reference.trace'), null);
      assert.is(r.code, 0, r.out);
      moments = momentsOf(readFileSync(join(c.dir, 'reference.trace'), 'utf8'));
    } else {
      const r = await timedApply(c, ref, 60_000);
      assert.is(r.code, 0, r.out);
    }
    took = Date.now() - s0;
    assert.is(await targetState(ref, c.base, result), 'applied');
    assert.not.ok(existsSync(join(ref, '.pdb')));
  }
  console.log(
    `  seed ${SEED} (PDB_KILL_SEED=${SEED} replays it); ${STRACE ? `${moments.length} moments traced (${moments.filter((m) => m.late).length} late)` : 'no strace: timer kills'}; uncrashed ${took} ms`,
  );
  const counts = { killed: 0, finished: 0, applied: 0, untouched: 0, retried: 0 };
  for (let i = 0; i < KILLS; i++) {
    const target = fresh(String(i));
    let where: string;
    let r: Run;
    if (STRACE) {
      const m = pick(random, moments);
      where = `kill #${i} at ${m.call} #${m.when}${m.late ? ' (late)' : ''}`;
      r = stracedApply(c, target, join(c.dir, 'kill.trace'), m);
    } else {
      const ms = Math.round((random.next() < 0.75 ? 0.7 + random.next() * 0.4 : random.next()) * took);
      where = `kill #${i} after ${ms} ms`;
      r = await timedApply(c, target, ms);
    }
    if (r.killed) counts.killed++;
    else {
      counts.finished++;
      assert.is(r.code, 0, `${where}: the apply was not killed and failed: ${r.out}`);
    }
    // Half the time the user applies again before any gc: refused while the killed one is unfinished, never harmful.
    if (r.killed && random.next() < 0.5) {
      counts.retried++;
      try {
        await c.svc.apply('s', { to: target });
      } catch (err) {
        assert.ok(isPdbError(err, 'E_APPLY_CONFLICT'), `${where}: the next apply: ${(err as Error).message}`);
      }
    }
    const gc = await c.svc.gc();
    assert.equal(gc.failed, [], `${where}: gc failed: ${JSON.stringify(gc.failed)}`);
    assert.not.match(gc.actions.join('\n'), /quarantine/, `${where}: gc quarantined the apply's intent: ${gc.actions.join('; ')}`);
    const left = existsSync(join(target, '.pdb')) ? readdirSync(join(target, '.pdb'), { recursive: true }) : [];
    assert.not.ok(existsSync(join(target, '.pdb')), `${where}: DIR/.pdb left after gc: ${left.join(', ')}; gc: ${gc.actions.join('; ')}`);
    assert.equal(readdirSync(join(c.store, 'journal')), [], `${where}: an intent left in the journal`);
    const state = await targetState(target, c.base, result);
    assert.ok(state === 'untouched' || state === 'applied', `${where}: the target is ${state}`);
    counts[state as 'untouched' | 'applied']++;
    rmSync(target, { recursive: true });
  }
  assert.not.ok(existsSync(join(c.store, 'quarantine', 'journal')) && readdirSync(join(c.store, 'quarantine', 'journal')).length > 0);
  console.log(
    `  staging kills: ${counts.killed} killed, ${counts.finished} ran to their end, of ${KILLS}; ${counts.retried} applied again before gc; then ${counts.applied} applied, ${counts.untouched} untouched, 0 staging left (seed ${SEED}, ${Math.round((Date.now() - t0) / 1000)} s)`,
  );
  assert.ok(counts.killed >= KILLS / 2, `only ${counts.killed} of ${KILLS} runs were killed`);
});

test.run();
