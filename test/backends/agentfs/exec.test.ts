// The bounds the AgentFS adapter puts around every call, on real processes and (as root) real
// bind mounts: a deadline that kills the whole process group, no wait on a daemon holding our
// pipes, processes found by the unique path they were given, and unmounts that fall back to lazy.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  describeEnd,
  endProcessesMentioning,
  outputLine,
  processesMentioning,
  runBounded,
  unmountAt,
} from '../../../backends/agentfs/exec.js';
import { mountAt } from '../../../model/os/mounts.js';
import { readProcStat } from '../../../model/os/proc.js';
import { isRoot, skipTest, tempDir } from '../../helpers/index.js';

const t = tempDir('pdb-agentfs-exec-');
test.after(() => t.cleanup());

function alive(pid: number): boolean {
  const stat = readProcStat(pid);
  return stat !== null && stat.state !== 'Z';
}

test('a deadline kills the whole process group, children included', async () => {
  const pidFile = join(t.dir, 'child.pid');
  const started = performance.now();
  const r = await runBounded(['sh', '-c', `sleep 300 & echo $! > ${pidFile}; sleep 300`], { timeoutMs: 500 });
  assert.ok(performance.now() - started < 3_000);
  assert.equal([r.timedOut, r.exitCode, r.signal], [true, null, 'SIGKILL']);
  assert.match(describeEnd('sleeper', r, 500), /sleeper did not finish within 500 ms \(its process group was killed\)/);
  const child = Number(readFileSync(pidFile, 'utf8'));
  assert.not.ok(alive(child), 'the background child was in the group and was killed with it');
});

test('a daemon that keeps our pipes open does not hold the call; it is found by its marker and ended', async () => {
  const marker = join(t.dir, `marker-${process.pid}`);
  const started = performance.now();
  // Like AgentFS's mount, the parent returns once its daemon is up (here: has written its ready file).
  const daemon = `setsid ${process.execPath} -e "require('fs').writeFileSync(process.argv[1] + '.ready', ''); setInterval(() => {}, 1000)" ${marker}`;
  const r = await runBounded(['sh', '-c', `${daemon} & while [ ! -e ${marker}.ready ]; do sleep 0.05; done; echo started`], {
    timeoutMs: 10_000,
  });
  assert.ok(performance.now() - started < 5_000, 'returned on exit, not on pipe close');
  assert.equal([r.timedOut, r.exitCode, r.stdout.trim()], [false, 0, 'started']);
  // setsid: the daemon left the group, so only its marker finds it.
  let found: number[] = [];
  for (let i = 0; i < 40 && found.length === 0; i++) {
    await new Promise((res) => setTimeout(res, 50));
    found = processesMentioning(marker);
  }
  assert.is(found.length, 1);
  assert.equal(await endProcessesMentioning(marker, 200), []);
  assert.not.ok(alive(found[0]!));
});

test('a program that cannot start, and one that prints garbage, are reported in printable words', async () => {
  const missing = await runBounded([join(t.dir, 'no-such-program')], { timeoutMs: 1_000 });
  assert.is(missing.spawnError, 'ENOENT');
  assert.match(describeEnd('agentfs init', missing, 1_000), /agentfs init could not start \(ENOENT\)/);
  const noisy = await runBounded(
    [process.execPath, '-e', 'process.stderr.write(Buffer.from([0, 1, 255, 10, 104, 105])); process.exit(3)'],
    {
      timeoutMs: 5_000,
    },
  );
  assert.is(noisy.exitCode, 3);
  assert.is(outputLine(noisy), '??? | hi');
});

test('a process that ends within the grace period is not killed', async () => {
  const marker = join(t.dir, `grace-${process.pid}`);
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 300)', marker], { stdio: 'ignore' });
  const exited = new Promise((res) => child.on('exit', (code, signal) => res([code, signal])));
  assert.equal(await endProcessesMentioning(marker, 5_000), []);
  assert.equal(await exited, [0, null]);
});

test('unmount: a plain unmount, a busy mount that only a lazy one detaches, and nothing mounted', async () => {
  if (!isRoot()) return skipTest('bind-mount unmount', 'bind-mount', 'bind mounts need root');
  const src = join(t.dir, 'src');
  const mnt = join(t.dir, 'mnt');
  mkdirSync(src);
  mkdirSync(mnt);
  assert.equal(await unmountAt(mnt, { lazy: false, timeoutMs: 5_000 }), { ok: true, detail: 'nothing mounted' });
  const bind = () => runBounded(['mount', '--bind', src, mnt], { timeoutMs: 5_000 });
  assert.is((await bind()).exitCode, 0);
  const plain = await unmountAt(mnt, { lazy: false, timeoutMs: 5_000 });
  assert.equal([plain.ok, mountAt(mnt)], [true, null]);

  assert.is((await bind()).exitCode, 0);
  const holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { cwd: mnt, stdio: 'ignore' });
  try {
    const busy = await unmountAt(mnt, { lazy: false, timeoutMs: 5_000 });
    assert.is(busy.ok, false);
    assert.match(busy.detail, /busy/);
    const lazy = await unmountAt(mnt, { lazy: true, timeoutMs: 5_000 });
    assert.equal([lazy.ok, mountAt(mnt)], [true, null]);
  } finally {
    holder.kill('SIGKILL');
    if (mountAt(mnt)) await unmountAt(mnt, { lazy: true, timeoutMs: 5_000 });
  }
});

test.run();
